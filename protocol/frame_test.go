package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

func sizePrefixed(size int32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}

func TestReadFrameExact(t *testing.T) {
	r := bytes.NewReader(append(sizePrefixed(3, []byte("abc")), sizePrefixed(0, nil)...))
	frame, err := ReadFrame(r, 3, nil)
	if err != nil || string(frame) != "abc" {
		t.Fatalf("frame %q err %v, want abc", frame, err)
	}
	frame, err = ReadFrame(r, 3, frame)
	if err != nil || len(frame) != 0 {
		t.Fatalf("empty frame: %q %v", frame, err)
	}
	if _, err := ReadFrame(r, 3, nil); err != io.EOF {
		t.Fatalf("at boundary: err %v, want io.EOF", err)
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 16)
	frame, err := ReadFrame(bytes.NewReader(sizePrefixed(4, []byte("wxyz"))), 100, buf)
	if err != nil || string(frame) != "wxyz" {
		t.Fatalf("%q %v", frame, err)
	}
	if &frame[0] != &buf[:1][0] {
		t.Fatal("buffer with enough capacity was not reused")
	}
}

func TestReadFrameTooLarge(t *testing.T) {
	// Declares 1 GiB and sends nothing more: must fail before reading or
	// allocating anything.
	huge := sizePrefixed(1<<30, nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := ReadFrame(bytes.NewReader(huge), 100, nil); err == nil {
		t.Fatal("1 GiB frame accepted")
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("%d bytes allocated for an oversized frame", n)
	}

	r := bytes.NewReader(sizePrefixed(101, make([]byte, 101)))
	_, err := ReadFrame(r, 100, nil)
	var tooLarge *FrameTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != 101 || tooLarge.Max != 100 {
		t.Fatalf("err %v, want FrameTooLargeError{101, 100}", err)
	}
	if r.Len() != 101 {
		t.Fatalf("%d bytes of the oversized frame were consumed", 101-r.Len())
	}
}

func TestReadFrameNegative(t *testing.T) {
	_, err := ReadFrame(bytes.NewReader(sizePrefixed(-1, nil)), 100, nil)
	if !errors.Is(err, ErrNegativeFrameSize) {
		t.Fatalf("err %v, want ErrNegativeFrameSize", err)
	}
}

func TestReadFrameTruncated(t *testing.T) {
	for _, in := range [][]byte{
		{0, 0},                                // inside the size
		sizePrefixed(10, []byte("short")),     // inside the frame
		sizePrefixed(3<<20, make([]byte, 10)), // beyond the first growth step
	} {
		if _, err := ReadFrame(bytes.NewReader(in), 4<<20, nil); err != io.ErrUnexpectedEOF {
			t.Fatalf("input %d bytes: err %v, want io.ErrUnexpectedEOF", len(in), err)
		}
	}
}

func TestReadFrameLargeGrows(t *testing.T) {
	body := make([]byte, 3<<20+5)
	for i := range body {
		body[i] = byte(i)
	}
	frame, err := ReadFrame(bytes.NewReader(sizePrefixed(int32(len(body)), body)), 4<<20, make([]byte, 0, 10))
	if err != nil || !bytes.Equal(frame, body) {
		t.Fatalf("large frame: err %v, equal %v", err, bytes.Equal(frame, body))
	}
}

func TestReadFrameLyingSizeAllocatesLittle(t *testing.T) {
	// Declares 50 MiB (under the limit) but sends 10 bytes: ReadFrame must
	// not allocate the declared size up front.
	in := sizePrefixed(50<<20, make([]byte, 10))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := ReadFrame(bytes.NewReader(in), 100<<20, nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("err %v", err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 2*frameGrowStep {
		t.Fatalf("%d bytes allocated for 10 bytes received", n)
	}
}
