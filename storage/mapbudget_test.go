//go:build linux

package storage

import (
	"bytes"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// lowerIndexMapBound lets this test's logs take no index mapping: the
// bound is set to the mappings held now.
func lowerIndexMapBound(t *testing.T) {
	indexMaps.take() // the bound set from the system, if not yet
	indexMaps.give()
	old := indexMaps.bound.Load()
	indexMaps.bound.Store(indexMaps.held.Load())
	t.Cleanup(func() { indexMaps.bound.Store(old) })
}

// TestIndexesPastTheMappingBound: with the index mappings at their bound
// (vm.max_map_count less a headroom: past it the Go runtime's own mmap
// fails and stops the process) a log still rolls, appends index entries,
// finds every batch by offset and truncates, holding no mapping; after a
// reopen with mappings allowed its index entries are the same.
func TestIndexesPastTheMappingBound(t *testing.T) {
	if MappingsBound(65530) != 49146 || MappingsBound(0) <= 1<<40 || MappingsBound(100) != 50 {
		t.Fatalf("MappingsBound: %d, %d, %d", MappingsBound(65530), MappingsBound(0), MappingsBound(100))
	}
	dir := t.TempDir()
	cfg := recoveryConfig()
	lowerIndexMapBound(t)
	l := openTestLog(t, dir, cfg, nil)
	stored := appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	// More until the active segment holds 8 batches (a roll starts it anew).
	inActive := func() (first, n int) {
		base := l.active().baseOffset
		first = len(stored)
		for i, b := range stored {
			if parseBatchHeader(b).BaseOffset >= base {
				first = min(first, i)
				n++
			}
		}
		return first, n
	}
	for range 100 {
		if _, n := inActive(); n >= 8 {
			break
		}
		stored = append(stored, appendBatches(t, l, compress.None, 1, testEpoch.UnixMilli())...)
	}
	first, n := inActive()
	if len(l.segments) < 4 || n < 8 {
		t.Fatalf("%d segments, %d batches in the active one", len(l.segments), n)
	}
	if m := mappingsUnder(t, dir); len(m) != 0 {
		t.Fatalf("mappings past the bound: %v", m)
	}
	act := l.active()
	if act.offsetIndex.n == 0 || !act.offsetIndex.parked() {
		t.Fatalf("active offset index: %d entries, parked %v; want entries written unmapped", act.offsetIndex.n, act.offsetIndex.parked())
	}
	readAll := func(l *Log) []byte {
		res, err := l.Read(0, 1<<30, l.LogEndOffset(), false)
		if err != nil {
			t.Fatal(err)
		}
		return readSlices(t, res)
	}
	// Every batch found by offset through pread, sealed indexes included.
	for _, b := range stored {
		h := parseBatchHeader(b)
		res, err := l.Read(h.LastOffset(), 1, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if got := readSlices(t, res); !bytes.Equal(got, b) {
			t.Fatalf("batch at %d: %d bytes read, want %d", h.BaseOffset, len(got), len(b))
		}
	}

	// Truncate in the active segment: its dropped entries are zeroed
	// without a mapping.
	entriesBefore := act.offsetIndex.n
	keep := first + 2
	h := parseBatchHeader(stored[keep])
	if err := l.TruncateTo(h.BaseOffset); err != nil {
		t.Fatal(err)
	}
	stored = stored[:keep]
	if leo := l.LogEndOffset(); leo != h.BaseOffset {
		t.Fatalf("LEO %d after truncating to %d", leo, h.BaseOffset)
	}
	if got := l.active().offsetIndex.n; got >= entriesBefore || !l.active().offsetIndex.parked() {
		t.Fatalf("active offset index after the truncation: %d entries (%d before), parked %v", got, entriesBefore, l.active().offsetIndex.parked())
	}
	if m := mappingsUnder(t, dir); len(m) != 0 {
		t.Fatalf("mappings after reads and a truncation past the bound: %v", m)
	}
	entries := func(l *Log) (out [][2]int64) {
		for _, s := range l.segments {
			for i := range s.offsetIndex.n {
				o, p, err := s.offsetIndex.at(i)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, [2]int64{o, p})
			}
		}
		return out
	}
	before, data := entries(l), readAll(l)
	if !bytes.Equal(data, bytes.Join(stored, nil)) {
		t.Fatalf("log holds %d bytes after the truncation, want %d", len(data), len(bytes.Join(stored, nil)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened with mappings allowed: the same entries and the same batches.
	indexMaps.bound.Store(1 << 40)
	l = openTestLog(t, dir, cfg, nil)
	defer l.Close()
	after := entries(l)
	if len(after) != len(before) {
		t.Fatalf("%d offset-index entries after the reopen, %d before", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("entry %d: %v before, %v after", i, before[i], after[i])
		}
	}
	verifyLog(t, l, stored)
}
