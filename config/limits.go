package config

import (
	"strconv"
	"strings"
)

// Limits are the broker-wide bounds on the requests a broker holds in
// memory and on the connections it keeps (issue 17: no client can make the
// broker allocate without bound).
type Limits struct {
	// QueuedMaxRequests is queued.max.requests (500, at least 1). Kafka
	// queues up to this many read requests for its handler threads across
	// the broker, and reads one request per connection at a time. Strait
	// has no shared queue (a connection's requests are handled on its own
	// goroutine), so the key bounds what each connection may have read and
	// not yet answered: min(queued.max.requests, 64).
	QueuedMaxRequests int32
	// QueuedMaxRequestBytes is queued.max.request.bytes (-1: unbounded, as
	// in Kafka; any value up to 0 is unbounded). When positive, the bytes of
	// requests read and not yet answered, over every connection, are kept
	// at about this bound: a connection whose next frame would start while
	// the broker holds this much stops reading (its client sees TCP
	// back-pressure) until responses are written. As Kafka's memory pool,
	// one frame may take the total past the bound when any room is left.
	QueuedMaxRequestBytes int64
	// MaxConnections is max.connections (2147483647, at least 0): while the
	// broker holds this many connections it stops accepting (new ones wait
	// in the listen backlog), as Kafka's ConnectionQuotas.
	MaxConnections int32
	// MaxConnectionsPerIP is max.connections.per.ip (2147483647, at least
	// 0, and 0 only with overrides); MaxConnectionsPerIPOverrides is
	// max.connections.per.ip.overrides by host or IP. A connection over its
	// address's limit is closed right after accept.
	MaxConnectionsPerIP          int32
	MaxConnectionsPerIPOverrides map[string]int32
	// ListenerMaxConnections is listener.name.<l>.max.connections by
	// listener name (as in Network.Listeners): at most this many
	// connections on that listener, on top of MaxConnections (a listener at
	// its limit stops accepting as the broker does at its). Absent: no
	// listener limit.
	ListenerMaxConnections map[string]int32
	// ConnectionsMaxIdleMs is connections.max.idle.ms (600000; negative:
	// never): a connection with no request for this long is closed.
	ConnectionsMaxIdleMs int64
	// FDReserve is strait.fd.reserve (256, at least 0): the file
	// descriptors client connections may never take, kept for etcd,
	// segment rolls, checkpoints and replica fetchers. A connection
	// accepted while the process holds more than RLIMIT_NOFILE minus this
	// many descriptors is closed at once (capped at half the limit, so
	// that a small limit still takes clients).
	FDReserve int32
}

// parseListenerLimits reads listener.name.<l>.max.connections for each
// listener (once the listeners are parsed).
func parseListenerLimits(p *props, l *Limits, listeners []Listener) {
	for _, ls := range listeners {
		key := listenerPrefix(ls.Name) + "max.connections"
		if !p.has(key) {
			continue
		}
		n := p.int(key)
		p.atLeast(key, int64(n), 0)
		if l.ListenerMaxConnections == nil {
			l.ListenerMaxConnections = make(map[string]int32)
		}
		l.ListenerMaxConnections[ls.Name] = n
	}
}

func parseLimits(p *props) Limits {
	l := Limits{
		QueuedMaxRequests:     p.intAtLeast("queued.max.requests", 1),
		QueuedMaxRequestBytes: p.long("queued.max.request.bytes"),
		MaxConnections:        p.intAtLeast("max.connections", 0),
		MaxConnectionsPerIP:   p.intAtLeast("max.connections.per.ip", 0),
		ConnectionsMaxIdleMs:  p.long("connections.max.idle.ms"),
		FDReserve:             p.intAtLeast("strait.fd.reserve", 0),
	}
	const okey = "max.connections.per.ip.overrides"
	for _, e := range parseCsvList(p.str(okey)) {
		// Kafka's getMap: host:count entries, the count an int.
		i := strings.LastIndexByte(e, ':')
		n, err := strconv.ParseInt(strings.TrimSpace(e[i+1:]), 10, 32)
		if i <= 0 || err != nil || n < 0 {
			p.fail(invalidValue(okey, p.raw(okey), "Each entry must be host:count with a count of at least 0"))
			break
		}
		if l.MaxConnectionsPerIPOverrides == nil {
			l.MaxConnectionsPerIPOverrides = make(map[string]int32)
		}
		l.MaxConnectionsPerIPOverrides[strings.TrimSpace(e[:i])] = int32(n)
	}
	if l.MaxConnectionsPerIP == 0 && len(l.MaxConnectionsPerIPOverrides) == 0 {
		p.fail(&ConfigError{Key: "max.connections.per.ip", Message: "requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."})
	}
	return l
}
