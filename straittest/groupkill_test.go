package straittest_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// shareView is what ShareGroupDescribe says of a share group: its epochs,
// and each member's epoch and assignment.
type shareView struct {
	epoch, assignEpoch int32
	members            map[string]memberView
}

// describeShare describes a share group through a new client (see
// describeMembers), returning false while no coordinator answers for it.
func describeShare(t *testing.T, c *straittest.Cluster, group string) (shareView, bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return shareView{}, false
	}
	g := resp.Groups[0]
	v := shareView{epoch: g.GroupEpoch, assignEpoch: g.AssignmentEpoch, members: map[string]memberView{}}
	for _, m := range g.Members {
		var parts []string
		for _, tp := range m.Assignment.TopicPartitions {
			ps := slices.Sorted(slices.Values(tp.Partitions))
			parts = append(parts, fmt.Sprintf("%s%v", tp.Topic, ps))
		}
		slices.Sort(parts)
		v.members[m.MemberID] = memberView{epoch: m.MemberEpoch, assignment: fmt.Sprint(parts)}
	}
	return v, true
}

func describeShareWhen(t *testing.T, c *straittest.Cluster, group string, timeout time.Duration, cond func(shareView) bool) shareView {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, ok := describeShare(t, c, group)
		if ok && cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("describing share group %s: %+v (answered %v)", group, v, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sameShare(a, b shareView) bool {
	return a.epoch == b.epoch && a.assignEpoch == b.assignEpoch && maps.Equal(a.members, b.members)
}

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

	// Three KIP-848 consumers committing what they processed.
	var (
		mu        sync.Mutex
		seen      = map[int32]map[int64]int{}
		committed = map[int32]int64{}
		dupes     []string
		consumed  atomic.Int64
		// Share deliveries: (partition, offset) -> delivery counts seen.
		deliveries = map[[2]int64][]int32{}
		slow       atomic.Bool
	)
	slow.Store(true)
	for i := range 3 {
		cl := c.Client(kgo.ConsumerGroup(cgGroup), kgo.ConsumeTopics(cgTopic), kgo.ServerSideBalancer(),
			kgo.ClientID("consumer-"+strconv.Itoa(i)), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		wg.Go(func() {
			for n := 0; n < 1_000_000 && running(); n++ {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollFetches(pctx)
				pcancel()
				recs := fs.Records()
				if len(recs) == 0 {
					continue
				}
				mu.Lock()
				for _, r := range recs {
					ps := seen[r.Partition]
					if ps == nil {
						ps = map[int64]int{}
						seen[r.Partition] = ps
					}
					ps[r.Offset]++
					if ps[r.Offset] > 1 && r.Offset < committed[r.Partition] {
						dupes = append(dupes, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
					}
				}
				mu.Unlock()
				consumed.Add(int64(len(recs)))
				if cl.CommitRecords(ctx, recs...) != nil {
					continue // the coordinator moved: the next commit covers these
				}
				mu.Lock()
				for _, r := range recs {
					committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
				}
				mu.Unlock()
			}
		})
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
				t.Fatalf("%s: consumed %d, %d share records delivered", why, consumed.Load(), delivered())
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
	n0 := consumed.Load()
	waitFor("before the kill", 60*time.Second, func() bool { return consumed.Load() > n0+200 && delivered() >= 30 })
	// Nothing moved meanwhile.
	if _, ms := describeWhen(t, c, cgGroup, 30*time.Second, anyAnswer); !maps.Equal(ms, cgMembers) {
		t.Fatalf("consumer group moved before the kill: %v (was %v)", ms, cgMembers)
	}
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
	mu.Lock()
	atKill := maps.Clone(committed)
	mu.Unlock()
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
		waitFor(why, 60*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for p := int32(0); p < partitions; p++ {
				if committed[p] <= since[p] {
					return false
				}
			}
			return true
		})
	}
	check("after the kill", false)
	commitsMove(atKill, "commits after the kill")
	check("consuming after the kill", false)

	mu.Lock()
	atRestart := maps.Clone(committed)
	mu.Unlock()
	c.Restart(victim)
	check("back on the restarted broker", true)
	commitsMove(atRestart, "commits after the restart")
	waitFor("every share record delivered", 90*time.Second, func() bool { return delivered() == perShare })
	check("at the end", true)

	mu.Lock()
	defer mu.Unlock()
	if len(dupes) > 0 {
		t.Fatalf("committed records consumed again: %v", dupes[:min(len(dupes), 20)])
	}
	redelivered := 0
	for k, ds := range deliveries {
		if k[1] < spso[int32(k[0])] && len(ds) > 1 {
			t.Errorf("share record %d@%d, acknowledged before the kill, delivered %d times (counts %v)", k[0], k[1], len(ds), ds)
		}
		for i := 1; i < len(ds); i++ {
			if ds[i] <= ds[i-1] {
				t.Errorf("share record %d@%d delivered with counts %v: the count did not continue", k[0], k[1], ds)
			}
		}
		if len(ds) > 1 {
			redelivered++
		}
	}
	t.Logf("consumed %d; share records %d, %d delivered more than once; start offsets at the kill %v", consumed.Load(), len(deliveries), redelivered, spso)
}

// setShareEarliest sets share.auto.offset.reset=earliest on a group and
// waits until every broker sees it.
func setShareEarliest(t *testing.T, ctx context.Context, c *straittest.Cluster, group string) {
	t.Helper()
	ac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, rc)
	ac.Resources = append(ac.Resources, r)
	if resp, err := ac.RequestWith(ctx, c.Client()); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("group config: %v %+v", err, resp)
	}
	for _, b := range c.Brokers() {
		bc := c.Client(kgo.SeedBrokers(b.Addr()))
		for attempt := 0; ; attempt++ {
			dc := kmsg.NewPtrDescribeConfigsRequest()
			dr := kmsg.NewDescribeConfigsRequestResource()
			dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
			dr.ConfigNames = []string{"share.auto.offset.reset"}
			dc.Resources = append(dc.Resources, dr)
			resp, err := bc.Broker(int(b.ID())).RetriableRequest(ctx, dc)
			if err == nil {
				if rs := resp.(*kmsg.DescribeConfigsResponse).Resources; len(rs) == 1 && len(rs[0].Configs) == 1 &&
					rs[0].Configs[0].Value != nil && *rs[0].Configs[0].Value == "earliest" {
					break
				}
			}
			if attempt == 100 {
				t.Fatalf("broker %d does not see the group config: %v", b.ID(), err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// shareStartOffsets is DescribeShareGroupOffsets' start offset of each
// partition of topic.
func shareStartOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic = topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe share offsets: %v %+v", err, resp)
	}
	out := map[int32]int64{}
	for _, tp := range resp.Groups[0].Topics {
		for _, p := range tp.Partitions {
			out[p.Partition] = p.StartOffset
		}
	}
	return out
}
