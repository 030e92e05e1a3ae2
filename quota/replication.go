package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Replication is one of a broker's replication throttles (Kafka's
// ReplicationQuotaManager): the bytes of throttled partitions that the
// leader serves to followers, or that a follower fetches, measured over
// replication.quota.window.num samples of
// replication.quota.window.size.seconds, against a bound in bytes a second
// (leader.replication.throttled.rate, follower.replication.throttled.rate;
// Long.MAX_VALUE, unlimited, by default).
//
// Callers record only the bytes of throttled partitions (their topic's
// *.replication.throttled.replicas names them), so a broker without such a
// topic never calls it. Thread-safety: safe for concurrent use; Bound is an
// atomic load, Record and Exceeded take a mutex.
type Replication struct {
	bound atomic.Int64 // bytes a second; math.MaxInt64: unlimited
	cfg   windowConfig
	mu    sync.Mutex
	r     rate
}

// Unlimited is the bound of a replication quota that is not set
// (QuotaConfig.QUOTA_BYTES_PER_SECOND_DEFAULT, Long.MAX_VALUE).
const Unlimited = math.MaxInt64

// NewReplication returns an unlimited replication quota measured over cfg's
// windows.
func NewReplication(cfg Config) *Replication {
	if cfg.Samples < 1 {
		cfg.Samples = DefaultConfig.Samples
	}
	if cfg.WindowSeconds < 1 {
		cfg.WindowSeconds = DefaultConfig.WindowSeconds
	}
	q := &Replication{cfg: windowConfig{samples: cfg.Samples, windowMs: int64(cfg.WindowSeconds) * 1000}}
	q.bound.Store(Unlimited)
	return q
}

// SetBound sets the rate in bytes a second (negative: unlimited), as
// ReplicationQuotaManager.updateQuota; the bytes recorded so far stay.
func (q *Replication) SetBound(bytesPerSecond int64) {
	if bytesPerSecond < 0 {
		bytesPerSecond = Unlimited
	}
	q.bound.Store(bytesPerSecond)
}

// Bound is the rate in bytes a second (Unlimited when not set).
func (q *Replication) Bound() int64 { return q.bound.Load() }

// Record counts n bytes of a throttled partition at now.
func (q *Replication) Record(n int64, now time.Time) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	q.r.record(q.cfg, float64(n), now.UnixMilli())
	q.mu.Unlock()
}

// Exceeded is ReplicationQuotaManager.isQuotaExceeded: whether the measured
// rate is above the bound (Quota.upperBound: equal is acceptable). An
// unlimited quota is never exceeded.
func (q *Replication) Exceeded(now time.Time) bool {
	bound := q.bound.Load()
	if bound == Unlimited {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.r.measure(q.cfg, now.UnixMilli()) > float64(bound)
}

// Rate is the measured rate in bytes a second.
func (q *Replication) Rate(now time.Time) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.r.measure(q.cfg, now.UnixMilli())
}
