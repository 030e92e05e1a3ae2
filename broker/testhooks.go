package broker

// Hooks for fault injection in tests (package straittest): a request
// interceptor, Pause/Resume (a SIGSTOP of the broker), a filter of the
// brokers this one may reach (a network partition between brokers), Kill
// (server.go: a crash, without controlled shutdown) and JumpClock (a step
// of the broker's wall clock). They exist only so that tests can make the
// faults a client or a cluster meets in production; nothing in the broker
// sets them. When none is set they cost one atomic load per request and
// per response batch written, and nothing else: no lock, no allocation.

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
)

// RequestInfo is what a request hook sees of a request: who sent it, on
// which listener, and its decoded body. Body is the broker's: the hook may
// read it, not change it, and not keep it after it returns.
type RequestInfo struct {
	Listener  string
	ClientID  string
	Principal string // "User:ANONYMOUS" on a PLAINTEXT listener
	Remote    net.Addr
	Key       int16
	Version   int16
	Body      kmsg.Request
}

// RequestAction is what a request hook decides. The zero value lets the
// request through. Delay is waited first (on the connection's read
// goroutine, so later requests of the connection wait too, as behind a slow
// request); then Drop closes the connection without an answer, or Response
// answers the request in place of its handler (its version is set to the
// request's), or the handler runs.
type RequestAction struct {
	Response kmsg.Response
	Delay    time.Duration
	Drop     bool
}

// testHooks is the hooks' state, replaced as a whole (copy on write) so
// that the request path reads it with one atomic load.
type testHooks struct {
	request func(RequestInfo) RequestAction
	// paused is non-nil while the broker is paused; Resume closes it.
	paused chan struct{}
	// unreachable, if set, says which brokers this one cannot reach
	// (SetPeerFilter).
	unreachable func(nodeID int32) bool
}

// hooksState is the Server's hooks: ptr is read on the request path, mu
// serializes the writers.
type hooksState struct {
	mu  sync.Mutex
	ptr atomic.Pointer[testHooks]
}

// update applies fn to a copy of the hooks and publishes it (nil when no
// hook is left, so that the request path sees nil).
func (h *hooksState) update(fn func(*testHooks)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var next testHooks
	if cur := h.ptr.Load(); cur != nil {
		next = *cur
	}
	fn(&next)
	if next.request == nil && next.paused == nil && next.unreachable == nil {
		h.ptr.Store(nil)
		return
	}
	h.ptr.Store(&next)
}

// SetRequestHook makes h see every request the broker reads after
// authentication (SASL's own requests before it are not shown), once per
// request, before its handler, on the connection's read goroutine; nil
// removes it. It exists for tests (straittest's Intercept), to answer a
// chosen request with an error, delay it or drop its connection.
func (s *Server) SetRequestHook(h func(RequestInfo) RequestAction) {
	s.hooks.update(func(t *testHooks) { t.request = h })
}

// Pause makes the broker stop as a SIGSTOP'd process would look from
// outside: connections stay open but no request is read past the one in
// hand and no response is written; the replica fetchers and other requests
// to brokers wait; the registration lease's keepalives stop, so the lease
// expires after broker.session.timeout.ms and the cluster fences the broker.
// What keeps running inside (the embedded etcd member, the maintenance
// loops) is not seen from outside but through the control plane. It exists
// for tests (straittest's Pause). Pausing a paused broker does nothing.
func (s *Server) Pause() {
	paused := false
	s.hooks.update(func(t *testHooks) {
		if t.paused == nil {
			t.paused = make(chan struct{})
			paused = true
		}
	})
	if paused && s.ctrl != nil {
		s.ctrl.Pause()
	}
}

// Resume undoes Pause: connections are served again, fetchers go on, and
// the broker registers again (a new lease, after revoking the old one if it
// has not expired yet).
func (s *Server) Resume() {
	var ch chan struct{}
	s.hooks.update(func(t *testHooks) { ch, t.paused = t.paused, nil })
	if ch == nil {
		return
	}
	close(ch)
	if s.ctrl != nil {
		s.ctrl.Resume()
	}
}

// SetPeerFilter makes the brokers for which unreachable returns true
// unreachable from this one: its requests to them (replica fetches,
// transaction markers) fail at once as if the dial had failed, and its
// connections to them close now. nil removes the filter. It exists for
// tests (straittest's Isolate): set on both sides, it is a network
// partition between brokers; clients and etcd still reach the broker.
func (s *Server) SetPeerFilter(unreachable func(nodeID int32) bool) {
	s.hooks.update(func(t *testHooks) { t.unreachable = unreachable })
	if unreachable != nil {
		s.closeInterBrokerClients()
	}
}

// JumpClock moves the broker's clock by d (back when d is negative), as an
// NTP step or a host with a skewed clock would, and returns its new offset
// from the system time. Everything Kafka times on its wall clock moves with
// it: LogAppendTime, retention.ms, segment.ms, transaction timeouts,
// producer-id and delegation-token expiry, SASL session lifetimes, ISR lag,
// fetch-session eviction. It exists for tests (straittest's JumpClock) and
// fails unless the broker's clock is adjustable (config.Config.Clock a
// *clock.Offset).
func (s *Server) JumpClock(d time.Duration) (time.Duration, error) {
	j, ok := s.clock.(jumper)
	if !ok {
		return 0, fmt.Errorf("broker: its clock (%T) cannot be moved", s.clock)
	}
	return j.Jump(d), nil
}

// jumper is a clock JumpClock can move (clock.Offset).
type jumper interface {
	Jump(time.Duration) time.Duration
}

// Now is the time on the broker's clock.
func (s *Server) Now() time.Time { return s.clock.Now() }

// errPeerUnreachable is the error of a request to a broker SetPeerFilter
// made unreachable.
var errPeerUnreachable = fmt.Errorf("unreachable (partitioned by a test): %w", kerr.BrokerNotAvailable)

// peerGate waits while the broker is paused (until ctx ends) and refuses a
// peer made unreachable; sendToBroker calls it before each request.
func (s *Server) peerGate(ctx context.Context, id int32) error {
	hk := s.hooks.ptr.Load()
	if hk == nil {
		return nil
	}
	if hk.paused != nil {
		select {
		case <-hk.paused:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return net.ErrClosed
		}
		return s.peerGate(ctx, id)
	}
	if hk.unreachable != nil && hk.unreachable(id) {
		return fmt.Errorf("broker %d: %w", id, errPeerUnreachable)
	}
	return nil
}

// waitUnpaused waits while the broker is paused; false if the connection
// or the broker closed meanwhile.
func (c *conn) waitUnpaused(hk *testHooks) bool {
	for hk != nil && hk.paused != nil {
		select {
		case <-hk.paused:
		case <-c.dead:
			return false
		case <-c.srv.closing:
			return false
		}
		hk = c.srv.hooks.ptr.Load()
	}
	return true
}

// hookRequest asks the request hook, if one is set, about req before it
// is handled (the read loop waited already while the broker was paused).
// handled reports that the request was answered here (or dropped); ok
// false closes the connection.
func (c *conn) hookRequest(req *protocol.Request) (handled, ok bool) {
	hk := c.srv.hooks.ptr.Load()
	if hk == nil || hk.request == nil {
		return false, true
	}
	act := hk.request(RequestInfo{
		Listener:  c.listener,
		ClientID:  req.ClientIDString(),
		Principal: c.principal().String(),
		Remote:    c.nc.RemoteAddr(),
		Key:       req.Key,
		Version:   req.Version,
		Body:      req.Body,
	})
	if act.Delay > 0 {
		t := time.NewTimer(act.Delay)
		select {
		case <-t.C:
		case <-c.dead:
			t.Stop()
			return true, false
		case <-c.srv.closing:
			t.Stop()
			return true, false
		}
	}
	switch {
	case act.Drop:
		return true, false
	case act.Response != nil:
		x := &exchange{c: c, req: req}
		if !c.enqueue(x) {
			return true, false
		}
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			x.noResponse() // the client reads no response to an acks=0 produce
			return true, true
		}
		x.respond(act.Response)
		return true, true
	}
	return false, true
}
