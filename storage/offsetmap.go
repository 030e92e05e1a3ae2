package storage

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMap is Kafka's SkimpyOffsetMap: the cleaner's key -> latest offset
// map over the dirty section of a log, in a fixed block of memory
// (log.cleaner.dedupe.buffer.size split between the cleaner threads) so
// that its footprint does not depend on the keys.
//
// Each slot is 24 bytes: the MD5 digest of the key (16 bytes, as Kafka's
// default hash algorithm) and the offset (int64, big-endian). A slot of
// all zeros is empty. Probing follows Kafka's positionOf: attempt i reads
// a 4-byte window of the digest at byte i for the first 13 attempts, then
// walks linearly. Two keys with the same digest would share an entry; at
// 128 bits that is not a practical concern (Kafka accepts the same).
//
// Thread-safety: none; each cleaner worker owns one.
type offsetMap struct {
	buf     []byte
	slots   int
	entries int
	latest  int64 // the latest offset put or declared (updateLatestOffset)
}

const (
	offsetMapHashSize  = md5.Size
	offsetMapEntrySize = offsetMapHashSize + 8
)

// newOffsetMap returns a map using memory bytes (at least one slot).
func newOffsetMap(memory int) *offsetMap {
	slots := max(memory/offsetMapEntrySize, 1)
	return &offsetMap{buf: make([]byte, slots*offsetMapEntrySize), slots: slots, latest: -1}
}

func (m *offsetMap) clear() {
	clear(m.buf)
	m.entries = 0
	m.latest = -1
}

func (m *offsetMap) size() int { return m.entries }

// latestOffset is the offset up to which the map covers the log.
func (m *offsetMap) latestOffset() int64 { return m.latest }

func (m *offsetMap) updateLatestOffset(offset int64) { m.latest = offset }

func (m *offsetMap) position(hash *[offsetMapHashSize]byte, attempt int) int {
	window := min(attempt, offsetMapHashSize-4)
	probe := int64(int32(binary.BigEndian.Uint32(hash[window:]))) + int64(max(0, attempt-offsetMapHashSize+4))
	if probe < 0 {
		probe = -probe
	}
	return int(probe%int64(m.slots)) * offsetMapEntrySize
}

func (m *offsetMap) isEmpty(pos int) bool {
	e := m.buf[pos : pos+offsetMapEntrySize]
	le := binary.LittleEndian
	return le.Uint64(e)|le.Uint64(e[8:])|le.Uint64(e[16:]) == 0
}

// put records offset as the latest for key. The caller keeps entries
// below the load factor, so an empty slot exists; false means the map was
// full all the same and nothing was stored.
func (m *offsetMap) put(key []byte, offset int64) bool {
	hash := md5.Sum(key)
	return m.putHash(&hash, offset)
}

// putHash is put for a key given by its digest (the cleaner hashes keys as
// they stream, never holding a large one whole).
func (m *offsetMap) putHash(hash *[offsetMapHashSize]byte, offset int64) bool {
	for attempt := 0; attempt < m.slots+offsetMapHashSize-4; attempt++ {
		pos := m.position(hash, attempt)
		if m.isEmpty(pos) {
			copy(m.buf[pos:], hash[:])
			binary.BigEndian.PutUint64(m.buf[pos+offsetMapHashSize:], uint64(offset))
			m.entries++
			m.latest = offset
			return true
		}
		if [offsetMapHashSize]byte(m.buf[pos:pos+offsetMapHashSize]) == *hash {
			binary.BigEndian.PutUint64(m.buf[pos+offsetMapHashSize:], uint64(offset))
			m.latest = offset
			return true
		}
	}
	return false
}

// get returns the latest offset of key, -1 if the map does not hold it.
func (m *offsetMap) get(key []byte) int64 {
	hash := md5.Sum(key)
	return m.getHash(&hash)
}

// getHash is get for a key given by its digest.
func (m *offsetMap) getHash(hash *[offsetMapHashSize]byte) int64 {
	for attempt := 0; attempt < m.slots+offsetMapHashSize-4; attempt++ {
		pos := m.position(hash, attempt)
		if m.isEmpty(pos) {
			return -1
		}
		if [offsetMapHashSize]byte(m.buf[pos:pos+offsetMapHashSize]) == *hash {
			return int64(binary.BigEndian.Uint64(m.buf[pos+offsetMapHashSize:]))
		}
	}
	return -1
}
