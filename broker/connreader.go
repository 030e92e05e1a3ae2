package broker

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// readBufSize is the read loop's buffer: frames up to this size arrive in
// one read(2) with whatever follows them; larger ones are read straight
// into the frame.
const readBufSize = 64 << 10

// readBufs pools the read loops' buffers. A connection holds one only while
// it has bytes to read: connReader gives it back when a read finds the
// socket empty with nothing buffered, and takes one again when the socket
// turns readable, so an idle connection costs no read buffer.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// readBufsHeld counts the read buffers connections hold (the tests' view of
// what idle connections cost).
var readBufsHeld atomic.Int64

// connReader is the read loop's buffered reader (what a bufio.Reader of
// readBufSize was), whose buffer goes back to readBufs while the connection
// is idle. On a TCP connection it reads with read(2) from a RawConn callback:
// the callback first tries the read, and only when the socket is empty
// (EAGAIN) and nothing is buffered does it give the buffer back before the
// goroutine parks in the poller; the next callback, once the socket is
// readable, takes a buffer again and reads. That is the same syscalls as
// net.Conn.Read (try, park on EAGAIN, read again), so a busy connection
// pays nothing for it, and an idle one holds neither a buffer nor a pending
// read into one. Other connections (net.Pipe in tests) read through
// net.Conn.Read and keep their buffer.
//
// It is used by the read goroutine only, and honours the connection's read
// deadline (stopReading) and Close as net.Conn.Read does.
type connReader struct {
	nc  net.Conn
	raw syscall.RawConn // nil: read through nc

	buf  *[]byte // from readBufs; nil while idle
	r, w int     // (*buf)[r:w] is buffered
	err  error   // error after the buffered bytes (plain reads only)

	// The RawConn callback's argument and results: into is a caller's
	// slice to read straight into (nil: the buffer from w on).
	into   []byte
	n      int
	rerr   error
	readFn func(fd uintptr) bool // rawRead as a func value, built once
}

func (cr *connReader) init(nc net.Conn) {
	cr.nc = nc
	if tc, ok := nc.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			cr.raw = raw
			cr.readFn = cr.rawRead
		}
	}
}

// Read is bufio.Reader's Read: buffered bytes first; with none, a read of at
// least readBufSize goes straight into p, a shorter one fills the buffer
// with one read.
func (cr *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if cr.r == cr.w {
		if cr.err != nil {
			err := cr.err
			cr.err = nil
			return 0, err
		}
		cr.r, cr.w = 0, 0
		if len(p) >= readBufSize {
			return cr.read(p)
		}
		n, err := cr.read(nil)
		if n == 0 {
			return 0, err
		}
		cr.w = n
		cr.err = err
	}
	n := copy(p, (*cr.buf)[cr.r:cr.w])
	cr.r += n
	return n, nil
}

// read reads once into p, or into the buffer from w when p is nil (taking a
// buffer first if the connection has none).
func (cr *connReader) read(p []byte) (int, error) {
	if cr.raw == nil {
		if p == nil {
			cr.takeBuf()
			p = (*cr.buf)[cr.w:]
		}
		return cr.nc.Read(p)
	}
	const maxRW = 1 << 30 // as internal/poll: no single read(2) above 1 GiB
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	cr.into, cr.n, cr.rerr = p, 0, nil
	err := cr.raw.Read(cr.readFn)
	cr.into = nil
	if err != nil {
		// Deadline (stopReading) or closed: the net.OpError of a Read.
		if oe, ok := err.(*net.OpError); ok {
			oe.Op = "read"
		}
		return 0, err
	}
	if cr.rerr != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: cr.nc.LocalAddr(), Addr: cr.nc.RemoteAddr(), Err: os.NewSyscallError("read", cr.rerr)}
	}
	if cr.n == 0 {
		return 0, io.EOF
	}
	return cr.n, nil
}

// rawRead is the RawConn callback: it reads once, returning false (wait for
// the socket to be readable, then call again) on EAGAIN. An empty socket
// with nothing buffered is an idle connection: the buffer goes back to the
// pool before the goroutine parks.
func (cr *connReader) rawRead(fd uintptr) bool {
	p := cr.into
	if p == nil {
		cr.takeBuf()
		p = (*cr.buf)[cr.w:]
	}
	for {
		n, err := syscall.Read(int(fd), p)
		switch err {
		case nil:
			cr.n = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if cr.r == cr.w {
				cr.releaseBuf()
			}
			return false
		default:
			cr.rerr = err
			return true
		}
	}
}

// takeBuf takes a buffer if the connection has none.
func (cr *connReader) takeBuf() {
	if cr.buf == nil {
		cr.buf = readBufs.Get().(*[]byte)
		readBufsHeld.Add(1)
	}
}

// releaseBuf gives the buffer back; only with nothing buffered.
func (cr *connReader) releaseBuf() {
	if cr.buf != nil {
		readBufs.Put(cr.buf)
		readBufsHeld.Add(-1)
		cr.buf = nil
		cr.r, cr.w = 0, 0
	}
}

// close gives the buffer back when the read loop returns, whatever is in it.
func (cr *connReader) close() {
	cr.r, cr.w = 0, 0
	cr.releaseBuf()
}
