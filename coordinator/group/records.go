package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/storage/compress"
)

// Record key versions in __consumer_offsets (Kafka's CoordinatorRecordType).
const (
	keyOffsetCommitV0  = 0
	keyOffsetCommit    = 1 // written by Kafka 4 and Strait
	keyGroupMetadata   = 2
	offsetValueVersion = 3 // OffsetCommitValue without an expire timestamp
	offsetValueExpire  = 1 // OffsetCommitValue with an expire timestamp
	groupValueVersion  = 3 // GroupMetadataValue as Kafka 4 writes it
)

// record is one key/value of a batch; a nil value is a tombstone.
type record struct {
	key, value []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch header layout (see storage's package comment).
const (
	batchHeaderLen        = 61
	batchCRCPos           = 17
	batchAttributesPos    = 21
	batchLastOffsetDelta  = 23
	batchProducerIDPos    = 43
	batchRecordCountPos   = 57
	attrCompressionMask   = 0x07
	attrTransactionalFlag = 0x10
	attrControlFlag       = 0x20
)

// buildBatch encodes records as one uncompressed magic-v2 batch with
// CreateTime now, no producer id, and its CRC32C set; the broker assigns the
// base offset and leader epoch on append.
func buildBatch(recs []record, now time.Time) []byte {
	return buildProducerBatch(recs, now, -1, -1)
}

// buildProducerBatch is buildBatch for a transactional producer (producer
// id >= 0): the batch carries its id and epoch, no sequence, and the
// transactional attribute, as Kafka writes TxnOffsetCommit records.
func buildProducerBatch(recs []record, now time.Time, producerID int64, producerEpoch int16) []byte {
	ts := now.UnixMilli()
	var body []byte
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		// Length counts the bytes after itself: encode once with a zero
		// length (one varint byte) to measure.
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		body = rec.AppendTo(body)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(batchHeaderLen - 12 + len(body)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	if producerID >= 0 {
		b.Attributes = attrTransactionalFlag
	}
	out := b.AppendTo(make([]byte, 0, batchHeaderLen+len(body)))
	binary.BigEndian.PutUint32(out[batchCRCPos:], crc32.Checksum(out[batchAttributesPos:], castagnoli))
	return out
}

// batchInfo is what replay needs from a batch header.
type batchInfo struct {
	baseOffset    int64
	producerID    int64
	transactional bool
	control       bool
}

// maxDecompressedBatch bounds a compressed batch's decompressed size on load.
const maxDecompressedBatch = 256 << 20

// readBatch calls fn with the batch's header fields and each of its
// records, decompressing them if needed.
func readBatch(batch []byte, fn func(info batchInfo, key, value []byte) error) error {
	if len(batch) < batchHeaderLen || batch[16] != 2 {
		return errors.New("not a magic v2 record batch")
	}
	attrs := binary.BigEndian.Uint16(batch[batchAttributesPos:])
	info := batchInfo{
		baseOffset:    int64(binary.BigEndian.Uint64(batch)),
		producerID:    int64(binary.BigEndian.Uint64(batch[batchProducerIDPos:])),
		transactional: attrs&attrTransactionalFlag != 0,
		control:       attrs&attrControlFlag != 0,
	}
	count := int32(binary.BigEndian.Uint32(batch[batchRecordCountPos:]))
	body := batch[batchHeaderLen:]
	if codec := compress.Codec(attrs & attrCompressionMask); codec != compress.None {
		var err error
		if body, err = compress.Decompress(codec, body, maxDecompressedBatch); err != nil {
			return fmt.Errorf("decompressing batch at offset %d: %w", info.baseOffset, err)
		}
	}
	for i := int32(0); i < count; i++ {
		r := kbin.Reader{Src: body}
		length := r.Varint()
		if !r.Ok() || length < 0 || int(length) > len(r.Src) {
			return fmt.Errorf("truncated record %d in batch at offset %d", i, info.baseOffset)
		}
		n := len(body) - len(r.Src) + int(length)
		var rec kmsg.Record
		if err := rec.ReadFrom(body[:n]); err != nil {
			return fmt.Errorf("record %d in batch at offset %d: %w", i, info.baseOffset, err)
		}
		body = body[n:]
		if err := fn(info, rec.Key, rec.Value); err != nil {
			return err
		}
	}
	return nil
}

func offsetCommitKey(groupID, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: keyOffsetCommit, Group: groupID, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetCommitRecord(groupID, topic string, partition int32, o offsetEntry) record {
	v := kmsg.OffsetCommitValue{
		Version:         offsetValueVersion,
		Offset:          o.offset,
		LeaderEpoch:     o.leaderEpoch,
		Metadata:        o.metadata,
		CommitTimestamp: o.commitTime,
		ExpireTimestamp: -1,
	}
	if o.expireTime >= 0 {
		v.Version = offsetValueExpire
		v.ExpireTimestamp = o.expireTime
	}
	return record{key: offsetCommitKey(groupID, topic, partition), value: v.AppendTo(nil)}
}

func offsetTombstone(groupID, topic string, partition int32) record {
	return record{key: offsetCommitKey(groupID, topic, partition)}
}

func groupMetadataKey(groupID string) []byte {
	k := kmsg.GroupMetadataKey{Version: keyGroupMetadata, Group: groupID}
	return k.AppendTo(nil)
}

func groupTombstone(groupID string) record {
	return record{key: groupMetadataKey(groupID)}
}

// decodeKeyVersion returns the leading int16 of a __consumer_offsets key.
func decodeKeyVersion(key []byte) (int16, bool) {
	if len(key) < 2 {
		return 0, false
	}
	return int16(binary.BigEndian.Uint16(key)), true
}
