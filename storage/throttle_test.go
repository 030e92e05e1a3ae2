package storage

import (
	"math"
	"testing"
	"time"

	"github.com/strait/strait/storage/compress"
)

// fakeThrottleClock advances by step at each reading and records sleeps
// (a sleep advances it too).
type fakeThrottleClock struct {
	t      time.Time
	step   time.Duration
	sleeps []time.Duration
}

func (c *fakeThrottleClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func (c *fakeThrottleClock) sleep(d time.Duration, _ <-chan struct{}) {
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
}

func fakeThrottler(rate float64, step time.Duration) (*throttler, *fakeThrottleClock) {
	clk := &fakeThrottleClock{t: testEpoch, step: step}
	th := newThrottler(rate, clk.now)
	th.sleep = clk.sleep
	return th, clk
}

// Kafka's Throttler arithmetic: once the check interval (300 ms) has
// passed, a rate over the limit sleeps the time the bytes should have
// taken less the time they did, and a new period begins.
func TestThrottlerSleepsToTheRate(t *testing.T) {
	th, clk := fakeThrottler(1000, 0)
	clk.t = clk.t.Add(100 * time.Millisecond)
	th.maybeThrottle(500, nil) // 100 ms into the period: not checked yet
	if len(clk.sleeps) != 0 {
		t.Fatalf("slept %v within the check interval", clk.sleeps)
	}
	clk.t = clk.t.Add(300 * time.Millisecond)
	th.maybeThrottle(500, nil) // 1000 bytes in 400 ms: 2500 B/s
	if len(clk.sleeps) != 1 || clk.sleeps[0] != 600*time.Millisecond {
		t.Fatalf("slept %v, want [600ms]", clk.sleeps)
	}
	clk.t = clk.t.Add(time.Second)
	th.maybeThrottle(200, nil) // 200 bytes in 1 s: under the limit
	if len(clk.sleeps) != 1 {
		t.Fatalf("slept %v under the limit", clk.sleeps)
	}
	// Kafka's default (Double.MaxValue), no limit, and a nil throttler
	// never sleep.
	for _, rate := range []float64{math.MaxFloat64, math.Inf(1), 0} {
		th, clk := fakeThrottler(rate, time.Second)
		th.maybeThrottle(1<<40, nil)
		th.maybeThrottle(1<<40, nil)
		if len(clk.sleeps) != 0 {
			t.Fatalf("rate %v slept %v", rate, clk.sleeps)
		}
	}
	var none *throttler
	none.maybeThrottle(1<<40, nil)
}

// A sleep ends when the cleaner stops.
func TestThrottlerSleepEndsOnStop(t *testing.T) {
	th := newThrottler(1, nil)
	th.periodStart = time.Now().Add(-time.Second)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		th.maybeThrottle(1<<30, stop) // a sleep of years at 1 B/s
		close(done)
	}()
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the throttled sleep did not end on stop")
	}
}

// log.cleaner.io.max.bytes.per.second: the cleaner's reads and writes go
// through the throttler, which makes it sleep when over the rate; the
// cleaning's result is the same.
func TestCleanerIOThrottled(t *testing.T) {
	for _, limited := range []bool{false, true} {
		l := openTestLog(t, t.TempDir(), compactConfig(), &testClock{testEpoch})
		orig := keyedLog(t, l, compress.None, 60, 4, 13, testEpoch.UnixMilli()-60_000)
		l.UpdateHighWatermark(l.LogEndOffset())
		c := testCleaner(t, l)
		rate := math.MaxFloat64
		if limited {
			rate = 4096 // bytes per second: the log holds far more
		}
		th, clk := fakeThrottler(rate, 50*time.Millisecond)
		c.throttle = th
		res, cleaned := cleanOnce(t, c, testEpoch)
		if !cleaned || res.BytesRead == 0 || res.BytesWritten == 0 {
			t.Fatalf("clean result %+v", res)
		}
		if got := len(clk.sleeps) > 0; got != limited {
			t.Fatalf("limited %v: slept %v; clock at %v, observed %v", limited, clk.sleeps, clk.t.Sub(testEpoch), th.observed)
		}
		if limited {
			// Over the whole cleaning the throttled time covers most of what
			// the bytes should take at the rate (the last period may end
			// unchecked).
			var slept time.Duration
			for _, d := range clk.sleeps {
				slept += d
			}
			elapsed := clk.t.Sub(testEpoch)
			min := time.Duration(float64(res.BytesRead+res.BytesWritten)/rate*float64(time.Second)) / 2
			if elapsed < min || slept == 0 {
				t.Fatalf("%d bytes in %v (slept %v), want at least %v", res.BytesRead+res.BytesWritten, elapsed, slept, min)
			}
		}
		checkCompacted(t, orig, allRecords(readLog(t, l)), res.EndOffset)
		l.Close()
	}
}
