package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// FrameTooLargeError is returned by ReadFrame for a frame whose declared size
// is above the limit (socket.request.max.bytes). Kafka closes the connection
// (InvalidReceiveException); nothing of the frame has been allocated or read.
type FrameTooLargeError struct {
	Size int32 // declared size
	Max  int32 // limit
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("invalid receive (size = %d larger than %d)", e.Size, e.Max)
}

// ErrNegativeFrameSize is returned by ReadFrame for a frame whose declared size
// is negative; Kafka closes the connection.
var ErrNegativeFrameSize = errors.New("invalid receive: negative frame size")

// frameGrowStep bounds how far ahead of the bytes actually received ReadFrame
// allocates, so a peer that declares a large frame and sends little costs
// little memory.
const frameGrowStep = 1 << 20

// ReadFrame reads one size-prefixed frame into buf (grown as needed) and returns it.
// Sizes above maxSize or below zero are errors; nothing larger than the size is allocated.
//
// io.EOF is returned only when the stream ends cleanly before a frame starts;
// a stream that ends inside the size or the frame gives io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	// The size goes into buf's first bytes when it has room: an array
	// here would escape through io.ReadFull, an allocation per frame.
	var sizeBuf []byte
	if cap(buf) >= 4 {
		sizeBuf = buf[:4]
	} else {
		sizeBuf = make([]byte, 4)
	}
	if _, err := io.ReadFull(r, sizeBuf); err != nil {
		return nil, err // io.EOF at a boundary, io.ErrUnexpectedEOF inside
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf))
	if size < 0 {
		return nil, ErrNegativeFrameSize
	}
	if size > maxSize {
		return nil, &FrameTooLargeError{Size: size, Max: maxSize}
	}
	n := int(size)
	if cap(buf) >= n {
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, noEOF(err)
		}
		return buf, nil
	}
	// Grow with the bytes that arrive, at most frameGrowStep ahead of them.
	buf = buf[:0]
	for len(buf) < n {
		want := min(n-len(buf), frameGrowStep)
		if cap(buf)-len(buf) < want {
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), len(buf)+want)))
			copy(grown, buf)
			buf = grown
		}
		start := len(buf)
		buf = buf[:start+want]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, noEOF(err)
		}
	}
	return buf, nil
}

// noEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
