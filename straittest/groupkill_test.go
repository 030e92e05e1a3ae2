package straittest_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// Issue 19's combined test: the broker coordinating both a KIP-848 group
// of three consumers and a share group of three share consumers (one
// __consumer_offsets partition, so one coordinator for both) is killed -9
// while they consume, then restarted and takes the partition back. Both
// groups keep their members, epochs and assignments through both moves
// (the describe output matches), no committed record is consumed again,
// and share deliveries continue from the recovered state: every record is
// delivered, those acknowledged before the kill are not delivered again,
// and a record delivered again has a higher delivery count each time.
func TestGroupsSurviveCoordinatorKill(t *testing.T) {
	const (
		cgTopic, cgGroup = "gk-cg", "gk-consumers"
		sqTopic, sqGroup = "gk-sq", "gk-share"
		partitions       = 3
		perShare         = 400
	)
	c := straittest.StartCluster(t, 3, straittest.WithTopic(cgTopic, partitions, 3), straittest.WithTopic(sqTopic, partitions, 3),
		straittest.WithConfigs(map[string]string{
			"broker.session.timeout.ms":               "3000",
			"leader.imbalance.check.interval.seconds": "1",
			// One partition: one coordinator for both groups.
			"offsets.topic.num.partitions":                     "1",
			"offsets.topic.replication.factor":                 "3",
			"share.coordinator.state.topic.num.partitions":     "3",
			"share.coordinator.state.topic.replication.factor": "3",
			"group.consumer.heartbeat.interval.ms":             "250",
			"group.share.heartbeat.interval.ms":                "250",
			// Long enough for the members to reach the new coordinator,
			// which restarts every session when it loads the groups.
			"group.consumer.session.timeout.ms":       "20000",
			"group.share.session.timeout.ms":          "20000",
			"group.share.min.record.lock.duration.ms": "1000",
			"group.share.record.lock.duration.ms":     "4000",
			// A kill may cost a record several deliveries whose answers
			// the client never got (see TestShareGroupSurvivesCoordinatorKill).
			"group.share.delivery.count.limit": "10",
		}))
	for _, tp := range []string{cgTopic, sqTopic} {
		for p := int32(0); p < partitions; p++ {
			c.WaitISR(tp, p, 3, 30*time.Second)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	setShareEarliest(t, ctx, c, sqGroup)

	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var rs []*kgo.Record
	for i := range perShare {
		rs = append(rs, &kgo.Record{Topic: sqTopic, Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	defer func() { close(stop); wg.Wait() }()
	running := func() bool {
		select {
		case <-stop:
			return false
		default:
			return ctx.Err() == nil
		}
	}
	// The consumer group's input keeps coming through the kill.
	wg.Go(func() {
		for n := 0; n < 1_000_000 && running(); n++ {
			if prod.ProduceSync(ctx, &kgo.Record{Topic: cgTopic, Value: []byte(strconv.Itoa(n))}).FirstErr() == nil {
				time.Sleep(5 * time.Millisecond)
			}
		}
	})

	var (
		ct = newCommitTracker()
		mu sync.Mutex // guards deliveries
		// Share deliveries: (partition, offset) -> delivery counts seen.
		deliveries = map[[2]int64][]int32{}
		slow       atomic.Bool
	)
	slow.Store(true)
	// Three KIP-848 consumers committing what they processed.
	for i := range 3 {
		cl := c.Client(kgo.ConsumerGroup(cgGroup), kgo.ConsumeTopics(cgTopic), kgo.ServerSideBalancer(),
			kgo.ClientID("consumer-"+strconv.Itoa(i)), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		wg.Go(func() { ct.consume(ctx, cl, running) })
	}
	// Three share consumers accepting what they poll, slowly until the
	// kill so that records are left for after it.
	for i := range 3 {
		cl := c.Client(kgo.ShareGroup(sqGroup), kgo.ConsumeTopics(sqTopic), kgo.ShareMaxRecords(5),
			kgo.FetchMaxWait(300*time.Millisecond), kgo.ClientID(fmt.Sprintf("share-%d", i)))
		wg.Go(func() {
			for n := 0; n < 100_000 && running(); n++ {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollRecords(pctx, 5)
				pcancel()
				mu.Lock()
				for _, r := range fs.Records() {
					k := [2]int64{int64(r.Partition), r.Offset}
					deliveries[k] = append(deliveries[k], r.DeliveryCount())
				}
				mu.Unlock()
				if slow.Load() {
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	delivered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(deliveries)
	}
	waitFor := func(why string, timeout time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: consumed %d, %d share records delivered", why, ct.consumed.Load(), delivered())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Both groups stable with three members and every partition assigned.
	cgBefore, cgMembers := describeWhen(t, c, cgGroup, 60*time.Second, func(g kadm.DescribedConsumerGroup, ms map[string]memberView) bool {
		return g.State == "Stable" && len(ms) == 3 && len(g.AssignedPartitions()[cgTopic]) == partitions
	})
	sqBefore := describeShareWhen(t, c, sqGroup, 60*time.Second, func(v shareView) bool {
		if len(v.members) != 3 {
			return false
		}
		for _, m := range v.members {
			if m.epoch != v.epoch || m.assignment == "[]" {
				return false
			}
		}
		return true
	})
	n0 := ct.consumed.Load()
	waitFor("before the kill", 60*time.Second, func() bool { return ct.consumed.Load() > n0+200 && delivered() >= 30 })
	// Nothing moved meanwhile.
	membersStay(t, c, cgGroup, cgMembers, "moved before the kill")
	if v := describeShareWhen(t, c, sqGroup, 30*time.Second, func(shareView) bool { return true }); !sameShare(v, sqBefore) {
		t.Fatalf("share group moved before the kill: %+v (was %+v)", v, sqBefore)
	}

	adm := c.Admin()
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	cos := adm.FindGroupCoordinators(fctx, cgGroup, sqGroup)
	fcancel()
	victim := cos[cgGroup].NodeID
	if cos[cgGroup].Err != nil || cos[sqGroup].Err != nil || cos[sqGroup].NodeID != victim {
		t.Fatalf("coordinators: %+v", cos)
	}
	// The share-partitions' start offsets just before the kill: below
	// them everything was acknowledged and persisted.
	spso := shareStartOffsets(t, ctx, c.Client(), sqGroup, sqTopic, partitions)
	atKill := ct.committedNow()
	c.Kill(victim)
	slow.Store(false)
	t.Logf("killed broker %d, coordinator of both groups (consumer epoch %d, share epoch %d; %d share records delivered)",
		victim, cgBefore.Epoch, sqBefore.epoch, delivered())

	check := func(when string, onVictim bool) {
		t.Helper()
		g, ms := describeWhen(t, c, cgGroup, 90*time.Second, func(g kadm.DescribedConsumerGroup, ms map[string]memberView) bool {
			return (g.Coordinator.NodeID == victim) == onVictim && len(ms) > 0
		})
		if !maps.Equal(ms, cgMembers) || g.Epoch != cgBefore.Epoch || g.State != "Stable" {
			t.Fatalf("consumer group %s: %s epoch %d %v\nbefore: epoch %d %v", when, g.State, g.Epoch, ms, cgBefore.Epoch, cgMembers)
		}
		// The share group is served by the same broker now (one partition).
		if v := describeShareWhen(t, c, sqGroup, 30*time.Second, func(v shareView) bool { return len(v.members) > 0 }); !sameShare(v, sqBefore) {
			t.Fatalf("share group %s: %+v\nbefore: %+v", when, v, sqBefore)
		}
	}
	commitsMove := func(since map[int32]int64, why string) {
		t.Helper()
		waitFor(why, 60*time.Second, func() bool { return ct.movedPast(since, partitions) == partitions })
	}
	check("after the kill", false)
	commitsMove(atKill, "commits after the kill")
	check("consuming after the kill", false)

	atRestart := ct.committedNow()
	c.Restart(victim)
	check("back on the restarted broker", true)
	commitsMove(atRestart, "commits after the restart")
	waitFor("every share record delivered", 90*time.Second, func() bool { return delivered() == perShare })
	check("at the end", true)

	ct.noneAgain(t)
	mu.Lock()
	defer mu.Unlock()
	ackedOnce(t, deliveries, spso)
	redelivered := 0
	for k, ds := range deliveries {
		for i := 1; i < len(ds); i++ {
			if ds[i] <= ds[i-1] {
				t.Errorf("share record %d@%d delivered with counts %v: the count did not continue", k[0], k[1], ds)
			}
		}
		if len(ds) > 1 {
			redelivered++
		}
	}
	t.Logf("consumed %d; share records %d, %d delivered more than once; start offsets at the kill %v", ct.consumed.Load(), len(deliveries), redelivered, spso)
}
