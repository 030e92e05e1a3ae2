package storage

import (
	"math"
	"sync"
	"time"
)

// throttler is Kafka's Throttler as the log cleaner uses it
// (log.cleaner.io.max.bytes.per.second): callers report the bytes they
// read or wrote, and once a check interval has passed with the rate over
// the limit, the caller sleeps for as long as brings the average since
// the interval began down to it. One throttler serves every cleaner
// worker, and a worker sleeps holding it, as Kafka's synchronized
// maybeThrottle does, so the limit is on their sum.
type throttler struct {
	mu          sync.Mutex
	rate        float64 // bytes per second; <= 0, +Inf or NaN: no limit
	interval    time.Duration
	periodStart time.Time
	observed    float64

	now   func() time.Time
	sleep func(d time.Duration, stop <-chan struct{}) // returns early on stop
}

// cleanerThrottleInterval is Kafka's checkIntervalMs for the cleaner's
// throttler.
const cleanerThrottleInterval = 300 * time.Millisecond

func newThrottler(rate float64, now func() time.Time) *throttler {
	if now == nil {
		now = time.Now
	}
	return &throttler{rate: rate, interval: cleanerThrottleInterval, periodStart: now(), now: now, sleep: sleepOrStop}
}

// limited says the throttler can make a caller wait.
func (t *throttler) limited() bool {
	return t != nil && t.rate > 0 && !math.IsInf(t.rate, 1) && t.rate < math.MaxFloat64
}

// maybeThrottle accounts n bytes and sleeps if the rate is over the limit
// (Throttler.maybeThrottle), returning early once stop is closed.
func (t *throttler) maybeThrottle(n int64, stop <-chan struct{}) {
	if !t.limited() || n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observed += float64(n)
	now := t.now()
	elapsed := now.Sub(t.periodStart)
	if elapsed <= t.interval {
		return
	}
	if t.observed*float64(time.Second)/float64(elapsed) > t.rate {
		// The time the bytes observed should have taken, less the time
		// they did.
		sleepMs := math.Round(t.observed/(t.rate/1000) - float64(elapsed.Milliseconds()))
		if sleepMs > 0 {
			t.sleep(time.Duration(sleepMs)*time.Millisecond, stop)
		}
	}
	t.periodStart = t.now()
	t.observed = 0
}

func sleepOrStop(d time.Duration, stop <-chan struct{}) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-stop:
	}
}
