package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// Broker-wide bounds on requests held in memory (config.Limits).

// inFlightLimit is how many requests a connection may have read and not
// yet answered: maxInFlight, or queued.max.requests if that is smaller.
// Kafka's queued.max.requests bounds its one request queue, shared by the
// connections, each of which has at most one request read at a time;
// Strait has no shared queue, so the key bounds each connection's pipeline.
func (s *Server) inFlightLimit() int32 {
	if q := s.cfg.Limits.QueuedMaxRequests; q > 0 && q < maxInFlight {
		return q
	}
	return maxInFlight
}

// requestBudget counts the bytes of the requests read and not yet answered,
// over every connection, for queued.max.request.bytes. As Kafka's
// SimpleMemoryPool (non-strict), a frame is admitted while the count is
// under the bound, even if it takes the count past it.
type requestBudget struct {
	mu    sync.Mutex
	used  int64
	peak  int64         // the highest used (the tests' view)
	freed chan struct{} // made by a waiter; closed when bytes are released
}

var errConnDead = errors.New("connection closed while waiting for queued.max.request.bytes")

// acquire waits until the count is under limit, then adds n; false if dead
// closes first.
func (b *requestBudget) acquire(n, limit int64, dead <-chan struct{}) bool {
	b.mu.Lock()
	for b.used >= limit {
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-dead:
			return false
		}
		b.mu.Lock()
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	b.mu.Unlock()
	return true
}

func (b *requestBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
}

// budgetReader passes a frame's 4-byte size through, then, before the
// first read of its body (before protocol.ReadFrame allocates for it),
// waits for the frame's bytes in the budget: while the broker holds
// queued.max.request.bytes, the connection is not read and the client's
// writes stall in TCP.
type budgetReader struct {
	r     io.Reader
	b     *requestBudget
	limit int64
	dead  <-chan struct{}
	hdr   [4]byte
	nhdr  int
	asked bool
	held  int64 // bytes acquired for this frame
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.nhdr < len(br.hdr) {
		if len(p) > len(br.hdr)-br.nhdr {
			p = p[:len(br.hdr)-br.nhdr]
		}
		n, err := br.r.Read(p)
		copy(br.hdr[br.nhdr:], p[:n])
		br.nhdr += n
		return n, err
	}
	if !br.asked {
		br.asked = true
		if size := int64(int32(binary.BigEndian.Uint32(br.hdr[:]))); size > 0 {
			if !br.b.acquire(size, br.limit, br.dead) {
				return 0, errConnDead
			}
			br.held = size
		}
	}
	return br.r.Read(p)
}
