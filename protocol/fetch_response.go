package protocol

import (
	"encoding/binary"
	"os"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Chunk is a piece of a response frame: in-memory bytes, or a region of a file
// sent with sendfile (File != nil).
type Chunk struct {
	Bytes []byte
	File  *os.File
	Pos   int64
	Len   int64
}

// Size is the number of bytes the chunk contributes to the frame.
func (c Chunk) Size() int64 {
	if c.File != nil {
		return c.Len
	}
	return int64(len(c.Bytes))
}

// AppendFetchResponse lays out a whole Fetch response frame for req as chunks.
// Partition record sets come from records(topicIndex, partitionIndex), not from
// resp's RecordBatches fields.
//
// The layout follows kmsg's FetchResponse.AppendTo field for field, for every
// version kmsg encodes (Strait serves 4 and up); a test compares the two byte
// for byte. Differences from resp.AppendTo, both deliberate:
//
//   - records are never null: a partition whose records returns no chunks gets
//     an empty record set (length 0), as Kafka sends MemoryRecords.EMPTY;
//   - the records length is the sum of the chunk sizes.
//
// As in kmsg, the NodeEndpoints tag (resp.Brokers) and the per-partition
// tags are written whenever the version is flexible and the fields are set;
// the caller sets them only for the versions that carry them (NodeEndpoints
// v16+, CurrentLeader v12+). The frame size covers everything after itself.
// In-memory chunks are capped (full slice expressions), so appending to one
// cannot overwrite the next.
func AppendFetchResponse(dst []Chunk, req *Request, resp *kmsg.FetchResponse, records func(t, p int) []Chunk) []Chunk {
	resp.Version = req.Body.GetVersion()
	// Size the fixed fields and the chunk list once: at most a
	// record-set chunk and a bytes chunk after it per partition.
	size, parts := 64, 0
	for i := range resp.Topics {
		size += 48 + len(resp.Topics[i].Topic)
		parts += len(resp.Topics[i].Partitions)
	}
	size += 64 * parts
	if dst == nil {
		dst = make([]Chunk, 0, 2*parts+2)
	}
	w := fetchWriter{dst: dst, first: len(dst), buf: make([]byte, 0, size)}
	version := resp.Version
	flexible := resp.IsFlexible()

	w.buf = append(w.buf, 0, 0, 0, 0) // frame size, filled by finish
	w.buf = kbin.AppendInt32(w.buf, req.CorrelationID)
	if flexible {
		w.buf = append(w.buf, 0) // response header v1: no tagged fields
	}
	if version >= 1 {
		w.buf = kbin.AppendInt32(w.buf, resp.ThrottleMillis)
	}
	if version >= 7 {
		w.buf = kbin.AppendInt16(w.buf, resp.ErrorCode)
		w.buf = kbin.AppendInt32(w.buf, resp.SessionID)
	}
	w.buf = appendArrayLen(w.buf, len(resp.Topics), flexible)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		if version <= 12 {
			w.buf = appendString(w.buf, t.Topic, flexible)
		} else {
			w.buf = append(w.buf, t.TopicID[:]...)
		}
		w.buf = appendArrayLen(w.buf, len(t.Partitions), flexible)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			w.buf = kbin.AppendInt32(w.buf, p.Partition)
			w.buf = kbin.AppendInt16(w.buf, p.ErrorCode)
			w.buf = kbin.AppendInt64(w.buf, p.HighWatermark)
			if version >= 4 {
				w.buf = kbin.AppendInt64(w.buf, p.LastStableOffset)
			}
			if version >= 5 {
				w.buf = kbin.AppendInt64(w.buf, p.LogStartOffset)
			}
			if version >= 4 {
				aborted := p.AbortedTransactions
				w.buf = appendNullableArrayLen(w.buf, len(aborted), aborted == nil, flexible)
				for i := range aborted {
					w.buf = kbin.AppendInt64(w.buf, aborted[i].ProducerID)
					w.buf = kbin.AppendInt64(w.buf, aborted[i].FirstOffset)
					if flexible {
						w.buf = appendTagsWithCount(w.buf, &aborted[i].UnknownTags)
					}
				}
			}
			if version >= 11 {
				w.buf = kbin.AppendInt32(w.buf, p.PreferredReadReplica)
			}
			w.records(records(ti, pi), flexible)
			if flexible {
				w.buf = appendPartitionTags(w.buf, p)
			}
		}
		if flexible {
			w.buf = appendTagsWithCount(w.buf, &t.UnknownTags)
		}
	}
	if flexible {
		w.buf = appendFetchResponseTags(w.buf, resp)
	}
	return w.finish()
}

// fetchWriter accumulates fixed fields in buf and cuts it into a chunk
// whenever a record set is inserted.
type fetchWriter struct {
	dst   []Chunk
	first int // index in dst of this frame's first chunk
	buf   []byte
	mark  int   // start in buf of the bytes not yet cut into a chunk
	total int64 // bytes in chunks cut so far (including the size prefix)
}

func (w *fetchWriter) cut() {
	if len(w.buf) > w.mark {
		w.dst = append(w.dst, Chunk{Bytes: w.buf[w.mark:len(w.buf):len(w.buf)]})
		w.total += int64(len(w.buf) - w.mark)
		w.mark = len(w.buf)
	}
}

// records writes the record-set length (sum of the chunks) and the chunks.
func (w *fetchWriter) records(chunks []Chunk, flexible bool) {
	var n int64
	for _, c := range chunks {
		n += c.Size()
	}
	if flexible {
		w.buf = kbin.AppendUvarint(w.buf, uint32(n)+1)
	} else {
		w.buf = kbin.AppendInt32(w.buf, int32(n))
	}
	if n == 0 {
		return
	}
	w.cut()
	for _, c := range chunks {
		if c.Size() == 0 {
			continue
		}
		w.dst = append(w.dst, c)
		w.total += c.Size()
	}
}

// finish cuts the last chunk and writes the frame size into the first one,
// which always holds at least the size and the correlation id.
func (w *fetchWriter) finish() []Chunk {
	w.cut()
	binary.BigEndian.PutUint32(w.dst[w.first].Bytes, uint32(w.total-4))
	return w.dst
}

// appendTagsWithCount writes a tagged-field section holding only unknown tags
// (kmsg's Tags.appendWithCount).
func appendTagsWithCount(dst []byte, t *kmsg.Tags) []byte {
	dst = kbin.AppendUvarint(dst, uint32(t.Len()))
	return t.AppendEach(dst)
}

// appendPartitionTags writes a partition's tagged fields exactly as kmsg
// does: DivergingEpoch (0), CurrentLeader (1), SnapshotID (2) when not at
// their defaults, then unknown tags; the count covers all of them.
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	d, l, s := &p.DivergingEpoch, &p.CurrentLeader, &p.SnapshotID
	hasD := d.Epoch != -1 || d.EndOffset != -1 || d.UnknownTags.Len() > 0
	hasL := l.LeaderID != -1 || l.LeaderEpoch != -1 || l.UnknownTags.Len() > 0
	hasS := s.EndOffset != -1 || s.Epoch != -1 || s.UnknownTags.Len() > 0
	n := p.UnknownTags.Len()
	for _, has := range []bool{hasD, hasL, hasS} {
		if has {
			n++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(n))
	var field []byte
	if hasD {
		field = kbin.AppendInt32(field[:0], d.Epoch)
		field = kbin.AppendInt64(field, d.EndOffset)
		field = appendTagsWithCount(field, &d.UnknownTags)
		dst = appendTaggedField(dst, 0, field)
	}
	if hasL {
		field = kbin.AppendInt32(field[:0], l.LeaderID)
		field = kbin.AppendInt32(field, l.LeaderEpoch)
		field = appendTagsWithCount(field, &l.UnknownTags)
		dst = appendTaggedField(dst, 1, field)
	}
	if hasS {
		field = kbin.AppendInt64(field[:0], s.EndOffset)
		field = kbin.AppendInt32(field, s.Epoch)
		field = appendTagsWithCount(field, &s.UnknownTags)
		dst = appendTaggedField(dst, 2, field)
	}
	return p.UnknownTags.AppendEach(dst)
}

// appendFetchResponseTags writes the top-level tagged fields: NodeEndpoints
// (tag 0) when there are brokers, then unknown tags.
func appendFetchResponseTags(dst []byte, resp *kmsg.FetchResponse) []byte {
	n := resp.UnknownTags.Len()
	if len(resp.Brokers) > 0 {
		n++
	}
	dst = kbin.AppendUvarint(dst, uint32(n))
	if len(resp.Brokers) > 0 {
		field := kbin.AppendCompactArrayLen(nil, len(resp.Brokers))
		for i := range resp.Brokers {
			b := &resp.Brokers[i]
			field = kbin.AppendInt32(field, b.NodeID)
			field = kbin.AppendCompactString(field, b.Host)
			field = kbin.AppendInt32(field, b.Port)
			field = kbin.AppendCompactNullableString(field, b.Rack)
			field = appendTagsWithCount(field, &b.UnknownTags)
		}
		dst = appendTaggedField(dst, 0, field)
	}
	return resp.UnknownTags.AppendEach(dst)
}

func appendTaggedField(dst []byte, tag uint32, value []byte) []byte {
	dst = kbin.AppendUvarint(dst, tag)
	dst = kbin.AppendUvarint(dst, uint32(len(value)))
	return append(dst, value...)
}
