package broker

// The file descriptor reserve (strait.fd.reserve, issue 17): client
// connections share RLIMIT_NOFILE with the embedded etcd (WAL, snapshots,
// its own connections), segment and index files, checkpoints and replica
// fetchers. A flood of connections that takes the last descriptors makes
// those fail with EMFILE: a segment roll or a checkpoint write then fails,
// and etcd's WAL purge exits the process. So a connection accepted while
// the process holds more than the limit minus the reserve is closed at
// once, counted and logged (rate limited), and the broker keeps the
// reserve for itself.
//
// Counting /proc/self/fd costs a read of every entry, so it is sampled at
// most every fdSampleInterval; between samples the count moves with the
// client connections opened and closed (the files the broker opens itself
// meanwhile are what the reserve is for). Where /proc/self/fd cannot be
// read (not Linux) there is no reserve; accept's EMFILE back-off remains.

import (
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/internal/fdlimit"
	"github.com/strait/strait/internal/loglimit"
)

const fdSampleInterval = 100 * time.Millisecond

type fdGuard struct {
	limit   int // soft RLIMIT_NOFILE; 0: no reserve
	reserve int

	mu        sync.Mutex
	sampledAt time.Time
	base      int // descriptors open at sampledAt
	baseConns int // client connections open at sampledAt

	refused atomic.Int64
	log     loglimit.Limiter
}

// newFDGuard returns the guard for a reserve of reserve descriptors under
// the current soft limit, at most half of it.
func newFDGuard(reserve int32, logger *slog.Logger) *fdGuard {
	g := &fdGuard{}
	soft, _, err := fdlimit.Get()
	if err != nil || soft == 0 || soft > 1<<30 {
		return g
	}
	if _, err := countOpenFDs(); err != nil {
		logger.Info("open descriptors cannot be counted; strait.fd.reserve is not enforced", "err", err)
		return g
	}
	g.limit = int(soft)
	g.reserve = min(int(reserve), g.limit/2)
	return g
}

// countOpenFDs is the number of descriptors this process has open.
func countOpenFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		n += len(names)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	return n - 1, nil // not the directory's own
}

// admit reports whether a connection just accepted (its socket open) may
// stay, conns being the client connections open besides it, and the
// descriptors the process is estimated to hold.
func (g *fdGuard) admit(conns int) (ok bool, open int) {
	if g == nil || g.limit == 0 {
		return true, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := time.Now(); now.Sub(g.sampledAt) >= fdSampleInterval {
		n, err := countOpenFDs()
		if err != nil {
			// Not even /proc/self/fd opens: the process is at its limit.
			g.refused.Add(1)
			return false, g.limit
		}
		g.sampledAt, g.base, g.baseConns = now, n, conns
	}
	open = g.base + conns - g.baseConns
	if open > g.limit-g.reserve {
		g.refused.Add(1)
		return false, open
	}
	return true, open
}

// logRefused logs a connection closed for the reserve, at most once a
// second with the count held back.
func (g *fdGuard) logRefused(logger *slog.Logger, listener string, open int) {
	if n, ok := g.log.Allow(time.Now()); ok {
		args := []any{"listener", listener, "open_descriptors", open, "limit", g.limit, "reserve", g.reserve}
		if n > 0 {
			args = append(args, "suppressed", n)
		}
		logger.Warn("closing connection: file descriptor reserve reached (strait.fd.reserve)", args...)
	}
}

// FDReserveRefused is the number of connections closed right after accept
// because the process held more descriptors than RLIMIT_NOFILE minus
// strait.fd.reserve.
func (s *Server) FDReserveRefused() int64 { return s.fds.refused.Load() }
