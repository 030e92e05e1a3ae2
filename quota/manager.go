package quota

import (
	"math"
	"sync"
	"time"
)

// Config is the rate windows of the client quotas: quota.window.num samples
// of quota.window.size.seconds each (Kafka's defaults: 11 of 1 s).
type Config struct {
	Samples       int
	WindowSeconds int
}

// DefaultConfig is Kafka's defaults.
var DefaultConfig = Config{Samples: 11, WindowSeconds: 1}

// A rate idle for all its windows measures nothing (every sample is
// purged), and a token bucket idle that long is full again: forgetting
// either then changes no decision. Kafka keeps its sensors an hour for its
// metrics; Strait drops them once idle that long, so that a client cycling
// through client ids holds at most the windows' worth of entries, and at
// most maxEntries: past that, new tags share one overflow entry (their
// quota is then enforced on all of them together).
const maxEntries = 100_000

var overflowTags = Tags{ClientID: "\x00overflow"}

// Tags are the metric tags a rate is kept under (Kafka's quota metric
// tags): the user and client id the applying quota was set for, "" for a
// component the quota does not distinguish. All clients resolving to the
// same tags share one rate.
type Tags struct {
	User, ClientID string
	IP             string // connection_creation_rate's only tag
}

// Resolve is Kafka's DefaultQuotaCallback.quotaMetricTags followed by
// quotaLimit for key: the tags of the entity whose quota applies to a
// request of user and clientID, and that quota (ok false: none applies).
// Precedence: users/<user>/clients/<client-id>, users/<user>/clients/<default>,
// users/<user>, users/<default>/clients/<client-id>,
// users/<default>/clients/<default>, users/<default>, clients/<client-id>,
// clients/<default>.
func (s *Snapshot) Resolve(key, user, clientID string) (Tags, float64, bool) {
	if !s.Has(key) {
		return Tags{}, 0, false
	}
	u, c, du, dc := Named(user), Named(clientID), DefaultName(), DefaultName()
	// Kafka keeps one callback per quota type, holding the entities with
	// that type's key: the tags are picked among those, then the limit.
	exists := func(e Entity) bool { _, ok := s.entities[e][key]; return ok }
	var tags Tags
	switch {
	case exists(Entity{User: u, ClientID: c}), exists(Entity{User: u, ClientID: dc}):
		tags = Tags{User: user, ClientID: clientID}
	case exists(Entity{User: u}):
		tags = Tags{User: user}
	case exists(Entity{User: du, ClientID: c}), exists(Entity{User: du, ClientID: dc}):
		tags = Tags{User: user, ClientID: clientID}
	case exists(Entity{User: du}):
		tags = Tags{User: user}
	default:
		tags = Tags{ClientID: clientID}
	}
	lookup := func(es ...Entity) (float64, bool) {
		for _, e := range es {
			if v, ok := s.entities[e][key]; ok {
				return v, true
			}
		}
		return 0, false
	}
	var v float64
	var ok bool
	switch {
	case tags.User != "" && tags.ClientID != "":
		tu, tc := Named(tags.User), Named(tags.ClientID)
		v, ok = lookup(Entity{User: tu, ClientID: tc}, Entity{User: tu, ClientID: dc},
			Entity{User: du, ClientID: tc}, Entity{User: du, ClientID: dc})
	case tags.User != "":
		v, ok = lookup(Entity{User: Named(tags.User)}, Entity{User: du})
	case tags.ClientID != "":
		v, ok = lookup(Entity{ClientID: Named(tags.ClientID)}, Entity{ClientID: dc})
	}
	return tags, v, ok
}

// Manager keeps the rates of one quota type (producer bytes, consumer
// bytes, ...) per Tags, as Kafka's ClientQuotaManager its sensors.
type Manager struct {
	key string
	cfg windowConfig

	mu        sync.Mutex
	rates     map[Tags]*entry
	lastSweep time.Time
}

type entry struct {
	r    rate
	last time.Time
}

// NewManager makes the manager of quota key (ProducerByteRate, ...).
func NewManager(key string, cfg Config) *Manager {
	if cfg.Samples < 1 {
		cfg.Samples = DefaultConfig.Samples
	}
	if cfg.WindowSeconds < 1 {
		cfg.WindowSeconds = DefaultConfig.WindowSeconds
	}
	return &Manager{key: key, cfg: windowConfig{samples: cfg.Samples, windowMs: int64(cfg.WindowSeconds) * 1000}, rates: map[Tags]*entry{}}
}

// Key is the quota key the manager enforces.
func (m *Manager) Key() string { return m.key }

// Record is Kafka's maybeRecordAndGetThrottleTimeMs: with a quota applying
// to (user, clientID) in s, it adds value to that quota's rate and returns
// how long the client must wait (0: within its quota). Without one it
// records nothing.
func (m *Manager) Record(s *Snapshot, user, clientID string, value float64, now time.Time) time.Duration {
	tags, limit, ok := s.Resolve(m.key, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.recordLocked(tags, limit, value, now)
	if m.key == RequestPercentage {
		// ClientRequestQuotaManager bounds its throttle to one window.
		d = min(d, time.Duration(m.cfg.windowMs)*time.Millisecond)
	}
	return d
}

func (m *Manager) recordLocked(tags Tags, limit, value float64, now time.Time) time.Duration {
	ms := now.UnixMilli()
	m.sweepLocked(now)
	e := m.rates[tags]
	if e == nil {
		if len(m.rates) >= maxEntries {
			tags = overflowTags
			e = m.rates[tags]
		}
		if e == nil {
			e = &entry{}
			m.rates[tags] = e
		}
	}
	e.last = now
	e.r.record(m.cfg, value, ms)
	measured := e.r.measure(m.cfg, ms)
	if measured <= limit {
		return 0
	}
	// QuotaUtils.throttleTime: the excess over the bound, as a share of
	// the bound, of the window the rate was measured over.
	t := (measured - limit) / limit * float64(e.r.windowMs(m.cfg, ms))
	return time.Duration(math.Round(t)) * time.Millisecond
}

// RecordFixed records value against a quota of limit that applies to
// everything the manager counts (a broker-wide rate), returning the
// throttle time bounded by one window, as Kafka's ConnectionQuotas.
func (m *Manager) RecordFixed(limit, value float64, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	window := time.Duration(m.cfg.windowMs) * time.Millisecond
	if limit <= 0 {
		// Kafka's excess over a zero bound is infinite: one window.
		m.recordLocked(Tags{}, 1, value, now)
		return window
	}
	return min(m.recordLocked(Tags{}, limit, value, now), window)
}

// RecordConnection is Kafka's ConnectionQuotas.recordIpConnectionMaybeThrottle
// for a manager of ConnectionCreationRate: with a connection_creation_rate
// quota on ip (ips/<ip>, else ips/<default>) it counts a new connection and
// returns how long to hold it before closing it (0: accept it), at most one
// window; a refused connection is not counted.
func (m *Manager) RecordConnection(s *Snapshot, ip string, now time.Time) time.Duration {
	limit, ok := s.ConnectionRate(ip)
	if !ok {
		return 0
	}
	tags := Tags{IP: normalizeIP(ip)}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.recordLocked(tags, limit, 1, now)
	if d <= 0 {
		return 0
	}
	if e := m.rates[tags]; e != nil {
		e.r.unrecord(m.cfg, 1, now.UnixMilli())
	}
	return min(d, time.Duration(m.cfg.windowMs)*time.Millisecond)
}

// Unrecord takes back value recorded for (user, clientID): Kafka's
// unrecordQuotaSensor, for a Fetch answered empty because it was throttled.
func (m *Manager) Unrecord(s *Snapshot, user, clientID string, value float64, now time.Time) {
	tags, _, ok := s.Resolve(m.key, user, clientID)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.rates[tags]; e != nil {
		e.r.unrecord(m.cfg, value, now.UnixMilli())
	}
}

// MaxValueInWindow is Kafka's getMaxValueInQuotaWindow: the quota times
// (samples-1) windows, the most a Fetch may return at once; ok false
// without a quota.
func (m *Manager) MaxValueInWindow(s *Snapshot, user, clientID string) (float64, bool) {
	_, limit, ok := s.Resolve(m.key, user, clientID)
	if !ok {
		return 0, false
	}
	return limit * float64(m.cfg.samples-1) * float64(m.cfg.windowMs/1000), true
}

func (m *Manager) sweepLocked(now time.Time) {
	expiry := time.Duration(int64(m.cfg.samples)*m.cfg.windowMs) * time.Millisecond
	if now.Sub(m.lastSweep) < expiry {
		return
	}
	m.lastSweep = now
	for t, e := range m.rates {
		if now.Sub(e.last) >= expiry {
			delete(m.rates, t)
		}
	}
}
