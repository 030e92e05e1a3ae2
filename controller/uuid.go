package controller

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// NewKafkaUUID returns a random (version 4) UUID the way Kafka's
// Uuid.randomUuid does: never one of the reserved ids (zero, and one for the
// metadata topic) and never one whose string form starts with '-'.
func NewKafkaUUID() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if isReservedUUID(id) || FormatUUID(id)[0] == '-' {
			continue
		}
		return id
	}
}

func isReservedUUID(id [16]byte) bool {
	var reserved [16]byte
	if id == reserved {
		return true
	}
	reserved[15] = 1
	return id == reserved
}

// FormatUUID renders id as Kafka does (Uuid.toString): unpadded base64url, 22 characters.
func FormatUUID(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ParseUUID parses the form FormatUUID writes.
func ParseUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("controller: invalid uuid %q", s)
	}
	copy(id[:], b)
	return id, nil
}
