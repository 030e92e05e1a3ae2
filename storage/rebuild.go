package storage

import (
	"bufio"
	"errors"
	"sync"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// The produce path's exception to writing a batch byte for byte: Kafka's
// LogValidator.buildRecordsAndAssignOffsets, which rebuilds a produced
// batch whose codec is not the topic's compression.type, or whose
// compressed records' offset deltas do not run 0..n-1. The records stream
// from the decompressor through the target codec's compressor into the new
// batch (recordStream.walk, shared with the cleaner), so what a rebuild
// holds is the new batch and the codecs' state, never the decompressed
// records.

// rebuildBatch returns vb with a new batch: h's (the header as produced)
// producer id, epoch, base sequence and transactional bit, codec target
// at level, the topic's timestamp type, base timestamp the first record's,
// max timestamp vb's (the append time for LogAppendTime), and the records
// with their timestamps, keys, values and headers as produced, attributes
// 0 and offset deltas by position, as Kafka's MemoryRecordsBuilder writes
// them. The base offset and leader epoch are set at append time, as for
// any batch.
func rebuildBatch(batch []byte, h *batchHeader, vb validatedBatch, cfg *LogConfig, target compress.Codec, level int) (validatedBatch, error) {
	nh := *h
	nh.Attributes = h.Attributes&recordbatch.AttrTransactional | int16(target)
	if cfg.TimestampType == LogAppendTime {
		nh.Attributes |= recordbatch.AttrTimestampType
	}
	nh.BaseOffset = 0
	nh.LastOffsetDelta = h.RecordCount - 1
	nh.BaseTimestamp = vb.firstTimestamp
	nh.MaxTimestamp = vb.maxTimestamp

	// The new batch is built in a pooled buffer (grown by append as
	// needed), which the append path returns once it wrote the batch
	// (releaseRebuilt).
	out := rebuildBuffer(recordbatch.HeaderSize + len(batch))[:recordbatch.HeaderSize]
	sw := sliceWriter{b: out}
	cw, err := compress.NewLevelWriter(target, level, &sw)
	if err != nil {
		return validatedBatch{}, err
	}
	rb := rebuilders.Get().(*rebuilder)
	defer rebuilders.Put(rb)
	rb.bw.Reset(cw)
	rb.stream.renumber = true
	err = rb.stream.walk(batch, h, cfg.MaxDecompressedBatchBytes, rb.bw, nh.BaseTimestamp,
		func(*cleanRecord) (bool, error) { return true, nil })
	if ferr := rb.bw.Flush(); err == nil {
		err = ferr
	}
	rb.bw.Reset(nil)
	if cerr := cw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		releaseRebuilt(sw.b)
		// The records were walked once by validation, so only the codec or
		// the cap can fail here.
		var dec *errDecompress
		if errors.As(err, &dec) {
			return validatedBatch{}, corruptMessagef("%s batch: %v", h.codec(), dec.err)
		}
		return validatedBatch{}, corruptMessagef("rebuilding the batch as %s: %v", target, err)
	}
	out = sw.b
	if int64(len(out))-recordbatch.LogOverhead > 1<<31-1 {
		releaseRebuilt(out)
		return validatedBatch{}, corruptMessagef("rebuilt batch of %d bytes is over the batch size limit", len(out))
	}
	nh.BatchLength = int32(len(out) - recordbatch.LogOverhead)
	nh.Put(out)
	recordbatch.Batch(out).SetCRC()
	vb.bytes, vb.header, vb.rebuilt = out, parseBatchHeader(out), true
	vb.deltasInOrder = true
	return vb, nil
}

// rebuilder is a rebuild's reusable state: the record stream (its digest
// and head buffer) and the buffer in front of the compressor.
type rebuilder struct {
	stream recordStream
	bw     *bufio.Writer
}

var rebuilders = sync.Pool{New: func() any { return &rebuilder{bw: bufio.NewWriterSize(nil, 32<<10)} }}

// rebuildBuffers pools the buffers rebuilt batches are written into; one
// over maxPooledRebuild is left to the collector.
var rebuildBuffers sync.Pool // *[]byte

const maxPooledRebuild = 4 << 20

// rebuildBuffer returns an empty buffer of at least size bytes' capacity.
func rebuildBuffer(size int) []byte {
	if p, ok := rebuildBuffers.Get().(*[]byte); ok {
		if cap(*p) >= size {
			return (*p)[:0]
		}
		rebuildBuffers.Put(p)
	}
	return make([]byte, 0, size)
}

// releaseRebuilt returns a rebuilt batch's buffer once nothing refers to
// it (the append path, after writing it to the segment).
func releaseRebuilt(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledRebuild {
		return
	}
	b = b[:0]
	rebuildBuffers.Put(&b)
}

// sliceWriter appends what it is given to b.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
