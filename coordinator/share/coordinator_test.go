package share

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fakeClock struct{ now time.Time }

func (f *fakeClock) Now() time.Time { return f.now }

func newTestCoordinator(topics map[string]int32) (*Coordinator, *fakeClock) {
	clk := &fakeClock{now: t0}
	cfg := DefaultConfig()
	cfg.Now = clk.Now
	cfg.Topic = func(name string) ([16]byte, int32, bool) {
		n, ok := topics[name]
		return [16]byte{byte(len(name))}, n, ok
	}
	return New(cfg), clk
}

func heartbeat(c *Coordinator, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return c.Heartbeat(Client{ID: "cl", Host: "/127.0.0.1"}, req, false)
}

func assigned(r *kmsg.ShareGroupHeartbeatResponse) int {
	if r.Assignment == nil {
		return -1
	}
	n := 0
	for _, tp := range r.Assignment.TopicPartitions {
		n += len(tp.Partitions)
	}
	return n
}

func TestHeartbeatJoinAssignLeave(t *testing.T) {
	c, clk := newTestCoordinator(map[string]int32{"t": 4})
	r := heartbeat(c, "g", "m1", 0, "t")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || assigned(r) != 4 {
		t.Fatalf("join: code %d epoch %d assigned %d, want 0, 1, all 4", r.ErrorCode, r.MemberEpoch, assigned(r))
	}
	if r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("heartbeat interval %d", r.HeartbeatIntervalMillis)
	}
	// A steady heartbeat carries no assignment.
	if r := heartbeat(c, "g", "m1", 1); r.ErrorCode != 0 || r.Assignment != nil || r.MemberEpoch != 1 {
		t.Fatalf("steady heartbeat: %+v", r)
	}
	// A second member: the four partitions are split two and two.
	r2 := heartbeat(c, "g", "m2", 0, "t")
	if r2.MemberEpoch != 2 || assigned(r2) != 2 {
		t.Fatalf("second member: epoch %d assigned %d", r2.MemberEpoch, assigned(r2))
	}
	r = heartbeat(c, "g", "m1", 1)
	if r.MemberEpoch != 2 || assigned(r) != 2 {
		t.Fatalf("first member after the join: epoch %d assigned %d", r.MemberEpoch, assigned(r))
	}
	// A stale epoch is fenced; an unknown member is refused.
	if r := heartbeat(c, "g", "m1", 1); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("stale epoch: code %d", r.ErrorCode)
	}
	if r := heartbeat(c, "g", "nobody", 3); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: code %d", r.ErrorCode)
	}
	if r := heartbeat(c, "g", "nobody", -1); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member leaving: code %d", r.ErrorCode)
	}
	if r := heartbeat(c, "nogroup", "m1", -1); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("leaving a missing group: code %d", r.ErrorCode)
	}
	// Leaving, then the other member's session timing out, empties the group.
	if r := heartbeat(c, "g", "m2", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if code, _ := c.Delete("g"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a live member: code %d", code)
	}
	clk.now = clk.now.Add(46 * time.Second)
	if code, ok := c.Delete("g"); !ok || code != 0 {
		t.Fatalf("delete after the session timeout: code %d ok %v", code, ok)
	}
}

func TestHeartbeatMoreMembersThanPartitionsShare(t *testing.T) {
	c, _ := newTestCoordinator(map[string]int32{"t": 1})
	for i, m := range []string{"a", "b", "c"} {
		r := heartbeat(c, "g", m, 0, "t")
		if r.ErrorCode != 0 || assigned(r) != 1 {
			t.Fatalf("member %d: code %d assigned %d, want the one partition", i, r.ErrorCode, assigned(r))
		}
	}
}

func TestHeartbeatValidation(t *testing.T) {
	c, _ := newTestCoordinator(map[string]int32{"t": 1})
	for name, r := range map[string]*kmsg.ShareGroupHeartbeatResponse{
		"empty member":        heartbeat(c, "g", "", 0, "t"),
		"empty group":         heartbeat(c, "", "m", 0, "t"),
		"join without topics": heartbeat(c, "g", "m", 0),
		"bad epoch":           heartbeat(c, "g", "m", -2, "t"),
	} {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("%s: code %d, want INVALID_REQUEST", name, r.ErrorCode)
		}
	}
}

func TestShareSessionEpochs(t *testing.T) {
	c, _ := newTestCoordinator(nil)
	tp := TopicPartition{Partition: 0}
	if _, code := c.SessionUpdate("g", "m", 1, nil, nil, false); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: code %d", code)
	}
	parts, code := c.SessionUpdate("g", "m", 0, []TopicPartition{tp}, nil, false)
	if code != 0 || len(parts) != 1 {
		t.Fatalf("open: code %d parts %v", code, parts)
	}
	if _, code := c.SessionUpdate("g", "m", 2, nil, nil, false); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("skipped epoch: code %d", code)
	}
	if parts, code := c.SessionUpdate("g", "m", 1, nil, []TopicPartition{tp}, false); code != 0 || len(parts) != 0 {
		t.Fatalf("epoch 1 forgetting the partition: code %d parts %v", code, parts)
	}
	if _, code := c.SessionUpdate("g", "m", 0, nil, nil, true); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("acknowledge at epoch 0: code %d", code)
	}
	if _, code := c.SessionUpdate("g", "m", 2, nil, nil, true); code != 0 {
		t.Fatalf("acknowledge at epoch 2: code %d", code)
	}
	// Closing releases what the member holds.
	sp := c.Partition("g", tp.Topic, tp.Partition)
	sp.Lock()
	sp.Init(0)
	sp.Acquire("m", oneBatch(3), 10, t0, testLimits())
	sp.Unlock()
	c.CloseSession("g", "m")
	sp.Lock()
	s, _ := sp.State(0)
	sp.Unlock()
	if s != Available {
		t.Fatalf("offset 0 is %v after the session closed", s)
	}
	if _, code := c.SessionUpdate("g", "m", 3, nil, nil, false); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("closed session: code %d", code)
	}
}

// TestMaxGroupsBoundsState: at MaxGroups a new group is refused (by a
// heartbeat, a share session, an admin call) until a group has had no
// member and no session for EmptyGroupRetention; then that group's state,
// share-partitions included, is forgotten to make room.
func TestMaxGroupsBoundsState(t *testing.T) {
	clk := &fakeClock{now: t0}
	cfg := DefaultConfig()
	cfg.Now, cfg.MaxGroups = clk.Now, 3
	cfg.Topic = func(string) ([16]byte, int32, bool) { return [16]byte{1}, 1, true }
	c := New(cfg)
	tp := TopicPartition{Topic: [16]byte{1}}
	if r := heartbeat(c, "a", "m", 0, "t"); r.ErrorCode != 0 {
		t.Fatalf("join a: %d", r.ErrorCode)
	}
	if _, code := c.SessionUpdate("b", "m", InitialEpoch, []TopicPartition{tp}, nil, false); code != 0 {
		t.Fatalf("session b: %d", code)
	}
	c.Partition("b", tp.Topic, 0).Init(0)
	if !c.EnsureGroup("c") {
		t.Fatal("alter offsets of c refused under the bound")
	}
	if r := heartbeat(c, "d", "m", 0, "t"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("join d over the bound: code %d, want GROUP_MAX_SIZE_REACHED", r.ErrorCode)
	}
	if _, code := c.SessionUpdate("d", "m", InitialEpoch, nil, nil, false); code != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("session d over the bound: code %d", code)
	}
	if c.EnsureGroup("d") {
		t.Fatal("EnsureGroup over the bound succeeded")
	}
	// b's session closes; a's member leaves. Within the retention nothing
	// is forgotten.
	c.CloseSession("b", "m")
	if r := heartbeat(c, "a", "m", -1); r.ErrorCode != 0 {
		t.Fatalf("leave a: %d", r.ErrorCode)
	}
	clk.now = clk.now.Add(cfg.SessionTimeout / 2)
	if r := heartbeat(c, "d", "m", 0, "t"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("join d within the retention: code %d", r.ErrorCode)
	}
	if n, _ := c.Groups(); n != 3 {
		t.Fatalf("%d groups, want 3", n)
	}
	clk.now = clk.now.Add(cfg.SessionTimeout)
	if r := heartbeat(c, "d", "m", 0, "t"); r.ErrorCode != 0 {
		t.Fatalf("join d after the retention: code %d", r.ErrorCode)
	}
	if groups, parts := c.Groups(); groups != 1 || parts != 0 {
		t.Fatalf("after the sweep: %d groups, %d share-partitions; want d alone", groups, parts)
	}
	if c.IsShareGroup("a") || c.LookupPartition("b", tp.Topic, 0) != nil {
		t.Fatal("a forgotten group's state is still there")
	}
	// A group with a live member is never forgotten.
	for _, g := range []string{"e", "f"} {
		if r := heartbeat(c, g, "m", 0, "t"); r.ErrorCode != 0 {
			t.Fatalf("join %s: %d", g, r.ErrorCode)
		}
	}
	clk.now = clk.now.Add(cfg.SessionTimeout / 2)
	for _, g := range []string{"d", "e", "f"} {
		if r := heartbeat(c, g, "m", 1); r.ErrorCode != 0 {
			t.Fatalf("heartbeat %s: %d", g, r.ErrorCode)
		}
	}
	clk.now = clk.now.Add(cfg.SessionTimeout / 2)
	if r := heartbeat(c, "g", "m", 0, "t"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("join g with three live groups: code %d", r.ErrorCode)
	}
}

// TestSessionKeepsOnlyExistingPartitions: a session does not grow with
// partitions that do not exist.
func TestSessionKeepsOnlyExistingPartitions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PartitionExists = func(tp TopicPartition) bool { return tp.Partition < 2 }
	c := New(cfg)
	var add []TopicPartition
	for p := range int32(1000) {
		add = append(add, TopicPartition{Partition: p})
	}
	parts, code := c.SessionUpdate("g", "m", InitialEpoch, add, nil, false)
	if code != 0 || len(parts) != 2 {
		t.Fatalf("code %d, %d partitions kept, want 2", code, len(parts))
	}
	parts, code = c.SessionUpdate("g", "m", 1, add, nil, false)
	if code != 0 || len(parts) != 2 {
		t.Fatalf("code %d, %d partitions kept, want 2", code, len(parts))
	}
}
