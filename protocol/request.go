package protocol

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id; Kafka treats
	// that as "" (RequestHeader.parse), and so should the broker.
	ClientID      *string
	HeaderVersion int16
	// Body is decoded; Body.GetVersion() == Version, except when
	// UnsupportedVersion is set.
	Body kmsg.Request
	// UnsupportedVersion is set only for an ApiVersions request at a version
	// the table does not serve. As in Kafka (RequestContext.parseRequest) the
	// body is not decoded: Body is an empty v0 ApiVersionsRequest, and
	// ApiVersionsResponse answers UNSUPPORTED_VERSION in the v0
	// format, which AppendResponse encodes at v0 with a v0 header.
	UnsupportedVersion bool
}

// ClientIDString is the client id with null read as "", as Kafka does.
func (r *Request) ClientIDString() string {
	if r.ClientID == nil {
		return ""
	}
	return *r.ClientID
}

// ClientIDCache holds the last client id a connection sent: clients send
// the same one with every request, which then costs no allocation. The
// cached string is shared by the requests that carry it.
type ClientIDCache struct{ last *string }

// ParseRequest decodes a frame (without its size prefix) against the
// table, reusing the client id in cache (nil: none) when the request
// carries the same one.
//
// Errors are *UnknownKeyError, *UnsupportedVersionError or
// *MalformedRequestError; on each, Kafka closes the connection. The body
// shares memory with frame: the caller must not reuse frame while the
// request is alive.
func ParseRequest(frame []byte, table VersionTable, cache *ClientIDCache) (*Request, error) {
	r := kbin.Reader{Src: frame}
	key := r.Int16()
	version := r.Int16()
	correlationID := r.Int32()
	if err := r.Complete(); err != nil {
		return nil, &MalformedRequestError{Key: key, Version: version, CorrelationID: correlationID, Part: "header", Err: err}
	}
	vr, body, ok := decodableRange(table, key)
	if !ok {
		return nil, &UnknownKeyError{Key: key, Version: version, CorrelationID: correlationID}
	}
	req := &Request{Key: key, Version: version, CorrelationID: correlationID, Body: body}
	supported := version >= vr.acceptedMin() && version <= vr.Max
	if !supported && key != apiVersionsKey {
		return nil, &UnsupportedVersionError{Key: key, Version: version, CorrelationID: correlationID, Min: vr.acceptedMin(), Max: vr.Max}
	}

	// The header version follows from whether the body version is flexible
	// (Kafka's requestHeaderVersion), also for an unsupported ApiVersions
	// version, whose header Kafka still parses.
	body.SetVersion(version)
	switch {
	case key == controlledShutdownKey && version == 0:
		req.HeaderVersion = 0 // ControlledShutdown v0 had no client id; gone since Kafka 4.0
	case body.IsFlexible():
		req.HeaderVersion = 2
	default:
		req.HeaderVersion = 1
	}
	if req.HeaderVersion >= 1 {
		req.ClientID = readClientID(&r, cache)
	}
	if req.HeaderVersion >= 2 {
		skipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return nil, &MalformedRequestError{Key: key, Version: version, CorrelationID: correlationID, Part: "header", Err: err}
	}

	if !supported { // ApiVersions only: answered at v0, body ignored
		body.SetVersion(0)
		req.UnsupportedVersion = true
		return req, nil
	}
	if err := decodeBody(body, r.Src); err != nil {
		return nil, &MalformedRequestError{Key: key, Version: version, CorrelationID: correlationID, Part: "body", Err: err}
	}
	return req, nil
}

const (
	apiVersionsKey        int16 = 18
	controlledShutdownKey int16 = 7
	fetchKey              int16 = 1
)

// decodeBody runs kmsg's decoder, turning a panic on hostile input into an
// error: kmsg checks lengths, but a request path must not be able to crash
// the process whatever the decoder does.
func decodeBody(body kmsg.Request, src []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panic: %v", p)
		}
	}()
	return body.ReadFrom(src)
}
