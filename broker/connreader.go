package broker

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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

// smallReadBufs pools the buffers a connection reads into until a read
// fills one: what comes after it was idle (or accepted) is mostly one small
// request at a time (ApiVersions, Metadata, a heartbeat), and a connection
// that sends more takes full buffers until it is idle again.
var smallReadBufs = sync.Pool{New: func() any { b := make([]byte, smallReadBufSize); return &b }}

const smallReadBufSize = 4 << 10

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
//
// With idle handoff on (the broker's connections), it also tells the read
// loop when the connection has gone idle, so that the loop can go on in a
// new goroutine: a goroutine's stack keeps the size the deepest request
// needed until the collector halves it, which it does only while less than
// a quarter is in use, so a goroutine parked in the poller never gets below
// 4 KiB; a new goroutine parks on the 2 KiB it starts with. To notice idling
// without a timer of its own, the reader sets the connection's read deadline
// at the first wait after traffic, idleAfter ahead. When it expires with
// bytes read since, it is moved on, twice as far each time up to
// idleAfterMax, so that a busy connection pays for a wake-up every few
// seconds; when it expires with none, and the read loop waits for a new frame
// (fill) with nothing buffered, fill reports the connection idle with the
// deadline cleared, and the next wait has none.
type connReader struct {
	nc  net.Conn
	raw syscall.RawConn // nil: read through nc

	buf  *[]byte // from readBufs; nil while idle
	r, w int     // (*buf)[r:w] is buffered
	err  error   // error after the buffered bytes

	// The RawConn callback's argument and results: into is a caller's
	// slice to read straight into (nil: the buffer from w on).
	into   []byte
	n      int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool // rawRead as a func value, built once

	// Idle handoff (RawConn reads only).
	handoff  bool  // on: fill may report the connection idle
	fresh    bool  // nothing read since the goroutine began waiting: wait without a deadline
	armed    bool  // the idle deadline is set
	active   bool  // bytes were read since it was set
	boundary bool  // fill is waiting for a frame's first bytes
	backoff  uint8 // the deadline is idleAfter<<backoff ahead
	full     bool  // a read filled a small buffer: take full ones until idle
	// smallFirst: a connection read through nc (TLS) starts on a small
	// buffer too, and takes full ones once a read fills it; it keeps its
	// buffer while idle, so this is what an idle one holds.
	smallFirst bool
	stopped    atomic.Bool // stop was called: a deadline is the caller's, not the idle one
}

// A connection goes idle after idleAfter without a byte (up to twice that),
// or after longer once it has been busy: up to twice idleAfterMax.
const (
	idleAfter    = 20 * time.Millisecond
	idleAfterMax = 512 * idleAfter
)

// newStacksSmall reports whether a new goroutine starts on the smallest
// stack. The runtime starts them on the average stack in use at the last
// collection, which a moment of deep stacks (the broker starting) can make
// twice that until the next one; a connection going idle then stays on
// its goroutine and looks again when its deadline next expires, since a
// goroutine parked in the poller could not shrink to the smallest later.
// The answer is read again at most every few milliseconds (it changes at
// collections): connections going idle together ask once.
func newStacksSmall() bool {
	if o := stackStartOverride.Load(); o != 0 {
		return o > 0
	}
	c := &stackStart
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.at) > 5*time.Millisecond {
		c.at = now
		metrics.Read(c.sample[:])
		c.small = c.sample[0].Value.Kind() != metrics.KindUint64 || c.sample[0].Value.Uint64() <= smallStack
	}
	return c.small
}

// stackStartOverride answers newStacksSmall for tests: 1 yes, -1 no, 0
// (the default) the runtime's answer.
var stackStartOverride atomic.Int32

var stackStart = struct {
	mu     sync.Mutex
	at     time.Time
	small  bool
	sample [1]metrics.Sample
}{sample: [1]metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}}

// smallStack is the runtime's smallest goroutine stack (fixedStack).
var smallStack = func() uint64 {
	switch runtime.GOOS {
	case "windows":
		return 8 << 10
	case "plan9", "ios":
		return 4 << 10
	}
	return 2 << 10
}()

// errConnIdle is read's answer, inside fill, on an idle connection.
var errConnIdle = errors.New("connection idle")

func (cr *connReader) init(nc net.Conn) {
	cr.nc = nc
	cr.fresh = true
	if tc, ok := nc.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			cr.raw = raw
			cr.readFn = cr.rawRead
		}
	}
}

// preferSmall makes a connection read through nc start on a small buffer.
func (cr *connReader) preferSmall() { cr.smallFirst = cr.raw == nil }

// enableHandoff turns idle handoff on (RawConn reads only).
func (cr *connReader) enableHandoff() { cr.handoff = cr.raw != nil }

// stop makes reads return once the connection's read deadline, set by the
// caller after stop, expires: the reader no longer moves the deadline.
func (cr *connReader) stop() { cr.stopped.Store(true) }

// fill is called where a frame starts: with nothing buffered, it waits for
// the connection's next bytes and buffers them (or the error) for Read to
// return. It reports the connection idle (errConnIdle above), holding no
// buffer and no deadline, instead of waiting on; the next fill waits
// without a deadline. The read loop waits here rather than in Read under
// the frame reader's calls, and a goroutine resuming an idle connection
// waits here first thing, so that the stack in use while waiting is small.
func (cr *connReader) fill() (idle bool) {
	if cr.r != cr.w || cr.err != nil {
		return false
	}
	cr.r, cr.w = 0, 0
	cr.boundary = true
	n, err := cr.read(nil)
	cr.boundary = false
	if err == errConnIdle {
		return true
	}
	cr.w, cr.err = n, err
	return false
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
		if p != nil {
			return cr.nc.Read(p)
		}
		cr.takeBuf()
		p = (*cr.buf)[cr.w:]
		n, err := cr.nc.Read(p)
		if n == len(p) {
			cr.full = true // more may be waiting: a full buffer next time
		}
		return n, err
	}
	const maxRW = 1 << 30 // as internal/poll: no single read(2) above 1 GiB
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	cr.into, cr.n, cr.rerr = p, 0, 0
	err := cr.raw.Read(cr.readFn)
	for err != nil && cr.armed && errors.Is(err, os.ErrDeadlineExceeded) {
		// The idle deadline, unless stop set it.
		if idle, again := cr.idleExpired(); idle {
			cr.into = nil
			return 0, errConnIdle
		} else if !again {
			break
		}
		err = cr.raw.Read(cr.readFn)
	}
	cr.into = nil
	if err != nil {
		// Deadline (stopReading) or closed: the net.OpError of a Read.
		if oe, ok := err.(*net.OpError); ok {
			oe.Op = "read"
		}
		return 0, err
	}
	if cr.rerr != 0 {
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
			cr.active, cr.fresh = true, false
			if n == len(p) && cr.into == nil {
				cr.full = true // more may be waiting: a full buffer next time
			}
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if cr.r == cr.w {
				cr.releaseBuf()
			}
			if cr.handoff && !cr.armed && !cr.fresh {
				cr.arm()
			}
			return false
		default:
			cr.rerr = err.(syscall.Errno)
			return true
		}
	}
}

// arm sets the idle deadline: idleAfter ahead if it was not set, else
// twice as far as last time, up to idleAfterMax. After stop, whose own
// deadline it may have replaced, it sets the deadline to now.
func (cr *connReader) arm() {
	if !cr.armed {
		cr.armed, cr.backoff = true, 0
	} else if idleAfter<<(cr.backoff+1) <= idleAfterMax {
		cr.backoff++
	}
	cr.active = false
	cr.nc.SetReadDeadline(time.Now().Add(idleAfter << cr.backoff))
	if cr.stopped.Load() {
		cr.nc.SetReadDeadline(time.Now())
	}
}

// idleExpired handles the expiry of the idle deadline: idle when nothing
// was read since it was set and fill waits with nothing buffered (the
// deadline is cleared), and new goroutines start on the smallest stack;
// otherwise the deadline is moved on and again says to read again.
// Neither after stop: the deadline is the caller's, and the read returns
// its timeout.
func (cr *connReader) idleExpired() (idle, again bool) {
	if cr.stopped.Load() {
		return false, false
	}
	if !cr.active && cr.boundary && cr.r == cr.w && newStacksSmall() {
		cr.armed, cr.fresh, cr.full = false, true, false
		cr.nc.SetReadDeadline(time.Time{})
		// A stop after this sets its deadline after the clearing, which
		// the next read sees; one before it is seen here.
		return !cr.stopped.Load(), false
	}
	cr.arm()
	return false, true
}

// takeBuf takes a buffer if the connection has none, or a full one for a
// small one once one was filled; it is called with nothing buffered.
func (cr *connReader) takeBuf() {
	small := (cr.handoff || cr.smallFirst) && !cr.full
	if cr.buf != nil {
		if small || len(*cr.buf) == readBufSize {
			return
		}
		cr.releaseBuf()
	}
	if small {
		cr.buf = smallReadBufs.Get().(*[]byte)
	} else {
		cr.buf = readBufs.Get().(*[]byte)
	}
	readBufsHeld.Add(1)
}

// releaseBuf gives the buffer back; only with nothing buffered.
func (cr *connReader) releaseBuf() {
	if cr.buf != nil {
		if len(*cr.buf) == readBufSize {
			readBufs.Put(cr.buf)
		} else {
			smallReadBufs.Put(cr.buf)
		}
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
