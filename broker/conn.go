package broker

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
	"github.com/strait/strait/security"
)

// maxInFlight bounds the requests a connection may have read but not yet
// answered; the read loop stops reading until the responses are written,
// which is the backpressure a pipelining client sees. queued.max.requests
// lowers it (Server.inFlightLimit, limits.go).
const maxInFlight = 64

// conn is one client connection. serve runs the read loop (read a frame,
// decode, handle in order); handlers run on the read goroutine, so requests
// on one connection take effect in the order they were sent (two produces
// to one partition append in order). A handler that must wait (a long-poll
// Fetch, an acks=all Produce waiting for followers) completes its exchange
// later from another goroutine while the read loop goes on.
//
// Responses are written in request order by whichever goroutine completes
// the exchange at the head of the queue: usually the read goroutine itself,
// right after a handler answered at once, so a request costs no hand-off to
// another goroutine. Only one goroutine writes at a time (the writer role,
// taken under mu); one that completes an exchange while another writes, or
// behind one not yet answered, leaves it queued for the writer. The writer
// writes every answered exchange at the head, flushes once no more are
// answered, and gives the role up; its buffer comes from a pool (and a lone
// frame is written without one), so an idle connection holds no write
// buffer and no second goroutine. Nor does it hold a read buffer: the read
// loop's goes back to a pool while the socket is empty (connReader), and
// the logger and the queue are built when first needed. Once the
// connection has been idle for a while (idleAfter), the read loop goes on
// in a new goroutine, which waits on the smallest stack (see connReader):
// an idle connection is a 2 KiB stack and about a kilobyte of heap.
//
// On a TLS listener the connection is a *tls.Conn: the handshake runs first
// on the connection's goroutine (start), reads go through tls.Conn.Read
// (no idle handoff: the reader keeps its buffer, a small one until a read
// fills it), and fetched file regions
// are copied through the write buffer instead of sendfile. On a SASL
// listener the read loop passes frames to the authenticator until the
// client has authenticated (conn_auth.go).
type conn struct {
	srv      *Server
	nc       net.Conn
	listener string
	ip       string                      // remote IP, as counted by srv.quotas
	logp     atomic.Pointer[slog.Logger] // built by logger on first use
	// lastActive (UnixNano, coarse) is when a request was last read or a
	// response's write began or made progress: idleconns.go closes the
	// connection past connections.max.idle.ms, or past stalledWriteLimit
	// in a write at the segment file bound.
	lastActive atomic.Int64
	// mutedUntil (UnixNano, 0: never) is when a throttled connection's
	// next request may be read (clientquotas.go).
	mutedUntil atomic.Int64

	// Security (conn_auth.go), all nil on a PLAINTEXT listener: the
	// listener's TLS and SASL servers, the TLS connection before its
	// handshake, the SASL exchange, and the principal (nil: ANONYMOUS),
	// set by the read goroutine before it serves the first request.
	sec   *listenerSecurity
	tc    *tls.Conn
	sasl  *saslConn
	princ atomic.Pointer[security.Principal] // other goroutines may read it (a callback's, the tests')
	// sendfile: file regions go out with sendfile(2) (a TCP connection);
	// else they are copied through the write buffer (TLS).
	sendfile bool

	rd        connReader             // the read loop's; holds a buffer only while there are bytes to read
	clientIDs protocol.ClientIDCache // the read loop's
	// software is the client's software name and version from its
	// ApiVersions (KIP-511), for client telemetry's matching.
	software atomic.Pointer[[2]string]

	mu sync.Mutex
	// ring holds the exchanges not yet written, in request order; it is
	// allocated by the first enqueue and doubles, up to maxInFlight, as
	// more are in flight at once.
	ring      []*exchange
	head, n   int32         // ring[head] is the oldest of n
	unwritten int32         // exchanges read and not yet written: queued, or taken by the writer (maxInFlight)
	writing   bool          // a goroutine holds the writer role
	failed    bool          // a write failed or the connection closes: responses are dropped
	readDone  bool          // the read loop has returned
	slotFree  chan struct{} // made by the read loop waiting at maxInFlight; closed when an exchange is written
	drained   chan struct{} // made by finish when readDone with exchanges left; closed once none is

	w *bufio.Writer // the writer role's buffer (from writers), nil without the role

	closeOnce sync.Once
	dead      chan struct{} // closed when the connection is torn down
}

// exchange is one request and, once answered, its response: either a
// kmsg response (frame), a chunked frame (Fetch), or nothing (acks=0
// produce). Exactly one of respond, respondChunks and noResponse answers it.
type exchange struct {
	c      *conn
	req    *protocol.Request
	frame  []byte
	pooled *[]byte // frame's buffer, returned to frames once written
	chunks []protocol.Chunk
	// onRelease, when set, runs once the response is written or dropped:
	// the segment files its chunks send from may close then (Fetch).
	onRelease func()
	// closeConn asks the writer to close the connection after this exchange
	// (Kafka closes an acks=0 producer's connection on error).
	closeConn bool
	done      atomic.Bool
	held      int64 // queued.max.request.bytes the request holds until written
	// throttleMs is the quota throttle the response carries (clientquotas.go).
	throttleMs int32
	// read, started and answered time the request for the metrics
	// (observeRequest): its frame read, its handler started, its response
	// ready. handledAfter is the handler's return, in nanoseconds after
	// read: atomic, as a parked request may be answered and written on
	// another goroutine before its handler returns. A zero read (the SASL
	// exchanges) is not observed.
	read, started, answered time.Time
	handledAfter            atomic.Int64
}

// writers and frames pool the writer role's buffer and kmsg response
// frames; a frame that grew past maxPooledFrame is left to the collector.
var (
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}
	frames  = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}
)

const maxPooledFrame = 64 << 10

// writeBatch is how many answered exchanges the writer takes from the queue
// at a time.
const writeBatch = 16

// newConn makes the connection of nc, accepted on listenerName whose
// security is sec (nil: PLAINTEXT). On a TLS listener nc is wrapped at
// once, so c.nc never changes; the handshake runs on the connection's own
// goroutine (start).
func newConn(s *Server, nc net.Conn, listenerName string, sec *listenerSecurity) *conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		// Fetch responses to a client on this host are not paced
		// (sendfile_linux.go): two system calls per connection.
		unpaceLoopback(tc)
	}
	c := &conn{
		srv:      s,
		nc:       nc,
		listener: listenerName,
		dead:     make(chan struct{}),
	}
	if sec != nil {
		c.sec = sec
		if sec.tls != nil {
			c.tc = tls.Server(nc, sec.tls.Config())
			c.nc = c.tc
		}
		if sec.sasl != nil {
			c.sasl = &saslConn{}
		}
	}
	_, c.sendfile = c.nc.(*net.TCPConn)
	// A TLS connection reads through tls.Conn.Read, without idle handoff
	// (connReader's raw reads are for TCP connections only).
	c.rd.init(c.nc)
	c.rd.enableHandoff()
	if c.tc != nil {
		c.rd.preferSmall()
	}
	return c
}

// start serves a new connection: the TLS handshake first on a TLS
// listener, then the read loop.
func (c *conn) start() {
	if c.tc != nil && !c.handshakeTLS(c.tc) {
		c.finish()
		return
	}
	c.serve()
}

// logger is the connection's logger (the server's, with the remote address
// and listener), built when the connection first logs: most never do.
func (c *conn) logger() *slog.Logger {
	if l := c.logp.Load(); l != nil {
		return l
	}
	c.logp.CompareAndSwap(nil, c.srv.logger.With("remote", c.nc.RemoteAddr().String(), "listener", c.listener))
	return c.logp.Load()
}

// respond answers the exchange with a kmsg response. The calling
// goroutine may write it (and others answered behind it) to the socket, so
// it must not hold a lock others need: callbacks run under a lock use
// respondAsync.
func (x *exchange) respond(resp kmsg.Response) {
	x.setFrame(resp)
	x.c.complete(x, true)
}

// respondAsync is respond for a caller that must not block on the socket
// (a coordinator's callback under its lock): the write, if due, happens on
// a new goroutine.
func (x *exchange) respondAsync(resp kmsg.Response) {
	x.setFrame(resp)
	x.c.complete(x, false)
}

func (x *exchange) setFrame(resp kmsg.Response) {
	x.applyThrottle(resp)
	buf := frames.Get().(*[]byte)
	x.frame = protocol.AppendResponse((*buf)[:0], x.req, resp)
	x.pooled = buf
}

// respondChunks answers the exchange with a frame laid out as chunks; the
// calling goroutine may write it, as with respond.
func (x *exchange) respondChunks(chunks []protocol.Chunk) {
	x.chunks = chunks
	x.c.complete(x, true)
}

// noResponse answers the exchange without writing anything.
func (x *exchange) noResponse() { x.c.complete(x, true) }

// completed reports whether the exchange has been answered.
func (x *exchange) completed() bool { return x.done.Load() }

// release returns the exchange's pooled frame once it is written or dropped.
func (x *exchange) release() {
	if x.pooled != nil {
		if cap(x.frame) <= maxPooledFrame {
			*x.pooled = x.frame[:0]
			frames.Put(x.pooled)
		}
		x.pooled, x.frame = nil, nil
	}
	x.chunks = nil
	if x.onRelease != nil {
		x.onRelease()
		x.onRelease = nil
	}
	if x.held > 0 {
		x.c.srv.reqBytes.release(x.held)
		x.held = 0
	}
}

// serve runs the read loop on the goroutine the connection was accepted
// with and, each time the connection goes idle, on a new one (resume).
func (c *conn) serve() {
	if c.readLoop() {
		c.mu.Lock()
		if c.n == 0 {
			c.ring, c.head = nil, 0 // as a new connection's: enqueue makes one
		}
		c.mu.Unlock()
		go c.resume()
		return
	}
	c.finish()
}

// resume serves an idle connection on a new goroutine once it has bytes
// (or an error) to read; while it waits, only resume and fill are on the
// goroutine's stack, which is the smallest a goroutine has.
func (c *conn) resume() {
	c.rd.fill() // without a deadline: not idle again
	c.serve()
}

// finish answers what the read loop left and tears the connection down.
func (c *conn) finish() {
	defer c.srv.removeConn(c)
	// Requests already read are answered before the connection closes (a
	// shutdown stops reading, not answering).
	c.mu.Lock()
	c.readDone = true
	var drained chan struct{}
	if c.n != 0 || c.writing {
		drained = make(chan struct{})
		c.drained = drained
	}
	c.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-c.dead: // a write failed: what is left is dropped
		}
	}
	c.teardown()
}

// readLoop reads and handles requests until the connection closes or fails
// (false) or goes idle (true: the reader holds no buffer, and its next fill
// waits without a deadline). It waits for a frame's bytes in fill, on a
// small frame: a goroutine's stack in use while it waits is what decides
// whether the collector can shrink it.
func (c *conn) readLoop() (idle bool) {
	defer c.rd.close()
	var buf []byte
	for {
		if !c.waitMuted() {
			return false
		}
		if c.rd.fill() {
			return true
		}
		var ok bool
		if buf, ok = c.readRequest(buf); !ok {
			return false
		}
	}
}

// readRequest reads a frame (into buf if it is large enough) and handles
// its request. It returns false to close the connection, and the buffer to
// read the next frame into.
func (c *conn) readRequest(buf []byte) ([]byte, bool) {
	maxSize := c.srv.cfg.Network.SocketRequestMaxBytes
	if c.sasl != nil && c.sasl.phase != saslComplete {
		// Before authentication a frame is refused above
		// sasl.server.max.receive.size, before anything is allocated for
		// it (ReadFrame checks the size first).
		maxSize = c.sec.maxReceive
	}
	var frame []byte
	var err error
	var held int64 // queued.max.request.bytes taken by this frame (limits.go)
	if limit := c.srv.cfg.Limits.QueuedMaxRequestBytes; limit > 0 {
		br := &budgetReader{r: &c.rd, b: &c.srv.reqBytes, limit: limit, dead: c.dead}
		frame, err = protocol.ReadFrame(br, maxSize, buf)
		held = br.held
	} else {
		frame, err = protocol.ReadFrame(&c.rd, maxSize, buf)
	}
	handedOff := false
	defer func() {
		if !handedOff {
			c.srv.reqBytes.release(held)
		}
	}()
	if err != nil {
		c.logReadError(err)
		return nil, false
	}
	read := time.Now()
	c.touch()
	// Tests only (testhooks.go): a paused broker handles no frame, not
	// even SASL's; the request hook runs below, after authentication.
	hk := c.srv.hooks.ptr.Load()
	if hk != nil && !c.waitUnpaused(hk) {
		return nil, false
	}
	if c.sasl != nil && c.sasl.phase != saslComplete {
		return nil, c.authFrame(frame)
	}
	req, err := protocol.ParseRequest(frame, c.srv.versions, &c.clientIDs)
	if err != nil {
		// Unknown keys, versions we do not serve (Produce v0-2 included)
		// and malformed bodies close the connection, as in Kafka. An
		// ApiVersions at an unknown version is not an error: it parses
		// to a v0 request that is answered with UNSUPPORTED_VERSION.
		c.logRefused("bad request", err)
		return nil, false
	}
	if c.sasl != nil {
		if handled, ok := c.authenticatedRequest(req); handled || !ok {
			return nil, ok
		}
	}
	if hk != nil {
		if handled, ok := c.hookRequest(req); handled || !ok {
			return nil, ok
		}
	}
	x := &exchange{c: c, req: req, held: held, read: read}
	if !c.enqueue(x) {
		x.held = 0
		return nil, false
	}
	handedOff = true // released with the exchange, once written (release)
	h := c.srv.handlers[req.Key]
	if h.fn == nil {
		// ParseRequest only passes keys from the table, which is built
		// from the handlers; this is a programming error, not bad input.
		c.logger().Error("no handler for api key", "key", req.Key)
		x.noResponse()
		return nil, false
	}
	start := c.beforeRequest(x, len(frame))
	x.started = time.Now()
	if !c.runHandler(h.fn, x) {
		return nil, false
	}
	x.handledAfter.Store(int64(time.Since(read)))
	c.afterRequest(x, start)
	if x.closeConn {
		return nil, false
	}
	// The decoded request keeps byte slices into the frame (kmsg does not
	// copy them) and handlers may hold on to them (a group member's
	// metadata, a parked fetch), so the next frame normally gets a new
	// buffer. A Produce answered before its handler returned is done with
	// its records (storage wrote them to the segment file), so on that hot
	// path the buffer is read into again.
	if req.Key == int16(kmsg.Produce) && x.completed() {
		return frame, true
	}
	return nil, true
}

// enqueue queues x behind the exchanges not yet written, waiting for one
// to be written while maxInFlight are.
func (c *conn) enqueue(x *exchange) bool {
	c.mu.Lock()
	for c.unwritten >= c.srv.inFlightLimit() {
		if c.slotFree == nil {
			c.slotFree = make(chan struct{})
		}
		free := c.slotFree
		c.mu.Unlock()
		select {
		case <-free:
		case <-c.dead:
			return false
		}
		c.mu.Lock()
	}
	c.unwritten++
	if int(c.n) == len(c.ring) {
		c.growRingLocked()
	}
	c.ring[(int(c.head)+int(c.n))%len(c.ring)] = x
	c.n++
	c.mu.Unlock()
	return true
}

// growRingLocked doubles the ring (4 entries at first), keeping the queued
// exchanges in order from index 0. unwritten bounds n, so it never grows
// past maxInFlight.
func (c *conn) growRingLocked() {
	ring := make([]*exchange, max(4, 2*len(c.ring)))
	for i := range int(c.n) {
		ring[i] = c.ring[(int(c.head)+i)%len(c.ring)]
	}
	c.ring, c.head = ring, 0
}

// complete marks x answered and, if that lets responses go out and no one
// else is writing, writes them: on the calling goroutine when inline, else
// on a new one.
func (c *conn) complete(x *exchange, inline bool) {
	if !x.read.IsZero() && !x.done.Load() {
		x.answered = time.Now() // before done: a writer that sees done sees it
	}
	c.mu.Lock()
	if x.done.Swap(true) {
		c.mu.Unlock()
		c.logger().Error("request answered twice", "key", x.req.Key, "correlation_id", x.req.CorrelationID)
		return
	}
	if c.writing || c.n == 0 || !c.ring[c.head].done.Load() {
		c.mu.Unlock()
		return
	}
	c.writing = true
	if !inline {
		c.mu.Unlock()
		// Refused only once Close has drained the connections.
		if !c.srv.bg.Go(func() {
			c.mu.Lock()
			c.writeLocked()
		}) {
			c.mu.Lock()
			c.writeLocked()
		}
		return
	}
	c.writeLocked()
}

// writeLocked runs the writer role: called with mu held and writing set,
// it writes every answered exchange at the head of the queue, flushing
// when none is left, and returns with mu released and the role given up.
func (c *conn) writeLocked() {
	// At most writeBatch exchanges are taken at a time (more are taken on
	// the next turn), which keeps this frame, on the read goroutine's
	// stack, small.
	var batch [writeBatch]*exchange
	dirty := false
	for {
		k := 0
		for k < writeBatch && c.n > 0 && c.ring[c.head].done.Load() {
			batch[k] = c.ring[c.head]
			c.ring[c.head] = nil
			c.head = (c.head + 1) % int32(len(c.ring))
			c.n--
			k++
		}
		if k == 0 {
			if dirty {
				// Flush without the lock, then look again: exchanges
				// answered meanwhile go out with this role.
				c.mu.Unlock()
				err := c.w.Flush()
				c.mu.Lock()
				dirty = false
				if err != nil {
					c.writeFailedLocked(err)
				}
				continue
			}
			c.writing = false
			if c.w != nil {
				c.w.Reset(nil)
				writers.Put(c.w)
				c.w = nil
			}
			if c.drained != nil && c.n == 0 {
				close(c.drained)
				c.drained = nil
			}
			c.mu.Unlock()
			return
		}
		failed := c.failed || c.isDead()
		c.mu.Unlock()
		if hk := c.srv.hooks.ptr.Load(); hk != nil && !c.waitUnpaused(hk) { // a paused broker writes nothing (testhooks.go)
			failed = true
		}

		var err error
		closeAfter := false
		if !failed {
			c.touch() // a stall is counted from here (idleconns.go)
		}
		switch {
		case failed:
		case k == 1 && !dirty && batch[0].frame != nil:
			// One frame and nothing buffered: written as it is, which is
			// what the flush would write, without copying it or taking a
			// buffer (an idle client's one request needs none).
			_, err = c.nc.Write(batch[0].frame)
			closeAfter = batch[0].closeConn
		default:
			if c.w == nil {
				c.w = writers.Get().(*bufio.Writer)
				c.w.Reset(c.nc)
			}
			for _, x := range batch[:k] {
				if err = c.writeExchange(x); err != nil || x.closeConn {
					closeAfter = x.closeConn
					break
				}
			}
			dirty = err == nil
			if err == nil && closeAfter {
				err = c.w.Flush()
				dirty = false
			}
		}
		written := time.Now()
		for i, x := range batch[:k] {
			if !failed {
				c.srv.observeRequest(x, written)
			}
			x.release()
			batch[i] = nil
		}

		if err == nil {
			c.touch()
		}
		c.mu.Lock()
		c.unwritten -= int32(k)
		if c.slotFree != nil {
			close(c.slotFree)
			c.slotFree = nil
		}
		switch {
		case err != nil:
			c.writeFailedLocked(err)
		case closeAfter:
			c.failed = true
			c.teardown()
		}
	}
}

// writeFailedLocked drops every later response and closes the connection.
func (c *conn) writeFailedLocked(err error) {
	if !c.failed {
		c.logger().Debug("write failed", "err", err)
	}
	c.failed = true
	c.teardown()
}

func (c *conn) writeExchange(x *exchange) error {
	switch {
	case x.frame != nil:
		_, err := c.w.Write(x.frame)
		return err
	case x.chunks != nil:
		return c.writeChunks(x.chunks)
	}
	return nil
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.logger().Debug("connection closed mid-frame")
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return // stopReading during shutdown
		}
		var tooLarge *protocol.FrameTooLargeError
		if errors.As(err, &tooLarge) {
			// Often a TLS client on a plaintext port (its ClientHello
			// reads as a size of some 370 MB), or an unauthenticated
			// client: at most a line a second.
			if c.sasl != nil && c.sasl.phase != saslComplete {
				err = fmt.Errorf("%w: %w", errTooLargeBeforeAuth, err)
			}
			c.logRefusedAt(slog.LevelWarn, "frame too large", err)
			return
		}
		c.logRefused("read failed", err)
	}
}

// writeChunks writes a chunked frame: bytes through the buffer, file
// regions with sendfile after a flush.
func (c *conn) writeChunks(chunks []protocol.Chunk) error {
	for _, ch := range chunks {
		if ch.File == nil {
			if _, err := c.w.Write(ch.Bytes); err != nil {
				return err
			}
			continue
		}
		if ch.Len == 0 {
			continue
		}
		if !c.sendfile {
			// TLS: the bytes must pass through the record layer, so the
			// region is read into the write buffer, which flushes as it
			// fills.
			if err := copyFileRegion(c.w, ch.File, ch.Pos, ch.Len); err != nil {
				return err
			}
			c.touch()
			continue
		}
		if err := c.w.Flush(); err != nil {
			return err
		}
		if err := sendFileRegion(c.nc, ch.File, ch.Pos, ch.Len); err != nil {
			return err
		}
		c.touch() // progress: a stalled client is told apart by its lack
	}
	return nil
}

// stopReading makes the read loop return (shutdown) while letting queued
// responses be written.
func (c *conn) stopReading() {
	c.rd.stop()
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

func (c *conn) teardown() {
	c.closeOnce.Do(func() {
		close(c.dead)
		c.nc.Close()
	})
}

// runHandler runs a request's handler. A panic in it is a bug in Strait, not
// something a client may cause by design: it is logged with its stack and
// closes this connection, and the broker serves everyone else, as Kafka
// answers a handler's unexpected exception without stopping. It reports
// whether the connection may go on.
func (c *conn) runHandler(fn handlerFunc, x *exchange) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.logger().Error("request handler panicked; closing the connection",
				"api_key", x.req.Key, "api_version", x.req.Version, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if !x.completed() {
				x.noResponse()
			}
			ok = false
		}
	}()
	fn(c, x)
	return true
}
