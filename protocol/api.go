package protocol

// API CONTRACT STUB: the protocol helper replaces these bodies (keep the signatures;
// additions are fine). The broker is written against exactly these.

import (
	"io"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is what the broker answers for one API key.
type VersionRange struct {
	Min int16 // advertised minimum in ApiVersions
	Max int16
	// MinAccepted is the lowest version actually served (Produce: advertised from
	// 0 for librdkafka, served from 3). Zero means Min.
	MinAccepted int16
}

// VersionTable maps API key to its served range; the broker builds it from its
// handler registry, so ApiVersions has one source of truth.
type VersionTable map[int16]VersionRange

// Request is one decoded request.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	HeaderVersion int16
	Body          kmsg.Request // decoded; Body.GetVersion() == Version
}

// ReadFrame reads one size-prefixed frame into buf (grown as needed) and returns it.
// Sizes above max or below zero are errors; nothing larger than the size is allocated.
func ReadFrame(r io.Reader, max int32, buf []byte) ([]byte, error) { panic("stub") }

// ParseRequest decodes a frame (without its size prefix) against the table.
func ParseRequest(frame []byte, table VersionTable) (*Request, error) { panic("stub") }

// AppendResponse appends the whole response frame (size, header, body) to dst.
func AppendResponse(dst []byte, req *Request, resp kmsg.Response) []byte { panic("stub") }

// ApiVersionsResponse builds the answer to req from the table.
func ApiVersionsResponse(req *Request, table VersionTable) kmsg.Response { panic("stub") }

// Chunk is a piece of a response frame: in-memory bytes, or a region of a file
// sent with sendfile (File != nil).
type Chunk struct {
	Bytes []byte
	File  *os.File
	Pos   int64
	Len   int64
}

// AppendFetchResponse lays out a whole Fetch response frame for req as chunks.
// Partition record sets come from records(topicIndex, partitionIndex), not from
// resp's RecordBatches fields.
func AppendFetchResponse(dst []Chunk, req *Request, resp *kmsg.FetchResponse, records func(t, p int) []Chunk) []Chunk {
	panic("stub")
}
