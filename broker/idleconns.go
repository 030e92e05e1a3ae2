package broker

import (
	"log/slog"
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
// A stalled write is closed sooner when it holds segment files that other
// clients' reads wait for (sweepConns).
//
// The per-request cost is one atomic store of a coarse clock that the
// sweeper advances on each tick.

// idleTick is how often the sweeper looks: a tenth of the idle time,
// between 10 ms and 1 s.
func idleTick(idle time.Duration) time.Duration {
	return min(max(idle/10, 10*time.Millisecond), time.Second)
}

// touch records activity on c (a request read, a response's write begun,
// a part of one written).
func (c *conn) touch() { c.lastActive.Store(c.srv.coarseNow.Load()) }

// stalledWriteLimit is how long a response write may make no progress
// while reads are declined for the segment file bound before the broker
// closes the connection (sweepConns). A Kafka client's default
// request.timeout.ms: by then the client has given up on that response
// itself.
const stalledWriteLimit = 30 * time.Second

// sweepConns closes the connections idle past connections.max.idle.ms, and
// those whose response write has made no progress for stalledWriteLimit
// while the files held by reads are at the segment file cache's bound,
// until the broker closes. A client that stops reading a response keeps
// the segment files it is sent from held; at the bound other clients'
// reads that need a file opened are declined (storage.FileCache), so one
// such client could otherwise starve every consumer until its idle
// expiry (10 minutes by default). Kafka holds every segment file open and
// has no such bound, nor this need.
func (s *Server) sweepConns() {
	idle := time.Duration(s.cfg.Limits.ConnectionsMaxIdleMs) * time.Millisecond
	tick := time.Second
	if idle >= 0 {
		tick = idleTick(idle)
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case now := <-t.C:
			n := now.UnixNano()
			s.coarseNow.Store(n)
			stallLimit := int64(-1)
			if s.segmentFilesAtBound() {
				stallLimit = s.stallLimit.Load()
			}
			if idle < 0 && stallLimit < 0 {
				continue
			}
			var expired, stalled []*conn
			s.connsMu.Lock()
			for c := range s.conns {
				quiet := n - c.lastActive.Load()
				switch {
				case idle >= 0 && quiet > int64(idle):
					expired = append(expired, c)
				case stallLimit >= 0 && quiet > stallLimit:
					stalled = append(stalled, c)
				}
			}
			s.connsMu.Unlock()
			for _, c := range expired {
				s.idleExpired.Add(1)
				c.logger().Debug("closing connection idle past connections.max.idle.ms", "idle_ms", s.cfg.Limits.ConnectionsMaxIdleMs)
				c.teardown()
			}
			for _, c := range stalled {
				c.mu.Lock()
				writing := c.writing
				c.mu.Unlock()
				if !writing {
					continue // idle, holding no response
				}
				s.stalledClosed.Add(1)
				held, bound := s.replicas.FileCache().Held(), s.segmentFileBound()
				s.logLimited(&s.stalledLog, slog.LevelWarn, "closing connection whose response write made no progress while reads wait for segment files",
					"client", c.nc.RemoteAddr().String(), "stalled_ms", time.Duration(n-c.lastActive.Load()).Milliseconds(),
					"held_files", held, "bound", bound)
				c.teardown()
			}
		}
	}
}

// segmentFileBound is the segment file cache's bound on files held by
// reads.
func (s *Server) segmentFileBound() int {
	_, total := s.replicas.FileCache().Bounds()
	return total
}

// segmentFilesAtBound reports whether the files held by reads have reached
// the segment file cache's bound, so that reads needing a file opened are
// declined.
func (s *Server) segmentFilesAtBound() bool {
	return s.replicas != nil && s.replicas.FileCache() != nil && s.replicas.FileCache().Held() >= s.segmentFileBound()
}

// IdleConnectionsClosed is the number of connections closed for idling
// past connections.max.idle.ms (or for a write that made no progress as
// long) since the broker started.
func (s *Server) IdleConnectionsClosed() int64 { return s.idleExpired.Load() }

// StalledConnectionsClosed is the number of connections closed because
// their response write made no progress for stalledWriteLimit while the
// segment files held by reads were at their bound.
func (s *Server) StalledConnectionsClosed() int64 { return s.stalledClosed.Load() }
