package broker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
)

// groupBrokerProps makes rebalances and session timeouts quick enough for
// tests: no initial rebalance delay, short minimum session timeouts, and
// KIP-848 heartbeats every 250 ms with a 3 s session.
var groupBrokerProps = []string{
	"group.initial.rebalance.delay.ms", "0",
	"group.min.session.timeout.ms", "500",
	"group.consumer.heartbeat.interval.ms", "250",
	"group.consumer.session.timeout.ms", "3000",
	"offsets.topic.num.partitions", "5",
}

func TestFindCoordinatorCreatesOffsetsTopic(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// v4+: batched keys; group keys find this broker, share keys are
	// refused and transactional ids wait for __transaction_state.
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"g1", "g2"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	host, port := hostPort(t, srv.Addr())
	for _, co := range resp.Coordinators {
		if co.ErrorCode != 0 || co.NodeID != srv.NodeID() || co.Host != host || co.Port != port {
			t.Fatalf("coordinator for %s: %+v", co.Key, co)
		}
	}
	req.CoordinatorType = 2
	if resp, err = req.RequestWith(ctx, cl); err != nil || resp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("share key: %v %+v", err, resp)
	}

	// v3 (one key) on a raw connection: error_message is "NONE".
	rc := dialRaw(t, srv)
	old := kmsg.NewPtrFindCoordinatorRequest()
	old.Version = 3
	old.CoordinatorKey = "g1"
	rc.send(encodeRequest(old, 7))
	_, body, err := rc.readResponse()
	if err != nil {
		t.Fatal(err)
	}
	v3 := kmsg.NewPtrFindCoordinatorResponse()
	v3.Version = 3
	if err := v3.ReadFrom(body[1:]); err != nil { // v3 responses are flexible: skip the header's tag byte
		t.Fatal(err)
	}
	if v3.ErrorCode != 0 || v3.NodeID != srv.NodeID() || v3.ErrorMessage == nil || *v3.ErrorMessage != "NONE" {
		t.Fatalf("v3 answer: %+v", v3)
	}

	// The topic is internal, with offsets.topic.num.partitions partitions.
	md, err := kadm.NewClient(cl).Metadata(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics["__consumer_offsets"]
	if td.Err != nil || !td.IsInternal || len(td.Partitions) != 50 {
		t.Fatalf("offsets topic: err %v internal %v partitions %d", td.Err, td.IsInternal, len(td.Partitions))
	}
}

func hostPort(t *testing.T, addr string) (string, int32) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var port int32
	fmt.Sscan(p, &port)
	return h, port
}

// ownership tracks which consumer owns each partition, from the clients'
// assignment callbacks, and fails the test if two own one at once.
type ownership struct {
	t     *testing.T
	mu    sync.Mutex
	owner map[int32]string
	bad   []string
}

func newOwnership(t *testing.T) *ownership {
	return &ownership{t: t, owner: map[int32]string{}}
}

func (o *ownership) assigned(who string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if cur, ok := o.owner[p]; ok && cur != who {
			o.bad = append(o.bad, fmt.Sprintf("partition %d assigned to %s while %s owns it", p, who, cur))
		}
		o.owner[p] = who
	}
}

func (o *ownership) released(who string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == who {
			delete(o.owner, p)
		}
	}
}

// dropAll forgets a crashed consumer's partitions: a dead process owns
// nothing, whatever its client thinks.
func (o *ownership) dropAll(who string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for p, w := range o.owner {
		if w == who {
			delete(o.owner, p)
		}
	}
}

// waitOwners waits until every partition is owned, by exactly the given
// consumers.
func (o *ownership) waitOwners(partitions int32, who ...string) {
	o.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o.mu.Lock()
		if len(o.bad) > 0 {
			o.mu.Unlock()
			o.t.Fatal(o.bad)
		}
		owners := map[string]bool{}
		for _, w := range o.owner {
			owners[w] = true
		}
		ok := len(o.owner) == int(partitions) && len(owners) == len(who)
		for _, w := range who {
			ok = ok && owners[w]
		}
		state := fmt.Sprint(o.owner)
		o.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			o.t.Fatalf("partitions never owned by exactly %v: %s", who, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killableDialer lets a test cut a client off the network, as a crashed
// process would be: open connections close and new dials fail.
type killableDialer struct {
	mu     sync.Mutex
	dead   bool
	conns  []net.Conn
	dialer net.Dialer
}

func (d *killableDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errors.New("killed")
	}
	c, err := d.dialer.DialContext(ctx, network, addr)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		c.Close()
	}
}

// groupConsumer starts a consumer of topic in group that records what it
// owns and counts what it consumes.
func groupConsumer(t *testing.T, srv *broker.Server, own *ownership, name, group, topic string, consumed *sync.Map, opts ...kgo.Opt) (*kgo.Client, *killableDialer) {
	t.Helper()
	d := &killableDialer{}
	base := []kgo.Opt{
		kgo.Dialer(d.DialContext),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.assigned(name, m[topic]) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			cl.CommitMarkedOffsets(ctx)
			own.released(name, m[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.released(name, m[topic]) }),
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200 * time.Millisecond),
	}
	cl := newClient(t, srv, append(base, opts...)...)
	go func() {
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				consumed.Store(fmt.Sprintf("%d/%d", r.Partition, r.Offset), true)
				cl.MarkCommitRecords(r)
			})
		}
	}()
	return cl, d
}

func countMap(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// TestGroupRebalancesWithEveryProtocol runs three consumers per protocol
// variant: every partition is owned by exactly one member at a time, every
// record is consumed, and the group rebalances when a member joins, leaves
// and crashes (its session times out).
func TestGroupRebalancesWithEveryProtocol(t *testing.T) {
	srv := startBroker(t, t.TempDir(), groupBrokerProps...)
	defer srv.Close()
	admin := newClient(t, srv)
	for _, tc := range []struct {
		name   string
		opts   func(member string) []kgo.Opt
		static bool
	}{
		{"range", func(string) []kgo.Opt { return []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())} }, false},
		{"cooperative-sticky", func(string) []kgo.Opt { return []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())} }, false},
		{"static", func(m string) []kgo.Opt {
			return []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.InstanceID("instance-" + m)}
		}, true},
		{"kip848", func(string) []kgo.Opt {
			return []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, group := "rebalance-"+tc.name, "group-"+tc.name
			const partitions, records = 6, 600
			createTopic(t, admin, topic, partitions, nil)
			produceAll(t, admin, testRecords(topic, records))
			own := newOwnership(t)
			var consumed sync.Map
			a, _ := groupConsumer(t, srv, own, "a", group, topic, &consumed, tc.opts("a")...)
			own.waitOwners(partitions, "a")
			_, bd := groupConsumer(t, srv, own, "b", group, topic, &consumed, tc.opts("b")...)
			c, _ := groupConsumer(t, srv, own, "c", group, topic, &consumed, tc.opts("c")...)
			own.waitOwners(partitions, "a", "b", "c")
			waitCount(t, &consumed, records)

			if tc.static {
				// A static member restarts without leaving: it comes back
				// under its instance id and keeps its partitions.
				own.mu.Lock()
				var before []int32
				for p, w := range own.owner {
					if w == "a" {
						before = append(before, p)
					}
				}
				own.mu.Unlock()
				a.Close()
				own.dropAll("a")
				a, _ = groupConsumer(t, srv, own, "a", group, topic, &consumed, tc.opts("a")...)
				own.waitOwners(partitions, "a", "b", "c")
				own.mu.Lock()
				for _, p := range before {
					if own.owner[p] != "a" {
						own.mu.Unlock()
						t.Fatalf("restarted static member lost partition %d", p)
					}
				}
				own.mu.Unlock()
				// Static members do not leave on close: remove it as an
				// admin would.
				a.Close()
				own.dropAll("a")
				resp, err := kadm.NewClient(admin).LeaveGroup(context.Background(), kadm.LeaveGroup(group).InstanceIDs("instance-a"))
				if err != nil || resp.Error() != nil {
					t.Fatalf("leave by instance id: %v %v", err, resp.Error())
				}
			} else {
				a.Close() // leaves the group
			}
			own.waitOwners(partitions, "b", "c")

			// b crashes: after its session times out, c owns everything.
			bd.kill()
			own.dropAll("b")
			own.waitOwners(partitions, "c")
			c.Close()
		})
	}
}

func waitCount(t *testing.T, m *sync.Map, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for countMap(m) < n {
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records", countMap(m), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCommittedOffsetsSurviveRestart: offsets committed by a group are
// read back after the broker closes and starts again on the same
// directory, and a consumer of the group resumes from them.
func TestCommittedOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir, groupBrokerProps...)
	cl := newClient(t, srv)
	createTopic(t, cl, "durable", 3, nil)
	produceAll(t, cl, testRecords("durable", 90))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cons := newClient(t, srv, kgo.ConsumerGroup("keeper"), kgo.ConsumeTopics("durable"),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
	seen := 0
	for seen < 90 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		seen += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	adm := kadm.NewClient(cl)
	before, err := adm.FetchOffsets(ctx, "keeper")
	if err != nil || before.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, before.Error())
	}
	// A simple (group-less) commit too.
	if _, err := adm.CommitOffsets(ctx, "simple", kadm.OffsetsFromRecords(kgo.Record{Topic: "durable", Partition: 1, Offset: 41})); err != nil {
		t.Fatal(err)
	}

	addr := srv.Addr()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv = startBroker(t, dir, append([]string{"listeners", "PLAINTEXT://" + addr}, groupBrokerProps...)...)
	defer srv.Close()
	cl = newClient(t, srv)
	adm = kadm.NewClient(cl)

	after, err := adm.FetchOffsets(ctx, "keeper")
	if err != nil || after.Error() != nil {
		t.Fatalf("fetch offsets after restart: %v %v", err, after.Error())
	}
	for _, p := range []int32{0, 1, 2} {
		b, _ := before.Lookup("durable", p)
		a, _ := after.Lookup("durable", p)
		if a.At != b.At || a.At <= 0 {
			t.Fatalf("partition %d: committed %d before restart, %d after", p, b.At, a.At)
		}
	}
	simple, err := adm.FetchOffsets(ctx, "simple")
	if o, _ := simple.Lookup("durable", 1); err != nil || o.At != 42 {
		t.Fatalf("simple group offset after restart: %+v %v", o, err)
	}

	// The group resumes where it committed: only new records arrive.
	produceAll(t, cl, testRecords("durable", 3)[:3])
	cons = newClient(t, srv, kgo.ConsumerGroup("keeper"), kgo.ConsumeTopics("durable"), kgo.FetchMaxWait(100*time.Millisecond))
	got := 0
	for got < 3 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if got != 3 {
		t.Fatalf("resumed consumer read %d records, want the 3 new ones", got)
	}
}

// TestGroupAdmin exercises kadm's group APIs: ListGroups with filters,
// DescribeGroups, FetchOffsets, DeleteOffsets and DeleteGroups.
func TestGroupAdmin(t *testing.T) {
	srv := startBroker(t, t.TempDir(), groupBrokerProps...)
	defer srv.Close()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTopic(t, cl, "admin-a", 2, nil)
	createTopic(t, cl, "admin-b", 1, nil)
	produceAll(t, cl, testRecords("admin-a", 10))

	// An active consumer group on admin-a, and an offsets-only group.
	cons := newClient(t, srv, kgo.ConsumerGroup("active"), kgo.ConsumeTopics("admin-a"), kgo.FetchMaxWait(100*time.Millisecond))
	for n := 0; n < 10; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CommitOffsets(ctx, "active", kadm.OffsetsFromRecords(kgo.Record{Topic: "admin-b", Partition: 0, Offset: 4})); err == nil {
		// The group has members: an admin commit is refused (UNKNOWN_MEMBER_ID).
		resp, _ := adm.FetchOffsetsForTopics(ctx, "active", "admin-b")
		if o, ok := resp.Lookup("admin-b", 0); ok && o.At == 5 {
			t.Fatal("admin commit to a non-empty group was accepted")
		}
	}
	if r, err := adm.CommitOffsets(ctx, "idle", kadm.OffsetsFromRecords(kgo.Record{Topic: "admin-b", Partition: 0, Offset: 4})); err != nil || r.Error() != nil {
		t.Fatalf("commit to idle: %v %v", err, r.Error())
	}

	listed, err := adm.ListGroups(ctx)
	if err != nil || !slices.Equal(listed.Groups(), []string{"active", "idle"}) {
		t.Fatalf("list groups: %v %v", listed.Groups(), err)
	}
	if stable, err := adm.ListGroups(ctx, "Stable"); err != nil || !slices.Equal(stable.Groups(), []string{"active"}) {
		t.Fatalf("list stable groups: %v %v", stable.Groups(), err)
	}
	if consumers, err := adm.ListGroupsByType(ctx, []string{"consumer"}); err != nil || len(consumers) != 0 {
		t.Fatalf("list consumer-protocol groups: %v %v", consumers.Groups(), err)
	}
	described, err := adm.DescribeGroups(ctx, "active", "idle")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["active"]; d.State != "Stable" || d.ProtocolType != "consumer" || len(d.Members) != 1 {
		t.Fatalf("describe active: %+v", d)
	}
	if d := described["idle"]; d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("describe idle: %+v", d)
	}
	lag, err := adm.Lag(ctx, "active")
	if err != nil {
		t.Fatal(err)
	}
	if total := lag["active"].Lag.Total(); total != 0 {
		t.Fatalf("lag of a caught-up group: %d", total)
	}

	// Offsets of a subscribed topic cannot be deleted; of another they can.
	del, err := adm.DeleteOffsets(ctx, "active", kadm.TopicsSet{"admin-a": {0: {}}})
	if perr, _ := del.Lookup("admin-a", 0); err != nil || !errors.Is(perr, kerr.GroupSubscribedToTopic) {
		t.Fatalf("delete subscribed offsets: %v %v", err, del)
	}
	del, err = adm.DeleteOffsets(ctx, "idle", kadm.TopicsSet{"admin-b": {0: {}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, del.Error())
	}
	if fetched, _ := adm.FetchOffsets(ctx, "idle"); len(fetched) != 0 {
		t.Fatalf("offsets left after delete: %v", fetched)
	}

	// A group with members cannot be deleted; once empty it can.
	deleted, err := adm.DeleteGroups(ctx, "active")
	if err != nil || !errors.Is(deleted["active"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("delete non-empty group: %v %v", err, deleted)
	}
	cons.Close()
	deleted, err = adm.DeleteGroups(ctx, "active", "idle", "never-existed")
	if err != nil || deleted["active"].Err != nil || deleted["idle"].Err != nil || !errors.Is(deleted["never-existed"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("delete groups: %v %+v", err, deleted)
	}
	if listed, err := adm.ListGroups(ctx); err != nil || len(listed) != 0 {
		t.Fatalf("groups left: %v %v", listed.Groups(), err)
	}
}
