package compress

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// allocated returns the bytes fn allocates, its pools emptied first (two
// collections clear a sync.Pool), so a decoder's buffers count even when a
// previous test left them pooled. TotalAlloc only grows, so the delta
// bounds what the heap can have grown by.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func lz4Frame(t *testing.T, size lz4.BlockSize, src []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(lz4.BlockSizeOption(size), lz4.BlockChecksumOption(true), lz4.ChecksumOption(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An LZ4 frame declaring 4 MiB blocks cost the decoder two 4 MiB buffers
// whatever it held; now a frame costs what its bytes can expand to (255
// times), so a small one costs two 64 KiB buffers. Frames of every size
// still decode, alone and concatenated, and a bad header checksum is still
// refused.
func TestLZ4BlockBuffersByFrameSize(t *testing.T) {
	small := []byte("a small record section, far below any block size")
	frame := lz4Frame(t, lz4.Block4Mb, small)
	var got []byte
	n := allocated(func() {
		var err error
		if got, err = Decompress(LZ4, frame, 1<<30); err != nil {
			t.Fatal(err)
		}
	})
	if !bytes.Equal(got, small) {
		t.Fatalf("decoded %q", got)
	}
	t.Logf("%d-byte frame declaring 4 MiB blocks: %d bytes allocated", len(frame), n)
	if n > 1<<20 {
		t.Fatalf("%d-byte frame declaring 4 MiB blocks allocated %d bytes", len(frame), n)
	}

	// Repetitive content that compresses to a few KiB (block size lowered
	// to 1 MiB), incompressible content (4 MiB kept), and both in a row.
	rep := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)
	rnd := make([]byte, 3<<20)
	x := uint32(1)
	for i := range rnd {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		rnd[i] = byte(x)
	}
	f1, f2 := lz4Frame(t, lz4.Block4Mb, rep), lz4Frame(t, lz4.Block4Mb, rnd)
	for _, c := range []struct {
		name  string
		frame []byte
		want  []byte
	}{
		{"repetitive", f1, rep},
		{"random", f2, rnd},
		{"concatenated", append(append(append([]byte(nil), f1...), f2...), frame...), append(append(append([]byte(nil), rep...), rnd...), small...)},
	} {
		got, err := Decompress(LZ4, c.frame, 1<<30)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Fatalf("%s: %d bytes, %v", c.name, len(got), err)
		}
	}

	bad := append([]byte(nil), frame...)
	bad[6] ^= 0xff // the header checksum (no content size)
	if _, err := Decompress(LZ4, bad, 1<<30); err == nil {
		t.Fatal("bad header checksum accepted")
	}
}

// lz4DescriptorChecksum agrees with the encoder's for every descriptor
// shape it writes.
func TestLZ4DescriptorChecksum(t *testing.T) {
	for _, opts := range [][]lz4.Option{
		{lz4.BlockSizeOption(lz4.Block64Kb)},
		{lz4.BlockSizeOption(lz4.Block4Mb), lz4.ChecksumOption(false)},
		{lz4.SizeOption(5), lz4.BlockChecksumOption(true)},
	} {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(opts...); err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte("hello"))
		_ = w.Close()
		b := buf.Bytes()
		_, descLen, ok := lz4FrameEnd(b)
		if !ok {
			t.Fatalf("frame %x not walked", b)
		}
		if got := lz4DescriptorChecksum(b[4 : 4+descLen]); got != b[4+descLen] {
			t.Fatalf("checksum %x, encoder wrote %x", got, b[4+descLen])
		}
	}
}

// zstdClaim is a zstd frame declaring a window of 2^windowLog bytes and
// holding five raw bytes.
func zstdClaim(windowLog byte) []byte {
	return []byte{
		0x28, 0xb5, 0x2f, 0xfd, // magic
		0x00,                  // no content size, not single segment, no checksum, no dictionary
		(windowLog - 10) << 3, // window descriptor: exponent, mantissa 0
		5<<3 | 1, 0, 0,        // last block, raw, 5 bytes
		'h', 'e', 'l', 'l', 'o',
	}
}

// A zstd decoder reserves the window a frame declares at its first block
// (the library offers no way to grow it with the output): up to 128 MiB
// (MaxZstdWindow) for five bytes. Under a cap, a window over max(cap,
// MinCappedZstdWindow) is refused before anything is reserved.
func TestZstdWindowOverCapRefusedBeforeAllocating(t *testing.T) {
	claim := zstdClaim(27) // 128 MiB
	var err error
	n := allocated(func() {
		var r io.ReadCloser
		if r, err = NewLimitedReader(Zstd, claim, 16<<20); err == nil {
			_, err = io.ReadAll(r)
			r.Close()
		}
	})
	if !errors.Is(err, zstd.ErrWindowSizeExceeded) && !errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		t.Fatalf("128 MiB window under a 16 MiB cap: %v", err)
	}
	t.Logf("128 MiB window refused under a 16 MiB cap: %d bytes allocated", n)
	if n > 1<<20 {
		t.Fatalf("refusing a 128 MiB window allocated %d bytes", n)
	}

	// An 8 MiB window, which libzstd's usual levels declare, is accepted
	// under any cap; the cap still counts the output.
	got, err := Decompress(Zstd, zstdClaim(23), 5)
	if err != nil || string(got) != "hello" {
		t.Fatalf("8 MiB window under a 5-byte cap: %q, %v", got, err)
	}
	// Without a cap the declared window is what it costs: the bound left.
	n = allocated(func() {
		if got, err = Decompress(Zstd, claim, 1<<30); err != nil || string(got) != "hello" {
			t.Fatalf("128 MiB window, no cap: %q, %v", got, err)
		}
	})
	t.Logf("128 MiB window without a cap: %d bytes allocated (the declared window: the library's bound)", n)
}
