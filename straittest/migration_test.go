package straittest_test

import (
	"context"
	"fmt"
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

// migration runs a group of three consumers over a topic produced to
// steadily, replacing its members one at a time, and records what they
// consume: a record consumed again below what was committed for its
// partition is a duplicate the protocols should have prevented.
type migration struct {
	t          *testing.T
	c          *straittest.Cluster
	topic      string
	group      string
	partitions int32
	static     bool // members have a group.instance.id: their name

	produced atomic.Int64
	stopProd chan struct{}
	prodWG   sync.WaitGroup

	mu        sync.Mutex
	seen      map[int32]map[int64]int
	committed map[int32]int64
	dupes     []string
	consumed  atomic.Int64
}

func newMigration(t *testing.T, topic, group string) *migration {
	const partitions = 6
	c := straittest.Start(t, straittest.WithTopic(topic, partitions, 1),
		straittest.WithConfigs(map[string]string{
			"group.consumer.heartbeat.interval.ms": "250",
			"group.consumer.session.timeout.ms":    "10000",
		}))
	m := &migration{t: t, c: c, topic: topic, group: group, partitions: partitions, stopProd: make(chan struct{}),
		seen: map[int32]map[int64]int{}, committed: map[int32]int64{}}
	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	m.prodWG.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		for n := 0; n < 1_000_000; n++ {
			select {
			case <-m.stopProd:
				return
			default:
			}
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			m.produced.Add(1)
			time.Sleep(3 * time.Millisecond)
		}
	})
	t.Cleanup(func() {
		select {
		case <-m.stopProd:
		default:
			close(m.stopProd)
		}
		m.prodWG.Wait()
	})
	return m
}

// member starts a consumer of the group (KIP-848 when consumerProtocol)
// and returns what stops it: it leaves the group as a closing client does.
func (m *migration) member(name string, consumerProtocol bool) (stop func()) {
	opts := []kgo.Opt{kgo.SeedBrokers(m.c.Addrs()...), kgo.ConsumerGroup(m.group), kgo.ConsumeTopics(m.topic),
		kgo.ClientID(name), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond)}
	if consumerProtocol {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if m.static {
		opts = append(opts, kgo.InstanceID(name))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		m.t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		for n := 0; n < 1_000_000; n++ {
			select {
			case <-done:
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := cl.PollFetches(pctx)
			pcancel()
			if ctx.Err() != nil {
				cl.AllowRebalance()
				return
			}
			recs := fs.Records()
			if len(recs) > 0 {
				m.mu.Lock()
				for _, r := range recs {
					ps := m.seen[r.Partition]
					if ps == nil {
						ps = map[int64]int{}
						m.seen[r.Partition] = ps
					}
					ps[r.Offset]++
					if ps[r.Offset] > 1 && r.Offset < m.committed[r.Partition] {
						m.dupes = append(m.dupes, fmt.Sprintf("%s %d@%d (committed %d)", name, r.Partition, r.Offset, m.committed[r.Partition]))
					}
				}
				m.mu.Unlock()
				m.consumed.Add(int64(len(recs)))
				if err := cl.CommitRecords(ctx, recs...); err == nil {
					m.mu.Lock()
					for _, r := range recs {
						if r.Offset+1 > m.committed[r.Partition] {
							m.committed[r.Partition] = r.Offset + 1
						}
					}
					m.mu.Unlock()
				}
			}
			cl.AllowRebalance()
		}
	})
	return func() { close(done); wg.Wait() }
}

// progress waits until n more records are consumed.
func (m *migration) progress(n int64, why string) {
	m.t.Helper()
	want := m.consumed.Load() + n
	deadline := time.Now().Add(60 * time.Second)
	for m.consumed.Load() < want {
		if time.Now().After(deadline) {
			m.t.Fatalf("%s: consumed %d of %d", why, m.consumed.Load(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe is ConsumerGroupDescribe's view: the group's state and its
// members' types (0 classic, 1 consumer) with the partitions they own.
func (m *migration) describe() (state string, types map[string]int8, owned int, code int16) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(m.c.Addrs()...))
	if err != nil {
		m.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{m.group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		return "", nil, 0, -1
	}
	g := resp.Groups[0]
	types = map[string]int8{}
	for _, mb := range g.Members {
		types[mb.ClientID] = mb.MemberType
		for _, t := range mb.Assignment.TopicPartitions {
			owned += len(t.Partitions)
		}
	}
	return g.State, types, owned, g.ErrorCode
}

// waitMembers waits until ConsumerGroupDescribe shows a stable group of
// exactly the members want (client id -> member type) owning every partition.
func (m *migration) waitMembers(want map[string]int8, why string) {
	m.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		state, types, owned, code := m.describe()
		ok := code == 0 && state == "Stable" && owned == int(m.partitions) && len(types) == len(want)
		for id, typ := range want {
			if got, has := types[id]; !has || got != typ {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s: group %s, members %v owning %d partitions (error %d); want %v", why, state, types, owned, code, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitClassic waits until DescribeGroups shows a stable classic group of
// the consumer protocol type with n members, and ConsumerGroupDescribe
// no longer knows it as a consumer group.
func (m *migration) waitClassic(n int, why string) {
	m.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		gs, err := m.c.Admin().DescribeGroups(ctx, m.group)
		cancel()
		var g kadm.DescribedGroup
		if err == nil {
			g = gs[m.group]
		}
		if err == nil && g.Err == nil && g.State == "Stable" && g.ProtocolType == "consumer" && len(g.Members) == n {
			if _, _, _, code := m.describe(); code != 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s: classic group %+v (%v)", why, g, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// finish stops producing, waits for every record to be consumed and fails
// on duplicates.
func (m *migration) finish() {
	m.t.Helper()
	close(m.stopProd)
	m.prodWG.Wait()
	total := m.produced.Load()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m.mu.Lock()
		distinct := 0
		for _, ps := range m.seen {
			distinct += len(ps)
		}
		dupes := m.dupes
		m.mu.Unlock()
		if len(dupes) > 0 {
			m.t.Fatalf("%d committed records consumed again: %v", len(dupes), dupes[:min(len(dupes), 20)])
		}
		if int64(distinct) == total {
			m.t.Logf("%d records produced, all consumed (%d deliveries)", total, m.consumed.Load())
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("consumed %d distinct records of %d produced", distinct, total)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A rolling upgrade: a classic group of three franz-go consumers, under a
// steady produce stream, has its members replaced one at a time by
// consumers of the KIP-848 protocol. The first one's join converts the
// group to a consumer group whose classic members carry on (mixed), the
// last one leaves no classic member; nothing committed is consumed again
// and every record is consumed. With static members, a restarted instance
// takes over its classic predecessor, which left no LeaveGroup.
func TestRollingUpgradeToConsumerProtocol(t *testing.T) {
	for _, static := range []bool{false, true} {
		t.Run(fmt.Sprintf("static=%v", static), func(t *testing.T) {
			m := newMigration(t, "mig-up", "mig-up")
			m.static = static
			names := []string{"m0", "m1", "m2"}
			stops := make([]func(), 3)
			for i, n := range names {
				stops[i] = m.member(n, false)
			}
			m.waitClassic(3, "classic group")
			m.progress(300, "classic group consuming")
			want := map[string]int8{"m0": 0, "m1": 0, "m2": 0}
			for i, n := range names {
				stops[i]()
				m.progress(100, "after "+n+" stopped")
				stops[i] = m.member(n, true)
				want[n] = 1
				m.waitMembers(want, "after "+n+" moved to the consumer protocol")
				m.progress(200, "after "+n+" moved to the consumer protocol")
			}
			m.finish()
			for _, stop := range stops {
				stop()
			}
		})
	}
}

// A rolling downgrade: a KIP-848 group of three consumers has its members
// replaced one at a time by classic consumers; they join the consumer group
// as classic members, and when the last consumer-protocol member leaves the
// group becomes a classic group, which the last replacement joins. With
// static members, the last replacement takes over the instance of the last
// consumer-protocol member, which converts the group.
func TestRollingDowngradeToClassicProtocol(t *testing.T) {
	for _, static := range []bool{false, true} {
		t.Run(fmt.Sprintf("static=%v", static), func(t *testing.T) {
			m := newMigration(t, "mig-down", "mig-down")
			m.static = static
			names := []string{"m0", "m1", "m2"}
			stops := make([]func(), 3)
			for i, n := range names {
				stops[i] = m.member(n, true)
			}
			want := map[string]int8{"m0": 1, "m1": 1, "m2": 1}
			m.waitMembers(want, "consumer group")
			m.progress(300, "consumer group consuming")
			for i, n := range names[:2] {
				stops[i]()
				m.progress(100, "after "+n+" stopped")
				stops[i] = m.member(n, false)
				want[n] = 0
				m.waitMembers(want, "after "+n+" moved to the classic protocol")
				m.progress(200, "after "+n+" moved to the classic protocol")
			}
			stops[2]()
			if !static {
				// The last consumer-protocol member leaves: the group is
				// downgraded.
				m.waitClassic(2, "after the last consumer-protocol member left")
				m.progress(100, "classic group of two")
			}
			stops[2] = m.member("m2", false)
			m.waitClassic(3, "after m2 joined as a classic member")
			m.progress(200, "classic group of three")
			m.finish()
			for _, stop := range stops {
				stop()
			}
		})
	}
}
