package group

import (
	"crypto/rand"
	"fmt"
	"math"
	"unicode/utf16"
)

// javaStringHash is Java's String.hashCode: s*31 over UTF-16 code units,
// with int32 overflow, so that groups land on the partitions Kafka puts them.
func javaStringHash(s string) int32 {
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

// PartitionFor is Kafka's Utils.abs(groupId.hashCode()) % n.
func PartitionFor(groupID string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	h := javaStringHash(groupID)
	if h == math.MinInt32 {
		h = 0 // Kafka's Utils.abs maps MIN_VALUE to 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// newUUID returns a random (version 4) UUID in Java's UUID.toString form,
// which Kafka uses in generated member ids.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
