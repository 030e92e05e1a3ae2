package storage

import (
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// The v2 batch layout, its header and its records are recordbatch's; what
// storage adds is the meaning of two header fields in its own types.

// batchHeader is the decoded fixed part of a v2 record batch.
type batchHeader struct{ recordbatch.Header }

// parseBatchHeader decodes b[:recordbatch.HeaderSize]; len(b) must be at
// least that.
func parseBatchHeader(b []byte) batchHeader { return batchHeader{recordbatch.ParseHeader(b)} }

func (h *batchHeader) codec() compress.Codec { return compress.Codec(h.Compression()) }

func (h *batchHeader) timestampType() TimestampType {
	if h.LogAppendTime() {
		return LogAppendTime
	}
	return CreateTime
}
