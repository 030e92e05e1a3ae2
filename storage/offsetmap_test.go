package storage

import (
	"fmt"
	"testing"
)

func TestOffsetMap(t *testing.T) {
	m := newOffsetMap(100 * offsetMapEntrySize)
	if m.slots != 100 || m.get([]byte("absent")) != -1 || m.latestOffset() != -1 {
		t.Fatalf("empty map: slots %d", m.slots)
	}
	for i := 0; i < 90; i++ {
		if !m.put(fmt.Appendf(nil, "key-%d", i%30), int64(i)) {
			t.Fatalf("put %d refused", i)
		}
	}
	if m.size() != 30 || m.latestOffset() != 89 {
		t.Fatalf("size %d latest %d, want 30 and 89", m.size(), m.latestOffset())
	}
	for k := 0; k < 30; k++ {
		if got := m.get(fmt.Appendf(nil, "key-%d", k)); got != int64(60+k) {
			t.Fatalf("key-%d -> %d, want %d", k, got, 60+k)
		}
	}
	m.updateLatestOffset(200)
	if m.latestOffset() != 200 {
		t.Fatal("updateLatestOffset ignored")
	}
	// Full: every slot taken, a new key is refused and lookups still end.
	for i := 30; m.size() < m.slots; i++ {
		m.put(fmt.Appendf(nil, "key-%d", i), int64(i))
	}
	if m.put([]byte("one too many"), 1) || m.get([]byte("one too many")) != -1 {
		t.Fatal("a full map took or found a new key")
	}
	m.clear()
	if m.size() != 0 || m.get([]byte("key-1")) != -1 || m.latestOffset() != -1 {
		t.Fatal("clear left entries")
	}
}
