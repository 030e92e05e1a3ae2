package storage

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strait/strait/recordbatch"
)

// fuzzLogFiles writes a log of three small segments with the package's own
// writer, closes it cleanly, and returns its files by name.
func fuzzLogFiles(f *testing.F) map[string][]byte {
	dir := f.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 100
	l, err := Open(dir, cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	for i := range 24 {
		b := recordbatch.NewBuilder(1_700_000_000_000 + int64(i))
		for j := range 1 + i%3 {
			b.Add([]byte{byte('a' + j)}, []byte("value of a record in a fuzzed segment"))
		}
		if _, err := l.AppendAsLeader(b.Build(), 0); err != nil {
			f.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			files[e.Name()] = b
		}
	}
	return files
}

// FuzzRecoverCorruptedLog replaces one file of a cleanly closed log (a
// segment, an index, a time index, a checkpoint) with the fuzzer's bytes
// and opens the log: no panic. When dirty is set, the clean-shutdown marker
// and the recovery point are removed first, so that every segment is
// recovered; then every batch the log keeps must be whole with a valid CRC.
func FuzzRecoverCorruptedLog(f *testing.F) {
	files := fuzzLogFiles(f)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		f.Add(uint8(i), files[n], false)
		f.Add(uint8(i), files[n], true)
		if len(files[n]) > 40 {
			corrupt := slices.Clone(files[n])
			corrupt[len(corrupt)/2] ^= 0x40
			f.Add(uint8(i), corrupt, true)
			f.Add(uint8(i), corrupt[:len(corrupt)-7], false)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, which uint8, content []byte, dirty bool) {
		dir := t.TempDir()
		target := names[int(which)%len(names)]
		for _, n := range names {
			b := files[n]
			if n == target {
				b = content
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if dirty {
			os.Remove(filepath.Join(dir, cleanShutdownFile))
			os.Remove(filepath.Join(dir, recoveryPointFile))
		}
		cfg := testConfig()
		cfg.SegmentBytes = 1024
		cfg.IndexIntervalBytes = 100
		l, err := Open(dir, cfg, Options{Logger: logger})
		if err != nil {
			return
		}
		defer l.Close()
		start, end := l.LogStartOffset(), l.LogEndOffset()
		if end < start {
			t.Fatalf("log end %d before its start %d", end, start)
		}
		off := start
		for range 1000 {
			if off >= end {
				break
			}
			res, err := l.Read(off, 1<<20, end, true)
			if err != nil || res.Size == 0 {
				if dirty {
					t.Fatalf("read at %d of [%d, %d) after recovery: %d bytes, %v", off, start, end, res.Size, err)
				}
				return
			}
			var buf []byte
			for _, s := range res.Slices {
				b := make([]byte, s.Len)
				if _, err := s.File.ReadAt(b, s.Pos); err != nil {
					t.Fatalf("read slice: %v", err)
				}
				buf = append(buf, b...)
			}
			for len(buf) > 0 {
				batch, rest, ok := recordbatch.Split(buf)
				if !ok {
					if dirty {
						t.Fatalf("a partial batch kept by recovery at offset %d", off)
					}
					return
				}
				if dirty {
					if err := recordbatch.Check(batch); err != nil || !recordbatch.Batch(batch).CRCValid() {
						t.Fatalf("recovery kept the batch at %d with a bad CRC or framing (%v)", recordbatch.Batch(batch).BaseOffset(), err)
					}
				}
				next := recordbatch.Batch(batch).LastOffset() + 1
				if next <= off {
					if dirty {
						t.Fatalf("offsets go back at %d after recovery", off)
					}
					return
				}
				off = next
				buf = rest
			}
		}
	})
}
