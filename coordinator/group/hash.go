package group

import (
	"crypto/rand"
	"fmt"

	"github.com/strait/strait/recordbatch"
)

// PartitionFor is Kafka's Utils.abs(groupId.hashCode()) % n.
func PartitionFor(groupID string, n int32) int32 { return recordbatch.PartitionFor(groupID, n) }

// newUUID returns a random (version 4) UUID in Java's UUID.toString form,
// which Kafka uses in generated member ids.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
