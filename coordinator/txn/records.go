package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/storage/compress"
)

// Key and value versions in __transaction_state (TransactionLogKey and
// TransactionLogValue; see doc.go).
const (
	keyVersion = 0 // the coordinator record type of TransactionLogKey
	// Value version 1 (flexible, with the KIP-890 tagged fields) is written
	// once transaction.version is 2, version 0 below (TransactionVersion.
	// transactionLogValueVersion).
	valueVersionTV2 = 1
	valueVersionOld = 0
)

// encodeKey is a TransactionLogKey with its type prefix.
func encodeKey(transactionalID string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: transactionalID}
	return k.AppendTo(nil)
}

// encodeValue is the TransactionLogValue of a transition, at the value
// version the cluster's transaction version calls for.
func encodeValue(t transit, clusterTV int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersionOld
	if clusterTV >= TV2 {
		v.Version = valueVersionTV2
		v.PreviousProducerID = t.prevProducerID
		v.NextProducerID = t.nextProducerID
	}
	v.ProducerID = t.producerID
	v.ProducerEpoch = t.producerEpoch
	v.TimeoutMillis = t.timeoutMs
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp = t.lastUpdateMs
	v.StartTimestamp = t.startMs
	v.ClientTransactionVersion = t.clientTV
	if t.state != Empty {
		// Empty keeps a null partition list, as Kafka writes it.
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		parts := make([]TopicPartition, 0, len(t.partitions))
		for tp := range t.partitions {
			parts = append(parts, tp)
		}
		slices.SortFunc(parts, comparePartitions)
		for _, tp := range parts {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
	}
	return v.AppendTo(nil)
}

// decodeValue rebuilds a transactional id's metadata from a value.
func decodeValue(id string, value []byte) (*txnMetadata, error) {
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(value); err != nil {
		return nil, err
	}
	if v.Version > valueVersionTV2 {
		return nil, fmt.Errorf("unknown value version %d", v.Version)
	}
	st := State(v.State)
	if st < Empty || st > PrepareEpochFence {
		return nil, fmt.Errorf("unknown transaction state %d", v.State)
	}
	m := newTxnMetadata(id)
	m.producerID, m.prevProducerID, m.nextProducerID = v.ProducerID, v.PreviousProducerID, v.NextProducerID
	m.producerEpoch, m.lastProducerEpoch = v.ProducerEpoch, noProducerEpoch
	m.timeoutMs, m.state = v.TimeoutMillis, st
	m.startMs, m.lastUpdateMs, m.clientTV = v.StartTimestamp, v.LastUpdateTimestamp, v.ClientTransactionVersion
	if st != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
			}
		}
	}
	return m, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const batchHeaderLen = 61

// buildBatch encodes one record (value nil: a tombstone) as an uncompressed
// magic-v2 batch without producer id, CreateTime now, CRC32C set; the
// broker assigns its offset on append.
func buildBatch(key, value []byte, now time.Time) []byte {
	ts := now.UnixMilli()
	rec := kmsg.Record{Key: key, Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	body := rec.AppendTo(nil)
	b := kmsg.RecordBatch{
		Length:               int32(batchHeaderLen - 12 + len(body)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              body,
	}
	out := b.AppendTo(make([]byte, 0, batchHeaderLen+len(body)))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

// maxDecompressedBatch bounds a compressed batch's size on load (Kafka
// never compresses this topic; another writer might have).
const maxDecompressedBatch = 256 << 20

// readRecords calls fn with each record of a batch read back at load;
// control batches are skipped.
func readRecords(batch []byte, fn func(key, value []byte) error) error {
	if len(batch) < batchHeaderLen || batch[16] != 2 {
		return errors.New("not a magic v2 record batch")
	}
	attrs := binary.BigEndian.Uint16(batch[21:])
	if attrs&0x20 != 0 {
		return nil
	}
	count := int32(binary.BigEndian.Uint32(batch[57:]))
	body := batch[batchHeaderLen:]
	if codec := compress.Codec(attrs & 0x07); codec != compress.None {
		var err error
		if body, err = compress.Decompress(codec, body, maxDecompressedBatch); err != nil {
			return err
		}
	}
	for i := int32(0); i < count; i++ {
		r := kbin.Reader{Src: body}
		length := r.Varint()
		if !r.Ok() || length < 0 || int(length) > len(r.Src) {
			return fmt.Errorf("truncated record %d", i)
		}
		n := len(body) - len(r.Src) + int(length)
		var rec kmsg.Record
		if err := rec.ReadFrom(body[:n]); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		body = body[n:]
		if err := fn(rec.Key, rec.Value); err != nil {
			return err
		}
	}
	return nil
}

// decodeKey returns the transactional id of a key, ok false for a key of
// another record type (skipped, as Kafka does).
func decodeKey(key []byte) (string, bool, error) {
	if len(key) < 2 {
		return "", false, errors.New("short key")
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != keyVersion {
		return "", false, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", false, err
	}
	return k.TransactionalID, true, nil
}

// PartitionFor is the __transaction_state partition of a transactional id:
// Kafka's Utils.abs(transactionalId.hashCode()) % n, with Java's String
// hash over UTF-16 code units.
func PartitionFor(transactionalID string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	var h int32
	for _, r := range transactionalID {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	switch {
	case h == math.MinInt32:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}
