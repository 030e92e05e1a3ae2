package broker

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
)

// maxInFlight bounds the requests a connection may have read but not yet
// answered; the read loop stops reading until the writer catches up, which is
// the backpressure a pipelining client sees.
const maxInFlight = 64

// conn is one client connection: serve runs the read loop (read a frame,
// decode, handle in order), writeLoop writes the responses in request order.
// Handlers run on the read goroutine, so requests on one connection take
// effect in the order they were sent (two produces to one partition append in
// order); a handler that must wait (a long-poll Fetch) completes its exchange
// later from another goroutine while the read loop goes on.
type conn struct {
	srv      *Server
	nc       net.Conn
	listener string
	logger   *slog.Logger

	queue chan *exchange // in request order; closed by the read loop

	closeOnce sync.Once
	dead      chan struct{} // closed when the connection is torn down
}

// exchange is one request and, once done is closed, its response: either a
// kmsg response, a chunked frame (Fetch), or nothing (acks=0 produce).
type exchange struct {
	req    *protocol.Request
	done   chan struct{}
	frame  []byte
	chunks []protocol.Chunk
	// closeConn asks the writer to close the connection after this exchange
	// (Kafka closes an acks=0 producer's connection on error).
	closeConn bool
}

func newConn(s *Server, nc net.Conn, listenerName string) *conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &conn{
		srv:      s,
		nc:       nc,
		listener: listenerName,
		logger:   s.logger.With("remote", nc.RemoteAddr().String(), "listener", listenerName),
		queue:    make(chan *exchange, maxInFlight),
		dead:     make(chan struct{}),
	}
}

// respond completes the exchange with a kmsg response.
func (x *exchange) respond(resp kmsg.Response) {
	x.frame = protocol.AppendResponse(nil, x.req, resp)
	close(x.done)
}

// respondChunks completes the exchange with a frame laid out as chunks.
func (x *exchange) respondChunks(chunks []protocol.Chunk) {
	x.chunks = chunks
	close(x.done)
}

// completed reports whether the exchange has its response already.
func (x *exchange) completed() bool {
	select {
	case <-x.done:
		return true
	default:
		return false
	}
}

// noResponse completes the exchange without writing anything.
func (x *exchange) noResponse() { close(x.done) }

func (c *conn) serve() {
	defer c.srv.removeConn(c)
	writerDone := make(chan struct{})
	go func() {
		c.writeLoop()
		close(writerDone)
	}()
	c.readLoop()
	close(c.queue)
	<-writerDone
	c.teardown()
}

func (c *conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var buf []byte
	for {
		frame, err := protocol.ReadFrame(r, c.srv.cfg.SocketRequestMaxBytes, buf)
		if err != nil {
			c.logReadError(err)
			return
		}
		req, err := protocol.ParseRequest(frame, c.srv.versions)
		if err != nil {
			// Unknown keys, versions we do not serve (Produce v0-2 included)
			// and malformed bodies close the connection, as in Kafka. An
			// ApiVersions at an unknown version is not an error: it parses
			// to a v0 request that is answered with UNSUPPORTED_VERSION.
			c.logger.Warn("closing connection: bad request", "err", err)
			return
		}
		buf = nil
		x := &exchange{req: req, done: make(chan struct{})}
		if !c.enqueue(x) {
			return
		}
		h := c.srv.handlers[req.Key]
		if h.fn == nil {
			// ParseRequest only passes keys from the table, which is built
			// from the handlers; this is a programming error, not bad input.
			c.logger.Error("no handler for api key", "key", req.Key)
			x.noResponse()
			return
		}
		h.fn(c, x)
		if x.closeConn {
			return
		}
		// The decoded request keeps byte slices into the frame (kmsg does
		// not copy them) and handlers may hold on to them (a group member's
		// metadata, a parked fetch), so the next frame normally gets a new
		// buffer. A Produce answered before its handler returned is done
		// with its records (storage wrote them to the segment file), so on
		// that hot path the buffer is read into again.
		if req.Key == int16(kmsg.Produce) && x.completed() {
			buf = frame
		}
	}
}

func (c *conn) enqueue(x *exchange) bool {
	select {
	case c.queue <- x:
		return true
	case <-c.dead:
		return false
	}
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.logger.Debug("connection closed mid-frame")
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return // stopReading during shutdown
		}
		c.logger.Warn("closing connection", "err", err)
	}
}

// writeLoop writes responses in request order, batching small frames into one
// write and sending file regions with sendfile.
func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	failed := false
	for x := range c.queue {
		select {
		case <-x.done:
		case <-c.dead:
			failed = true
		}
		if failed {
			continue // drain the queue so the read loop never blocks
		}
		var err error
		switch {
		case x.frame != nil:
			_, err = w.Write(x.frame)
		case x.chunks != nil:
			err = c.writeChunks(w, x.chunks)
		}
		if err == nil && len(c.queue) == 0 {
			err = w.Flush()
		}
		if err != nil {
			c.logger.Debug("write failed", "err", err)
			failed = true
			c.teardown()
			continue
		}
		if x.closeConn {
			w.Flush()
			failed = true
			c.teardown()
		}
	}
	if !failed {
		w.Flush()
	}
}

func (c *conn) writeChunks(w *bufio.Writer, chunks []protocol.Chunk) error {
	for _, ch := range chunks {
		if ch.File == nil {
			if _, err := w.Write(ch.Bytes); err != nil {
				return err
			}
			continue
		}
		if ch.Len == 0 {
			continue
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := sendFileRegion(c.nc, ch.File, ch.Pos, ch.Len); err != nil {
			return err
		}
	}
	return nil
}

// stopReading makes the read loop return (shutdown) while letting queued
// responses be written.
func (c *conn) stopReading() {
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) teardown() {
	c.closeOnce.Do(func() {
		close(c.dead)
		c.nc.Close()
	})
}
