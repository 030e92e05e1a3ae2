package straittest_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// startOffset is topic/0's log start offset.
func startOffset(t *testing.T, c *straittest.Cluster, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := c.Admin().ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("start offset of %s/0: %+v", topic, o)
	}
	return o.Offset
}

// A broker's jumped clock is the one its logs read: two hours forward,
// retention.ms=1h deletes what was just written (Kafka's retention is by
// the wall clock) and LogAppendTime stamps the jumped time; two hours
// back, a record stamped now is from too far in the future.
func TestJumpClockRetentionAndLogAppendTime(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopics(
		straittest.Topic{Name: "r", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "3600000"}},
		straittest.Topic{Name: "lat", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"message.timestamp.type": "LogAppendTime"}},
	), straittest.WithConfig("log.retention.check.interval.ms", "100"))
	cl := c.Client()
	produce(t, cl, "r", 0, 10)
	if o := startOffset(t, c, "r"); o != 0 {
		t.Fatalf("start offset %d before the jump", o)
	}

	c.JumpClock(1, 2*time.Hour)
	if got := c.Broker(1).ClockOffset(); got != 2*time.Hour {
		t.Fatalf("ClockOffset = %v, want 2h", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for startOffset(t, c, "r") != 10 {
		if time.Now().After(deadline) {
			t.Fatalf("retention.ms=1h deleted nothing 30 s after a 2h jump: start offset %d", startOffset(t, c, "r"))
		}
		time.Sleep(50 * time.Millisecond)
	}

	produce(t, cl, "lat", 0, 1)
	recs := consume(t, c.Client(kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 1)
	if ahead := time.Until(recs[0].Timestamp); ahead < 119*time.Minute || ahead > 121*time.Minute {
		t.Fatalf("LogAppendTime %v ahead of the system clock, want 2h", ahead)
	}

	// Two hours behind, the broker takes a record stamped now for one from
	// the future, past message.timestamp.after.max.ms (1h in Kafka 4).
	c.JumpClock(1, -4*time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "r", Value: []byte("future")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("produce to a broker 2h behind: %v, want INVALID_TIMESTAMP", err)
	}
	c.ResetClock(1)
	if got := c.Broker(1).ClockOffset(); got != 0 {
		t.Fatalf("ClockOffset after ResetClock = %v", got)
	}
	produce(t, cl, "r", 10, 1) // in step again
}

// Clock jumps under an acks=all producer and a consumer group: a
// follower an hour ahead, the leader ten minutes back and then forward
// again (its followers then look ten minutes behind and leave the ISR),
// the group coordinator half an hour ahead. No acknowledged record is
// lost or duplicated, the ISR is whole again once the clocks are back in
// step, and the group reads every record.
func TestJumpClockCluster(t *testing.T) {
	c := straittest.StartCluster(t, 3, straittest.WithTopics(straittest.Topic{
		Name: "j", Partitions: 1, ReplicationFactor: 3,
		// Far beyond the jumps: retention deletes nothing here.
		Configs: map[string]string{"retention.ms": strconv.FormatInt((365 * 24 * time.Hour).Milliseconds(), 10)},
	}), lagConfigs)
	c.WaitISR("j", 0, 3, 30*time.Second)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))

	var (
		mu       sync.Mutex
		acked    []string
		consumed = map[string]bool{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		for n := 0; n < 100_000; n++ {
			select {
			case <-stop:
				return
			default:
			}
			v := strconv.Itoa(n)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "j", Value: []byte(v)}).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			mu.Lock()
			acked = append(acked, v)
			mu.Unlock()
		}
	})
	group := c.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("j"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second))
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		for ctx.Err() == nil {
			fs := group.PollFetches(ctx)
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { consumed[string(r.Value)] = true })
			mu.Unlock()
		}
	})
	countAcked := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	// waitAcked waits for more acknowledged records, and holds the clocks
	// as they are for at least hold: with hold 1.5 s, the jumped brokers'
	// maintenance passes (each second: retention, ISR lag against
	// replica.lag.time.max.ms=1s, producer expiry) run on the jumped clock.
	const hold = 1500 * time.Millisecond
	waitAcked := func(more int, what string) {
		t.Helper()
		n := countAcked() + more
		start := time.Now()
		deadline := start.Add(60 * time.Second)
		for countAcked() < n || time.Since(start) < hold {
			if time.Now().After(deadline) {
				t.Fatalf("%s: only %d records acknowledged, want %d", what, countAcked(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitAcked(50, "before the jumps")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(consumed)
		mu.Unlock()
		if n > 0 {
			break // the group (and __consumer_offsets) exists
		}
		if time.Now().After(deadline) {
			t.Fatal("the group read nothing in 60 s")
		}
	}

	leader := c.Leader("j", 0)
	f := otherThan(leader)[0]
	c.JumpClock(f, time.Hour)
	waitAcked(50, "follower an hour ahead")
	c.JumpClock(leader, -10*time.Minute)
	waitAcked(50, "leader ten minutes back")
	c.JumpClock(leader, 10*time.Minute)
	waitAcked(50, "leader back in step")
	coord := c.Leader("__consumer_offsets", 0)
	if coord < 1 {
		t.Fatalf("no group coordinator: __consumer_offsets/0 has leader %d", coord)
	}
	c.JumpClock(coord, 30*time.Minute)
	t.Logf("jumped: follower %d +1h, leader %d -10m then +10m, group coordinator %d +30m; ISR now %v", f, leader, coord, c.ISR("j", 0))
	waitAcked(50, "coordinator half an hour ahead")

	c.ResetClock(0)
	c.WaitISR("j", 0, 3, 60*time.Second)
	waitAcked(20, "clocks back in step")
	mu.Lock()
	want := slices.Clone(acked)
	mu.Unlock()

	// The group reads every acknowledged record.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		missing := slices.IndexFunc(want, func(v string) bool { return !consumed[v] })
		mu.Unlock()
		if missing < 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group has not read acknowledged record %s 60 s after the jumps", want[missing])
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	got := values(consume(t, c.Client(kgo.ConsumeTopics("j"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), len(want)))
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("record %s stored %d times", v, n)
		}
	}
	for _, v := range want {
		if seen[v] == 0 {
			t.Errorf("acknowledged record %s lost", v)
		}
	}
}
