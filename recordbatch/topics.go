package recordbatch

import (
	"math"
	"unicode/utf16"
)

// The internal topics of the coordinators.
const (
	// ConsumerOffsetsTopic is the group coordinator's topic.
	ConsumerOffsetsTopic = "__consumer_offsets"
	// TransactionStateTopic is the transaction coordinator's topic.
	TransactionStateTopic = "__transaction_state"
	// ShareGroupStateTopic is the share coordinator's topic (KIP-932),
	// internal although Strait does not write it.
	ShareGroupStateTopic = "__share_group_state"
)

// IsInternalTopic is Kafka's Topic.isInternal: clients other than the
// admin client may not produce to these.
func IsInternalTopic(name string) bool {
	switch name {
	case ConsumerOffsetsTopic, TransactionStateTopic, ShareGroupStateTopic:
		return true
	}
	return false
}

// JavaStringHash is Java's String.hashCode: s*31 over UTF-16 code units,
// with int32 overflow.
func JavaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// PartitionFor is the partition of an internal topic of n partitions that
// holds key (a group id or a transactional id): Kafka's
// Utils.abs(key.hashCode()) % n. n <= 0 gives 0.
func PartitionFor(key string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	h := JavaStringHash(key)
	switch {
	case h == math.MinInt32:
		h = 0 // Kafka's Utils.abs maps MIN_VALUE to 0
	case h < 0:
		h = -h
	}
	return h % n
}
