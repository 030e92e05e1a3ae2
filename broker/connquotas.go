package broker

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/loglimit"
)

// connQuotas is Kafka's ConnectionQuotas for max.connections,
// listener.name.<l>.max.connections and max.connections.per.ip(.overrides):
// the count of open connections, in total, by listener and by remote IP. A
// connection past its IP's limit is closed right after accept; while the
// broker holds max.connections, or a listener its own limit, that
// listener's accept loop waits for one to close (Kafka blocks its acceptor
// the same way). The inter-broker listener is exempt from max.connections
// when there are others (Kafka's protected listener; Kafka also closes
// another listener's least recently used connection then, which Strait does
// not), never from its own limit. The limits change at runtime (update).
type connQuotas struct {
	overrides map[string]int // by IP
	protected string         // listener exempt from max, "" when none

	mu          sync.Mutex
	max         int
	perIP       int
	listenerMax map[string]int // by listener name; absent: none
	total       int
	byIP        map[string]int
	byListener  map[string]int
	freed       chan struct{} // closed and replaced when a connection closes or a limit changes

	refused atomic.Int64
	log     loglimit.Limiter
}

func newConnQuotas(cfg *config.Config, logger *slog.Logger) *connQuotas {
	l := cfg.Limits
	q := &connQuotas{
		byIP:       make(map[string]int),
		byListener: make(map[string]int),
		freed:      make(chan struct{}),
	}
	q.setLimits(l)
	if len(cfg.Network.Listeners) > 1 {
		q.protected = cfg.Network.InterBrokerListenerName
	}
	if len(l.MaxConnectionsPerIPOverrides) > 0 {
		q.overrides = make(map[string]int)
		for host, n := range l.MaxConnectionsPerIPOverrides {
			// Kafka resolves override hostnames once, at configuration.
			if ip := net.ParseIP(host); ip != nil {
				q.overrides[ip.String()] = int(n)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
			cancel()
			if err != nil {
				logger.Warn("max.connections.per.ip.overrides: host does not resolve; its override is ignored", "host", host, "err", err)
			}
			for _, ip := range ips {
				q.overrides[ip.String()] = int(n)
			}
		}
	}
	return q
}

// setLimits installs the limits of l; q.mu held or q not yet shared.
func (q *connQuotas) setLimits(l config.Limits) {
	q.max, q.perIP = int(l.MaxConnections), int(l.MaxConnectionsPerIP)
	q.listenerMax = nil
	for name, n := range l.ListenerMaxConnections {
		if q.listenerMax == nil {
			q.listenerMax = make(map[string]int)
		}
		q.listenerMax[name] = int(n)
	}
}

// update applies changed limits (dynamic broker configs): accept loops
// waiting for a slot look again, and connections already open past a
// lowered limit stay (as in Kafka).
func (q *connQuotas) update(l config.Limits) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.setLimits(l)
	close(q.freed)
	q.freed = make(chan struct{})
}

// ConnectionsRefused is the number of connections closed right after accept because
// their address had max.connections.per.ip open.
func (s *Server) ConnectionsRefused() int64 { return s.quotas.refused.Load() }

func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return host
}

// waitSlot blocks while the broker holds max.connections (unless listener
// is protected) or listener its own limit; false when closing came first.
func (q *connQuotas) waitSlot(listener string, closing <-chan struct{}) bool {
	if q == nil { // a Server built by hand in a test
		return true
	}
	protected := listener != "" && listener == q.protected
	for {
		q.mu.Lock()
		lmax, limited := q.listenerMax[listener]
		if (protected || q.total < q.max) && (!limited || q.byListener[listener] < lmax) {
			q.mu.Unlock()
			return true
		}
		ch := q.freed
		q.mu.Unlock()
		select {
		case <-ch:
		case <-closing:
			return false
		}
	}
}

// inc counts a new connection from ip on listener, or refuses it (false)
// when ip has its limit open.
func (q *connQuotas) inc(ip, listener string) bool {
	if q == nil {
		return true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	limit := q.perIP
	if n, ok := q.overrides[ip]; ok {
		limit = n
	}
	if q.byIP[ip] >= limit {
		q.refused.Add(1)
		return false
	}
	q.byIP[ip]++
	q.byListener[listener]++
	q.total++
	return true
}

func (q *connQuotas) dec(ip, listener string) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := q.byIP[ip] - 1; n > 0 {
		q.byIP[ip] = n
	} else {
		delete(q.byIP, ip)
	}
	q.byListener[listener]--
	q.total--
	close(q.freed)
	q.freed = make(chan struct{})
}

// logRefused logs a connection refused for its IP's limit, at most once a
// second with the count held back: a client reconnecting in a loop must
// not flood the log.
func (q *connQuotas) logRefused(logger *slog.Logger, listener, ip string, limit string) {
	if n, ok := q.log.Allow(time.Now()); ok {
		args := []any{"listener", listener, "remote_ip", ip}
		if n > 0 {
			args = append(args, "suppressed", n)
		}
		logger.Info("closing connection: "+limit+" reached", args...)
	}
}
