package replication

import (
	"slices"
	"testing"
	"time"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/recordbatch"
)

// everyPass is a pass state whose passes all check retention and producer
// expiry (log.retention.check.interval.ms elapsed each time).
func everyPass() *passState { return &passState{} }

// pass runs one maintenance pass at the env's clock.
func (e *testEnv) pass(ps *passState) int {
	e.m.maintenancePass(ps, time.Now(), e.clock.Now())
	return ps.lastVisits
}

// TestMaintenanceVisitsOnlyWhatChanged: a pass visits the partitions whose
// log or state changed and those with a deadline due, not every hosted
// one; an idle partition leaves the schedule once its active segment's
// descriptor is released, and a deleted one at once.
func TestMaintenanceVisitsOnlyWhatChanged(t *testing.T) {
	e := newEnv(t, nil, nil)
	const n = 50
	replicas := make([][]int32, n)
	for i := range replicas {
		replicas[i] = []int32{1}
	}
	e.topic("idle", replicas...)
	ps := everyPass()
	if got := e.pass(ps); got != n {
		t.Fatalf("first pass visited %d partitions, want the %d new ones", got, n)
	}
	// Empty: their active segments were released at once.
	if got := e.m.sched.scheduled(qTick); got != 0 {
		t.Fatalf("%d empty partitions with a deadline, want none", got)
	}
	if got := e.pass(ps); got != 0 {
		t.Fatalf("a pass with nothing changed visited %d partitions", got)
	}
	for i := range 10 {
		produce(t, e.m.Partition("idle", int32(i)), 1)
	}
	if got := e.pass(ps); got != 10 {
		t.Fatalf("a pass after appends to 10 partitions visited %d, want 10", got)
	}
	// Each waits for its active segment to be idle a minute.
	if got := e.m.sched.scheduled(qTick); got != 10 {
		t.Fatalf("%d partitions with a deadline, want 10", got)
	}
	p := e.m.Partition("idle", 7)
	produce(t, p, 1)
	if got := e.pass(ps); got != 1 {
		t.Fatalf("a pass after one append visited %d partitions, want 1", got)
	}
	e.clock.Advance(activeSegmentIdle)
	if got := e.pass(ps); got != 10 {
		t.Fatalf("a pass a minute later visited %d partitions, want 10 (idle release due)", got)
	}
	if got := e.m.sched.scheduled(qTick); got != 0 {
		t.Fatalf("%d partitions still scheduled after their release", got)
	}
	if open := e.m.files.Open(); open > n {
		t.Fatalf("%d segment files open in the cache", open)
	}
	e.clock.Advance(time.Hour)
	if got := e.pass(ps); got != 0 {
		t.Fatalf("a pass over idle partitions visited %d", got)
	}

	// Deleted: out of every queue.
	produce(t, p, 1)
	e.pass(ps)
	ti, _ := e.meta.Topic("idle")
	e.m.apply(controller.TopicChange{Topic: ti, Deleted: true})
	if e.m.TopicByName("idle") != nil {
		t.Fatal("topic not deleted")
	}
	e.pass(ps)
	for q := range numQueues {
		if got := e.m.sched.scheduled(q); got != 0 {
			t.Fatalf("queue %d holds %d partitions of a deleted topic", q, got)
		}
	}
}

// TestMaintenanceRetentionByDeadline: retention runs when the oldest
// segment's records pass retention.ms by the broker's clock (a clock jump
// forward too), and a config change takes effect at the next check.
func TestMaintenanceRetentionByDeadline(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.topic("r", []int32{1})
	p := leaderOf(t, e, "r")
	produce(t, p, 5)
	ps := everyPass()
	e.pass(ps)
	if got := e.m.sched.scheduled(qRetention); got != 1 {
		t.Fatalf("retention queue holds %d, want the partition (retention.ms of 7 days)", got)
	}
	e.clock.Advance(24 * time.Hour)
	e.pass(ps)
	if lso := p.Log().LogStartOffset(); lso != 0 {
		t.Fatalf("log start offset %d a day after, with retention.ms of 7 days", lso)
	}

	// retention.ms lowered to an hour (as IncrementalAlterConfigs, through
	// applyTopic's SetConfig): deleted at the next check.
	cfg := p.Log().Config()
	cfg.RetentionMs = time.Hour.Milliseconds()
	p.Log().SetConfig(cfg)
	e.pass(ps)
	if lso := p.Log().LogStartOffset(); lso != 5 {
		t.Fatalf("log start offset %d after retention.ms went to an hour, want 5", lso)
	}

	// Records written now go once the clock jumps two hours.
	produceAt(t, p, 3, e.clock.Now())
	e.pass(ps)
	if lso := p.Log().LogStartOffset(); lso != 5 {
		t.Fatalf("log start offset %d, want 5 before the jump", lso)
	}
	e.clock.Advance(2 * time.Hour)
	e.pass(ps)
	if lso := p.Log().LogStartOffset(); lso != 8 {
		t.Fatalf("log start offset %d after a 2h jump with retention.ms=1h, want 8", lso)
	}
	// Nothing left to delete: off the retention queue.
	e.pass(ps)
	if got := e.m.sched.scheduled(qRetention); got != 0 {
		t.Fatalf("retention queue holds %d with an empty log", got)
	}

	// Retention is looked at only when log.retention.check.interval.ms
	// elapsed on the monotonic clock.
	produceAt(t, p, 2, e.clock.Now())
	slow := &passState{retention: periodic{interval: time.Hour, last: time.Now()}}
	e.pass(slow)
	e.clock.Advance(2 * time.Hour)
	e.pass(slow)
	if lso := p.Log().LogStartOffset(); lso != 8 {
		t.Fatalf("log start offset %d: retention ran before its check interval", lso)
	}
}

// TestMaintenanceFlushMs: flush.ms flushes a partition once it is due,
// scheduled by the append that left it unflushed.
func TestMaintenanceFlushMs(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.topic("f", []int32{1})
	p := leaderOf(t, e, "f")
	cfg := p.Log().Config()
	cfg.FlushMs = 1000
	p.Log().SetConfig(cfg)
	ps := everyPass()
	produce(t, p, 1)
	e.pass(ps) // the first flush: due since open
	produce(t, p, 1)
	e.pass(ps)
	at, due := p.Log().NextFlush()
	if !due {
		t.Fatal("nothing unflushed after an append under flush.ms")
	}
	e.clock.Advance(at.Sub(e.clock.Now()))
	e.pass(ps)
	if _, due := p.Log().NextFlush(); due {
		t.Fatal("not flushed once flush.ms passed")
	}
}

// TestMaintenanceISRShrinkByDeadline: a leader's ISR check comes
// replica.lag.time.max.ms after its followers last caught up; a follower
// that keeps fetching moves it later.
func TestMaintenanceISRShrinkByDeadline(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReplicaLagTimeMax = 10 * time.Second }, nil)
	e.topic("shrink", []int32{1, 2, 3})
	p := leaderOf(t, e, "shrink")
	ps := everyPass()
	e.pass(ps)
	if got := e.m.sched.scheduled(qTick); got != 1 {
		t.Fatalf("tick queue holds %d, want the leader", got)
	}
	e.clock.Advance(9 * time.Second)
	p.FollowerFetched(2, 102, 0, 0)
	p.FollowerFetched(3, 103, 0, 0)
	e.clock.Advance(2 * time.Second) // 11 s after the start, 2 s after the fetches
	if got := e.pass(ps); got != 1 {
		t.Fatalf("pass at the first deadline visited %d", got)
	}
	e.isr.noISR(t)
	e.clock.Advance(5 * time.Second)
	p.FollowerFetched(2, 102, 0, 0)
	e.clock.Advance(4 * time.Second) // follower 3 silent for 11 s
	e.pass(ps)
	if isr := e.isr.awaitISR(t); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("proposed ISR %v, want [1 2]", isr)
	}
}

// produceAt appends n records stamped at as leader.
func produceAt(t *testing.T, p *Partition, n int, at time.Time) {
	t.Helper()
	b := recordbatch.NewBuilder(at.UnixMilli())
	for range n {
		b.Add(nil, []byte("v"))
	}
	if _, err := p.Log().AppendAsLeader(b.Build(), p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	p.Appended()
}
