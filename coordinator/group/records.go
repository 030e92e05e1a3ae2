package group

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
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

// buildBatch encodes records as one uncompressed batch with CreateTime now
// and no producer id; the broker assigns the base offset and leader epoch
// on append.
func buildBatch(recs []record, now time.Time) []byte {
	return buildProducerBatch(recs, now, recordbatch.NoProducerID, recordbatch.NoProducerEpoch)
}

// buildProducerBatch is buildBatch for a transactional producer (producer
// id >= 0): the batch carries its id and epoch, no sequence, and the
// transactional attribute, as Kafka writes TxnOffsetCommit records.
func buildProducerBatch(recs []record, now time.Time, producerID int64, producerEpoch int16) []byte {
	b := recordbatch.NewBuilder(now.UnixMilli())
	if producerID >= 0 {
		b.ProducerID, b.ProducerEpoch, b.Transactional = producerID, producerEpoch, true
	}
	for _, r := range recs {
		b.Add(r.key, r.value)
	}
	return b.Build()
}

// maxDecompressedBatch bounds a compressed batch's decompressed size on load.
const maxDecompressedBatch = 256 << 20

// readBatch calls fn with each record of a batch, decompressing them if
// needed.
func readBatch(batch []byte, fn func(h *recordbatch.Header, key, value []byte) error) error {
	return recordbatch.ForEach(batch, compress.Limited(maxDecompressedBatch), func(h *recordbatch.Header, r *recordbatch.Record) error {
		return fn(h, r.Key, r.Value)
	})
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
