// Package inturn is the bench tools' sticky in-turn partitioner for
// records without a key (strait-bench's sticky-in-turn scenarios and
// scaling steps, bench/scalecost): a turn of records to one partition, then
// the next partition in order, and how many records give every partition
// its turn.
//
// Its batches are the sticky partitioners' (the Java client's built-in one,
// KIP-794, and franz-go's), but where those pick the next partition at
// random, and so leave many of 10,000 partitions unwritten in a phase of
// seconds, this one writes every partition once a phase has carried a turn
// per partition.
package inturn

import "github.com/twmb/franz-go/pkg/kgo"

// TurnBytes is the Java client's batch.size default: its built-in
// partitioner moves to another partition after so many bytes.
const TurnBytes = 16 << 10

// TurnRecords is how many records of recordSize bytes make one turn on a
// partition: 16 of 1 KiB, at least 1.
func TurnRecords(recordSize int) int { return max(1, TurnBytes/max(1, recordSize)) }

// MinRecords is how many records give every partition its turn when they
// go to topics topics in turn (each topic with its own partitioner, of
// widest partitions at most) and each partitioner's turn is turn records.
func MinRecords(topics, widest, turn int) int { return topics * widest * max(1, turn) }

// Partitioner sends Records records (at least 1) to one partition, then as
// many to the next partition in order, wrapping after the last.
type Partitioner struct{ Records int }

// ForTopic is a new partitioner for one topic, starting at partition 0.
func (p Partitioner) ForTopic(string) kgo.TopicPartitioner {
	return &topicPartitioner{records: max(1, p.Records)}
}

type topicPartitioner struct{ records, index, sent int }

// RequiresConsistency is false: records have no key, so franz-go may skip
// partitions that cannot take records at the moment.
func (*topicPartitioner) RequiresConsistency(*kgo.Record) bool { return false }

// Partition is an index among the n writable partitions (franz-go calls it
// under the topic's lock).
func (t *topicPartitioner) Partition(_ *kgo.Record, n int) int {
	if t.sent == t.records {
		t.sent = 0
		t.index++
	}
	if t.index >= n {
		t.index = 0
	}
	t.sent++
	return t.index
}
