package broker

import (
	"time"
)

// Idle expiry (connections.max.idle.ms), as Kafka's Selector: a connection
// with no request read and no response written for that long is closed.
// This also bounds a client that never reads its responses: its blocked
// write makes no progress, so after connections.max.idle.ms the connection
// is closed, the write fails, and its goroutine and held responses (and
// their queued.max.request.bytes) are released. Kafka has no write timeout
// either; its idle expiry is what closes such a connection.
//
// The per-request cost is one atomic store of a coarse clock that the
// sweeper advances on each tick.

// idleTick is how often the sweeper looks: a tenth of the idle time,
// between 10 ms and 1 s.
func idleTick(idle time.Duration) time.Duration {
	return min(max(idle/10, 10*time.Millisecond), time.Second)
}

// touch records activity on c (a request read, a response written).
func (c *conn) touch() { c.lastActive.Store(c.srv.coarseNow.Load()) }

// expireIdleConns closes the connections idle past connections.max.idle.ms
// until the broker closes.
func (s *Server) expireIdleConns() {
	idle := time.Duration(s.cfg.Limits.ConnectionsMaxIdleMs) * time.Millisecond
	t := time.NewTicker(idleTick(idle))
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case now := <-t.C:
			n := now.UnixNano()
			s.coarseNow.Store(n)
			var expired []*conn
			s.connsMu.Lock()
			for c := range s.conns {
				if n-c.lastActive.Load() > int64(idle) {
					expired = append(expired, c)
				}
			}
			s.connsMu.Unlock()
			for _, c := range expired {
				s.idleExpired.Add(1)
				c.logger().Debug("closing connection idle past connections.max.idle.ms", "idle_ms", s.cfg.Limits.ConnectionsMaxIdleMs)
				c.teardown()
			}
		}
	}
}

// IdleConnectionsClosed is the number of connections closed for idling
// past connections.max.idle.ms (or for a write that made no progress as
// long) since the broker started.
func (s *Server) IdleConnectionsClosed() int64 { return s.idleExpired.Load() }
