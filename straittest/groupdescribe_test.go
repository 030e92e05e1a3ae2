package straittest_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// Helpers of the coordinator kill tests (groupstate_test.go,
// sharestate_test.go, groupkill_test.go): describing a consumer or a share
// group until the answer fits, to compare it with the description before
// the kill; consumers that commit what they consume, and the committed
// records they consume again; a share group's start at the earliest
// offset, its start offsets, and the acknowledged records delivered again.

// memberView is what ConsumerGroupDescribe or ShareGroupDescribe says of
// one member.
type memberView struct {
	epoch      int32
	assignment string
}

// describeClient is a new client for one description, with its context
// (closed and cancelled by done): kgo keeps a group's coordinator cached
// across dial errors, so a long lived admin client would keep asking the
// killed broker.
func describeClient(t *testing.T, c *straittest.Cluster) (ctx context.Context, cl *kgo.Client, done func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	return ctx, cl, func() { cancel(); cl.Close() }
}

// describeMembers describes the group through a new client each time
// (describeClient).
func describeMembers(t *testing.T, c *straittest.Cluster, group string) (kadm.DescribedConsumerGroup, map[string]memberView, error) {
	t.Helper()
	ctx, cl, done := describeClient(t, c)
	defer done()
	gs, err := kadm.NewClient(cl).DescribeConsumerGroups(ctx, group)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, nil, err
	}
	g := gs[group]
	if g.Err != nil {
		return g, nil, g.Err
	}
	out := map[string]memberView{}
	for _, m := range g.Members {
		out[m.MemberID] = memberView{epoch: m.MemberEpoch, assignment: fmt.Sprint(m.Assignment.Sorted())}
	}
	return g, out, nil
}

// describeWhen describes the group until cond holds (a client may first
// dial the killed broker) and fails the test after timeout.
func describeWhen(t *testing.T, c *straittest.Cluster, group string, timeout time.Duration,
	cond func(kadm.DescribedConsumerGroup, map[string]memberView) bool) (kadm.DescribedConsumerGroup, map[string]memberView) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		g, ms, err := describeMembers(t, c, group)
		if err == nil && cond(g, ms) {
			return g, ms
		}
		if time.Now().After(deadline) {
			t.Fatalf("describing group %s: %+v %v", group, g, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func anyAnswer(kadm.DescribedConsumerGroup, map[string]memberView) bool { return true }

// membersStay fails the test unless the group, described again, has the
// members, epochs and assignments it had.
func membersStay(t *testing.T, c *straittest.Cluster, group string, had map[string]memberView, when string) {
	t.Helper()
	if _, ms := describeWhen(t, c, group, 30*time.Second, anyAnswer); !maps.Equal(ms, had) {
		t.Fatalf("group %s %s: %v (was %v)", group, when, ms, had)
	}
}

// commitTracker follows KIP-848 consumers that commit what they processed
// after each poll: what they consumed, the highest committed offset of
// each partition, and the records consumed again below it.
type commitTracker struct {
	mu        sync.Mutex
	seen      map[int32]map[int64]int // partition -> offset -> times consumed
	committed map[int32]int64         // partition -> highest committed offset
	dupes     []string
	consumed  atomic.Int64
}

func newCommitTracker() *commitTracker {
	return &commitTracker{seen: map[int32]map[int64]int{}, committed: map[int32]int64{}}
}

// consume polls cl and commits what it got while running holds.
func (ct *commitTracker) consume(ctx context.Context, cl *kgo.Client, running func() bool) {
	for n := 0; n < 1_000_000 && running(); n++ {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		ct.mu.Lock()
		for _, r := range recs {
			ps := ct.seen[r.Partition]
			if ps == nil {
				ps = map[int64]int{}
				ct.seen[r.Partition] = ps
			}
			ps[r.Offset]++
			if ps[r.Offset] > 1 && r.Offset < ct.committed[r.Partition] {
				ct.dupes = append(ct.dupes, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
			}
		}
		ct.mu.Unlock()
		ct.consumed.Add(int64(len(recs)))
		if cl.CommitRecords(ctx, recs...) != nil {
			continue // the coordinator moved: the next commit covers these
		}
		ct.mu.Lock()
		for _, r := range recs {
			ct.committed[r.Partition] = max(ct.committed[r.Partition], r.Offset+1)
		}
		ct.mu.Unlock()
	}
}

// committedNow is a copy of the committed offsets.
func (ct *commitTracker) committedNow() map[int32]int64 {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return maps.Clone(ct.committed)
}

// movedPast is how many of partitions 0 to n-1 have a committed offset
// past since's.
func (ct *commitTracker) movedPast(since map[int32]int64, n int32) int32 {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	moved := int32(0)
	for p := range n {
		if ct.committed[p] > since[p] {
			moved++
		}
	}
	return moved
}

// distinct is how many distinct records were consumed.
func (ct *commitTracker) distinct() int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	total := 0
	for _, ps := range ct.seen {
		total += len(ps)
	}
	return total
}

// noneAgain fails the test if a committed record was consumed again.
func (ct *commitTracker) noneAgain(t *testing.T) {
	t.Helper()
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.dupes) > 0 {
		t.Fatalf("committed records consumed again: %v", ct.dupes[:min(len(ct.dupes), 20)])
	}
}

// shareView is what ShareGroupDescribe says of a share group: its epochs,
// and each member's epoch and assignment.
type shareView struct {
	epoch, assignEpoch int32
	members            map[string]memberView
}

// describeShare describes a share group through a new client (see
// describeClient), returning false while no coordinator answers for it.
func describeShare(t *testing.T, c *straittest.Cluster, group string) (shareView, bool) {
	t.Helper()
	ctx, cl, done := describeClient(t, c)
	defer done()
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

// describeShareWhen is describeWhen for a share group.
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

// describeShareOffsets is DescribeShareGroupOffsets of every partition of
// topic.
func describeShareOffsets(ctx context.Context, cl *kgo.Client, group, topic string, partitions int32) (*kmsg.DescribeShareGroupOffsetsResponse, error) {
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
	return req.RequestWith(ctx, cl)
}

// shareStartOffsets is DescribeShareGroupOffsets' start offset of each
// partition of topic: below it every record was acknowledged (or archived)
// and persisted.
func shareStartOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	resp, err := describeShareOffsets(ctx, cl, group, topic, partitions)
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

// ackedOnce fails the test for each share record below its partition's
// start offset at the kill (acknowledged and persisted then) that was
// delivered more than once; deliveries maps (partition, offset) to the
// delivery counts seen.
func ackedOnce(t *testing.T, deliveries map[[2]int64][]int32, startAtKill map[int32]int64) {
	t.Helper()
	for k, ds := range deliveries {
		if start, ok := startAtKill[int32(k[0])]; ok && k[1] < start && len(ds) > 1 {
			t.Errorf("share record %d@%d, acknowledged before the kill, delivered %d times (counts %v)", k[0], k[1], len(ds), ds)
		}
	}
}

func topicIDByName(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	return resp.Topics[0].TopicID
}
