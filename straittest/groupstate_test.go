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

// A KIP-848 group of three consumers keeps its members, epochs and
// assignments when its coordinator is killed -9 while they consume: the
// coordinator that takes over __consumer_offsets loads them, the members
// are not fenced and nothing rebalances, and no committed record is
// consumed again. The same holds when the killed broker restarts and takes
// its partitions back.
func TestConsumerGroupSurvivesCoordinatorKill(t *testing.T) {
	const topic, group, partitions = "cg-in", "cg-kill", 6
	c := straittest.StartCluster(t, 3, straittest.WithTopic(topic, partitions, 3),
		straittest.WithConfigs(map[string]string{
			"broker.session.timeout.ms": "3000",
			// The restarted broker soon leads its partitions again.
			"leader.imbalance.check.interval.seconds": "1",
			"offsets.topic.num.partitions":            "3",
			"offsets.topic.replication.factor":        "3",
			"group.consumer.heartbeat.interval.ms":    "250",
			// Long enough for the members to reach the new coordinator,
			// which restarts every session when it loads the group.
			"group.consumer.session.timeout.ms": "20000",
		}))
	for p := int32(0); p < partitions; p++ {
		c.WaitISR(topic, p, 3, 30*time.Second)
	}
	adm := c.Admin()

	// A producer that keeps producing through the kill.
	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var produced atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		for n := 0; n < 1_000_000; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}).FirstErr(); err != nil {
				if ctx.Err() != nil {
					return
				}
				continue // the leader moved: retry
			}
			produced.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	})
	defer func() { close(stop); wg.Wait() }()

	// Three KIP-848 consumers that commit what they processed after each
	// poll. After the snapshot, any revocation, loss or new assignment is
	// a rebalance the move should not cause.
	var (
		ct        = newCommitTracker()
		watching  atomic.Bool
		rebalance atomic.Value // string: what happened
	)
	onChange := func(what string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			if watching.Load() && len(ps[topic]) > 0 {
				rebalance.CompareAndSwap(nil, fmt.Sprintf("%s %v", what, ps[topic]))
			}
		}
	}
	for i := range 3 {
		cl := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.ClientID("consumer-"+strconv.Itoa(i)), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsRevoked(onChange("revoked")), kgo.OnPartitionsLost(onChange("lost")),
			kgo.OnPartitionsAssigned(onChange("assigned")))
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			ct.consume(ctx, cl, func() bool {
				select {
				case <-stop:
					return false
				default:
					return ctx.Err() == nil
				}
			})
		})
	}
	waitConsumed := func(n int64, why string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for ct.consumed.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: consumed %d of %d", why, ct.consumed.Load(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Stable: three members, every partition assigned, nothing moving.
	beforeGroup, before := describeWhen(t, c, group, 60*time.Second, func(g kadm.DescribedConsumerGroup, ms map[string]memberView) bool {
		return g.State == "Stable" && len(ms) == 3 && len(g.AssignedPartitions()[topic]) == partitions
	})
	waitConsumed(ct.consumed.Load()+200, "before the kill")
	watching.Store(true)
	// A rebalance that happened between the describe and watching would
	// show as a changed description; take it again now.
	membersStay(t, c, group, before, "moved before the kill")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	co := adm.FindGroupCoordinators(ctx, group)[group]
	cancel()
	if co.Err != nil {
		t.Fatalf("find coordinator: %v", co.Err)
	}
	atKill := ct.committedNow()
	killed := time.Now()
	c.Kill(co.NodeID)
	t.Logf("killed coordinator %d of group %s (epoch %d)", co.NodeID, group, beforeGroup.Epoch)

	// The group comes back on another broker as it was.
	afterGroup, after := describeWhen(t, c, group, 60*time.Second, func(g kadm.DescribedConsumerGroup, ms map[string]memberView) bool {
		return g.Coordinator.NodeID != co.NodeID && len(ms) > 0
	})
	t.Logf("group served by %d %v after the kill", afterGroup.Coordinator.NodeID, time.Since(killed))
	if !maps.Equal(after, before) || afterGroup.Epoch != beforeGroup.Epoch || afterGroup.State != "Stable" {
		t.Fatalf("group after the move: %s epoch %d %v\nbefore: %s epoch %d %v",
			afterGroup.State, afterGroup.Epoch, after, beforeGroup.State, beforeGroup.Epoch, before)
	}

	// The members carry on with the new coordinator: they consume what is
	// produced meanwhile and commit it, heartbeating for several session
	// checks without being fenced.
	// Every partition's committed offset moves past where it was at the
	// move: the members commit through the new coordinator with the epochs
	// it loaded (a commit with an epoch it did not know would fail).
	commitsMove := func(since map[int32]int64, why string) {
		t.Helper()
		waitConsumed(ct.consumed.Load()+300, why)
		deadline := time.Now().Add(60 * time.Second)
		for {
			moved := ct.movedPast(since, partitions)
			if moved == partitions {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: commits reached %d of %d partitions", why, moved, partitions)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	commitsMove(atKill, "after the kill")
	membersStay(t, c, group, before, "after consuming on")

	// The killed broker comes back and, as the preferred leader, takes the
	// partition back: a second move, from a coordinator that hands over,
	// to one that loads what the other wrote.
	atRestart := ct.committedNow()
	c.Restart(co.NodeID)
	back, after2 := describeWhen(t, c, group, 90*time.Second, func(g kadm.DescribedConsumerGroup, ms map[string]memberView) bool {
		return g.Coordinator.NodeID == co.NodeID && len(ms) > 0
	})
	if !maps.Equal(after2, before) || back.Epoch != beforeGroup.Epoch {
		t.Fatalf("group back on %d: epoch %d %v\nbefore: epoch %d %v", co.NodeID, back.Epoch, after2, beforeGroup.Epoch, before)
	}
	commitsMove(atRestart, "after the restart")
	membersStay(t, c, group, before, "after consuming on")
	if r := rebalance.Load(); r != nil {
		t.Fatalf("the members rebalanced across the move: %s", r)
	}
	ct.noneAgain(t)
	t.Logf("consumed %d distinct records, %d produced; committed at the kill %v, at the end %v", ct.distinct(), produced.Load(),
		atKill, ct.committedNow())
}
