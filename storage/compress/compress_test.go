package compress

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"

	"github.com/golang/snappy"
)

func TestRoundTripEveryCodec(t *testing.T) {
	src := bytes.Repeat([]byte("strait record payload "), 5000) // > one xerial block
	for _, c := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		enc, err := Compress(c, []byte("prefix"), src)
		if err != nil {
			t.Fatalf("%s: compress: %v", c, err)
		}
		if !bytes.HasPrefix(enc, []byte("prefix")) {
			t.Fatalf("%s: dst prefix lost", c)
		}
		for i := 0; i < 2; i++ { // second round uses pooled decoders
			got, err := Decompress(c, enc[len("prefix"):], int64(len(src)))
			if err != nil {
				t.Fatalf("%s: decompress: %v", c, err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("%s: round trip mismatch", c)
			}
		}
		if _, err := Decompress(c, enc[len("prefix"):], int64(len(src)-1)); err == nil {
			t.Fatalf("%s: limit not enforced", c)
		}
	}
}

func TestSnappyRawBlock(t *testing.T) {
	src := []byte("raw snappy as librdkafka writes it")
	got, err := Decompress(Snappy, snappy.Encode(nil, src), 1<<20)
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("raw snappy: %q, %v", got, err)
	}
}

func TestCorruptInputErrors(t *testing.T) {
	junk := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	for _, c := range []Codec{Gzip, Snappy, LZ4, Zstd} {
		r, err := NewReader(c, junk)
		if err == nil {
			_, err = io.ReadAll(r)
			r.Close()
		}
		if err == nil {
			t.Fatalf("%s: junk decoded without error", c)
		}
	}
	if _, err := NewReader(Codec(5), nil); err == nil {
		t.Fatal("codec 5 accepted")
	}
	// A xerial block length running past the input.
	framed, _ := Compress(Snappy, nil, []byte("hello"))
	framed[xerialHeaderSize+3] = 0xff
	if _, err := Decompress(Snappy, framed, 1<<20); err == nil {
		t.Fatal("overlong xerial block accepted")
	}
}

// A raw snappy block may claim any decoded length in its header; decoding
// must cost what the block really produces, not what it claims.
func TestSnappyClaimedLengthNotAllocated(t *testing.T) {
	// Header claims 64 MiB; body is one short literal.
	forged := binary.AppendUvarint(nil, MaxSnappyBlock)
	forged = append(forged, 4<<2, 'a', 'b', 'c', 'd', 'e')
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const tries = 64
	for i := 0; i < tries; i++ {
		if _, err := Decompress(Snappy, forged, 1<<30); err == nil {
			t.Fatal("forged block accepted")
		}
	}
	runtime.ReadMemStats(&after)
	// Before the fix each try allocated the claimed 64 MiB (4 GiB in all).
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("%d forged blocks allocated %d bytes", tries, d)
	}
	// A plausible claim (within the expansion ratio) that the body does
	// not fill is refused, having allocated no more than the ratio allows:
	// 256 KiB of incompressible data under a header claiming 22 times it.
	rnd := make([]byte, 256<<10)
	for i := range rnd {
		rnd[i] = byte(i*7919 ^ i>>5*31)
	}
	body := snappy.Encode(nil, rnd)
	_, hdr := binary.Uvarint(body)
	claim := uint64(len(body)) * snappyMaxExpansion
	lie := append(binary.AppendUvarint(nil, claim), body[hdr:]...)
	runtime.ReadMemStats(&before)
	if _, err := Decompress(Snappy, lie, 1<<30); err == nil {
		t.Fatal("short block accepted")
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > uint64(len(lie))*(snappyMaxExpansion+1)+1<<20 {
		t.Fatalf("block of %d bytes claiming %d allocated %d", len(lie), claim, d)
	}
}

// NewWriter's output, written in uneven pieces and with a pooled encoder
// the second time, decodes to its input with every codec.
func TestNewWriterRoundTrip(t *testing.T) {
	src := bytes.Repeat([]byte("streamed record bytes "), 20000) // several blocks of every codec
	for _, c := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		for round := 0; round < 2; round++ {
			var out bytes.Buffer
			w, err := NewWriter(c, &out)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			for rest, n := src, 1; len(rest) > 0; n = n*3 + 1 {
				k := min(n, len(rest))
				if _, err := w.Write(rest[:k]); err != nil {
					t.Fatalf("%s: write: %v", c, err)
				}
				rest = rest[k:]
			}
			if err := w.Close(); err != nil {
				t.Fatalf("%s: close: %v", c, err)
			}
			got, err := Decompress(c, out.Bytes(), int64(len(src)))
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%s round %d: %d bytes, %v", c, round, len(got), err)
			}
		}
	}
}

// NewLevelWriter at each codec's lowest, default and highest Kafka level
// decodes to its input, twice per level (the second time from the
// level's pool), and a higher level compresses repetitive input at least
// as well as the lowest; out-of-range levels are refused.
func TestNewLevelWriterLevels(t *testing.T) {
	src := bytes.Repeat([]byte("recompressed record bytes, level by level "), 5000)
	levels := map[Codec][]int{
		Gzip: {1, DefaultGzipLevel, 9},
		LZ4:  {1, DefaultLZ4Level, 17},
		Zstd: {-5, 1, DefaultZstdLevel, 22},
	}
	for c, ls := range levels {
		sizes := map[int]int{}
		for _, level := range ls {
			for round := 0; round < 2; round++ {
				var out bytes.Buffer
				w, err := NewLevelWriter(c, level, &out)
				if err != nil {
					t.Fatalf("%s level %d: %v", c, level, err)
				}
				if _, err := w.Write(src); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				got, err := Decompress(c, out.Bytes(), int64(len(src)))
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("%s level %d round %d: %d bytes, %v", c, level, round, len(got), err)
				}
				sizes[level] = out.Len()
			}
		}
		if hi, lo := sizes[ls[len(ls)-1]], sizes[ls[0]]; hi > lo {
			t.Errorf("%s: highest level wrote %d bytes, lowest %d", c, hi, lo)
		}
	}
	for _, bad := range []struct {
		c     Codec
		level int
	}{{Gzip, 0}, {Gzip, 10}, {LZ4, 0}, {LZ4, 18}} {
		if _, err := NewLevelWriter(bad.c, bad.level, io.Discard); err == nil {
			t.Errorf("%s level %d accepted", bad.c, bad.level)
		}
	}
}
