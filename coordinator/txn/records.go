package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
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

// buildBatch encodes one record (value nil: a tombstone) as an uncompressed
// batch without producer id, CreateTime now; the broker assigns its offset
// on append.
func buildBatch(key, value []byte, now time.Time) []byte {
	b := recordbatch.NewBuilder(now.UnixMilli())
	b.Add(key, value)
	return b.Build()
}

// maxDecompressedBatch bounds a compressed batch's size on load (Kafka
// never compresses this topic; another writer might have).
const maxDecompressedBatch = 256 << 20

// readRecords calls fn with each record of a batch read back at load;
// control batches are skipped.
func readRecords(batch []byte, fn func(key, value []byte) error) error {
	return recordbatch.ForEach(batch, compress.Limited(maxDecompressedBatch), func(h *recordbatch.Header, r *recordbatch.Record) error {
		if h.IsControl() {
			return nil
		}
		return fn(r.Key, r.Value)
	})
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

// PartitionFor is the __transaction_state partition of a transactional id
// (Kafka's Utils.abs(transactionalId.hashCode()) % n).
func PartitionFor(transactionalID string, n int32) int32 {
	return recordbatch.PartitionFor(transactionalID, n)
}
