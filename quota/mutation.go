package quota

import (
	"math"
	"sync"
	"time"
)

// MutationManager keeps the controller_mutation_rate token buckets per Tags,
// as Kafka's ControllerMutationQuotaManager: a bucket holds up to
// samples*window seconds of the rate (11 s by default), starts full, refills
// at the rate, and each partition created or deleted takes a token.
type MutationManager struct {
	cfg windowConfig

	mu        sync.Mutex
	buckets   map[Tags]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens       float64
	limit, burst float64 // as last refilled
	lastMs       int64
	last         time.Time
}

// NewMutationManager makes the manager for controller.quota.window.num and
// controller.quota.window.size.seconds.
func NewMutationManager(cfg Config) *MutationManager {
	if cfg.Samples < 1 {
		cfg.Samples = DefaultConfig.Samples
	}
	if cfg.WindowSeconds < 1 {
		cfg.WindowSeconds = DefaultConfig.WindowSeconds
	}
	return &MutationManager{cfg: windowConfig{samples: cfg.Samples, windowMs: int64(cfg.WindowSeconds) * 1000}, buckets: map[Tags]*bucket{}}
}

// Mutation is one request's controller mutation quota (Kafka's
// ControllerMutationQuota): strict from the versions that can carry
// THROTTLING_QUOTA_EXCEEDED (the operation is refused while the bucket is
// empty), permissive before (always done, only throttled). A nil Mutation
// is unbounded.
type Mutation struct {
	m          *MutationManager
	tags       Tags
	limit      float64
	strict     bool
	throttle   time.Duration
	recordedAt time.Time
}

// New is the quota of a request from (user, clientID); nil without one.
func (m *MutationManager) New(s *Snapshot, user, clientID string, strict bool) *Mutation {
	tags, limit, ok := s.Resolve(ControllerMutationRate, user, clientID)
	if !ok {
		return nil
	}
	return &Mutation{m: m, tags: tags, limit: limit, strict: strict}
}

// refillLocked is TokenBucket.refill; the bucket is made full.
func (m *MutationManager) refillLocked(tags Tags, limit float64, now time.Time) *bucket {
	// A bucket that has refilled since its last use is as a new one:
	// forgotten (manager.go).
	expiry := time.Duration(int64(m.cfg.samples)*m.cfg.windowMs) * time.Millisecond
	if now.Sub(m.lastSweep) >= expiry {
		m.lastSweep = now
		for t, b := range m.buckets {
			if b.tokens+b.limit*now.Sub(b.last).Seconds() >= b.burst {
				delete(m.buckets, t)
			}
		}
	}
	burst := float64(m.cfg.samples) * float64(m.cfg.windowMs) / 1000 * limit
	ms := now.UnixMilli()
	b := m.buckets[tags]
	if b == nil && len(m.buckets) >= maxEntries {
		tags = overflowTags
		b = m.buckets[tags]
	}
	if b == nil {
		b = &bucket{tokens: burst, lastMs: ms}
		m.buckets[tags] = b
	}
	b.tokens = math.Min(burst, b.tokens+limit*float64(ms-b.lastMs)/1000)
	b.lastMs, b.last, b.limit, b.burst = ms, now, limit, burst
	return b
}

func (q *Mutation) violated(tokens float64, now time.Time) {
	// ControllerMutationQuotaManager.throttleTimeMs: the time to refill
	// the missing tokens.
	q.throttle = time.Duration(math.Round(-tokens/q.limit*1000)) * time.Millisecond
	q.recordedAt = now
}

// Exceeded reports, for a strict quota, that the operation must be refused
// with THROTTLING_QUOTA_EXCEEDED (the bucket is empty); it is then not
// recorded.
func (q *Mutation) Exceeded(now time.Time) bool {
	if q == nil || !q.strict {
		return false
	}
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	b := q.m.refillLocked(q.tags, q.limit, now)
	if b.tokens < 0 {
		q.violated(b.tokens, now)
		return true
	}
	return false
}

// Record takes the partitions an operation created or deleted.
func (q *Mutation) Record(partitions float64, now time.Time) {
	if q == nil {
		return
	}
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	b := q.m.refillLocked(q.tags, q.limit, now)
	b.tokens = math.Min(b.tokens, b.tokens-partitions)
	if !q.strict && b.tokens < 0 {
		q.violated(b.tokens, now)
	}
}

// Throttle is the time the response asks the client to wait: the last
// violation's, less the time since (Kafka's throttleTime).
func (q *Mutation) Throttle(now time.Time) time.Duration {
	if q == nil || q.throttle <= 0 {
		return 0
	}
	return max(0, q.throttle-now.Sub(q.recordedAt))
}
