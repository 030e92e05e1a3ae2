package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgMember is a test's view of a KIP-848 member: what it owns.
type cgMember struct {
	id       string
	epoch    int32
	instance *string
	owned    partitionSet

	mayDescribe func(string) bool // its principal's DESCRIBE on topics; nil: all
}

// heartbeat848 sends a full heartbeat reporting owned and adopts the
// assignment it gets back.
func (m *cgMember) heartbeat(t *testing.T, c *Coordinator, group string, sub []string, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = group, m.id, m.epoch, m.instance
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames, req.SubscribedTopicRegex = sub, regex
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, tid := range m.owned.sortedTopics() {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tid, Partitions: sortedPartitions(m.owned[tid])})
	}
	resp := c.ConsumerGroupHeartbeat(Client{Version: 1, ID: "c", Host: "/127.0.0.1", MayDescribeTopic: m.mayDescribe}, req)
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = partitionSet{}
		for _, tp := range resp.Assignment.Topics {
			for _, p := range tp.Partitions {
				m.owned.add(tp.TopicID, p)
			}
		}
	}
	return resp
}

// checkExclusive fails if two members own the same partition.
func checkExclusive(t *testing.T, ms ...*cgMember) {
	t.Helper()
	seen := map[topicPartition]string{}
	for _, m := range ms {
		for tid, ps := range m.owned {
			for p := range ps {
				if other, ok := seen[topicPartition{tid, p}]; ok {
					t.Fatalf("partition %d owned by %s and %s", p, other, m.id)
				}
				seen[topicPartition{tid, p}] = m.id
			}
		}
	}
}

func TestConsumerGroupRevokesBeforeReassigning(t *testing.T) {
	tid := topicID(7)
	c := testCoordinator(t, newMemLog(1), newMemMeta(TopicMeta{Name: "t", ID: tid, Partitions: 4}))
	sub := []string{"t"}
	a := &cgMember{id: "member-a"}
	if r := a.heartbeat(t, c, "g", sub, nil); r.ErrorCode != 0 || a.epoch != 1 || a.owned.size() != 4 {
		t.Fatalf("a joins: %+v owned %d", r, a.owned.size())
	}
	b := &cgMember{id: "member-b"}
	b.heartbeat(t, c, "g", sub, nil)
	if b.epoch != 2 || b.owned.size() != 0 {
		t.Fatalf("b joins: epoch %d owned %d (a has not revoked yet)", b.epoch, b.owned.size())
	}
	// a learns it must revoke two partitions; its epoch stays until then.
	a.heartbeat(t, c, "g", sub, nil)
	if a.epoch != 1 || a.owned.size() != 2 {
		t.Fatalf("a revoking: epoch %d owned %d", a.epoch, a.owned.size())
	}
	checkExclusive(t, a, b)
	if st := describeState(t, c, "g"); st != "Reconciling" {
		t.Fatalf("state %s", st)
	}
	// b still waits: a has not confirmed the revocation yet (a heartbeat
	// reporting nothing keeps a's partitions).
	b.heartbeat(t, c, "g", sub, nil)
	if b.owned.size() != 0 {
		t.Fatalf("b got partitions before a revoked them")
	}
	a.heartbeat(t, c, "g", sub, nil) // reports its two remaining partitions
	if a.epoch != 2 {
		t.Fatalf("a after revoking: epoch %d", a.epoch)
	}
	b.heartbeat(t, c, "g", sub, nil)
	if b.owned.size() != 2 {
		t.Fatalf("b after a revoked: owned %d", b.owned.size())
	}
	checkExclusive(t, a, b)
	if st := describeState(t, c, "g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}

	// Errors: a wrong epoch is fenced, an unknown member is unknown.
	bad := &cgMember{id: b.id, epoch: 99}
	if r := bad.heartbeat(t, c, "g", sub, nil); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("wrong epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	ghost := &cgMember{id: "ghost", epoch: 3}
	if r := ghost.heartbeat(t, c, "g", sub, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A commit with an old epoch is stale; with the member's epoch it works.
	if r := commit(c, 9, "g", a.id, 1, "t", map[int32]int64{0: 5}); r.Topics[0].Partitions[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := commit(c, 9, "g", a.id, a.epoch, "t", map[int32]int64{0: 5}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}

	// a leaves: b gets everything once it heartbeats.
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "g", a.id, -1
	if r := c.ConsumerGroupHeartbeat(Client{Version: 1}, leave); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	b.heartbeat(t, c, "g", sub, nil)
	if b.owned.size() != 4 {
		t.Fatalf("b after a left: owned %d", b.owned.size())
	}

	// A classic member may join the consumer group (mixed.go): first it is
	// given a member id, as by a classic group.
	if r := recv(t, joinAsync(c, 9, "g", "", nil, "range")); r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("classic join of a consumer group: %v %q", kerr.ErrorForCode(r.ErrorCode), r.MemberID)
	}
	lg := c.ListGroups(Client{Version: 5}, &kmsg.ListGroupsRequest{TypesFilter: []string{"consumer"}})
	if len(lg.Groups) != 1 || lg.Groups[0].ProtocolType != "consumer" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("list consumer groups: %+v", lg.Groups)
	}
}

func describeState(t *testing.T, c *Coordinator, group string) string {
	t.Helper()
	resp := c.ConsumerGroupDescribe(Client{Version: 1}, &kmsg.ConsumerGroupDescribeRequest{Groups: []string{group}})
	if resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe: %v", kerr.ErrorForCode(resp.Groups[0].ErrorCode))
	}
	for _, m := range resp.Groups[0].Members {
		if m.MemberType != 1 {
			t.Fatalf("member type %d", m.MemberType)
		}
	}
	return resp.Groups[0].State
}

func TestConsumerGroupRegexFollowsNewTopics(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "logs-a", ID: topicID(1), Partitions: 2}, TopicMeta{Name: "other", ID: topicID(3), Partitions: 1})
	c := testCoordinator(t, newMemLog(1), meta)
	re := "logs-.*"
	m := &cgMember{id: "m"}
	m.heartbeat(t, c, "g", nil, &re)
	if m.owned.size() != 2 {
		t.Fatalf("owned %d", m.owned.size())
	}
	meta.add(TopicMeta{Name: "logs-b", ID: topicID(2), Partitions: 3})
	c.TopicsChanged()
	m.heartbeat(t, c, "g", nil, &re)
	if m.owned.size() != 5 || m.epoch != 2 {
		t.Fatalf("after a matching topic appeared: owned %d epoch %d", m.owned.size(), m.epoch)
	}
	bad := "logs-("
	if r := (&cgMember{id: "n"}).heartbeat(t, c, "g", nil, &bad); r.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad regex: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// The group consumes logs-a: OffsetDelete refuses it, not "other".
	commit(c, 9, "g", m.id, m.epoch, "other", map[int32]int64{0: 1})
	dreq := kmsg.NewPtrOffsetDeleteRequest()
	dreq.Group = "g"
	dreq.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "logs-a", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "other", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	resp := c.OffsetDelete(Client{}, dreq)
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || resp.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", resp.Topics)
	}
}

func TestConsumerGroupStaticMember(t *testing.T) {
	c := testCoordinator(t, newMemLog(1), newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 3}))
	inst := "i1"
	sub := []string{"t"}
	a := &cgMember{id: "a1", instance: &inst}
	a.heartbeat(t, c, "g", sub, nil)
	b := &cgMember{id: "b"}
	b.heartbeat(t, c, "g", sub, nil)
	a.heartbeat(t, c, "g", sub, nil)
	a.heartbeat(t, c, "g", sub, nil)
	b.heartbeat(t, c, "g", sub, nil)
	checkExclusive(t, a, b)
	kept := a.owned

	// A second process with the same instance id cannot join while the
	// first is alive.
	dup := &cgMember{id: "a2", instance: &inst}
	if r := dup.heartbeat(t, c, "g", sub, nil); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("duplicate instance: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// a leaves for now (epoch -2) and comes back as a new process: same
	// partitions, no reassignment to b meanwhile.
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch, leave.InstanceID = "g", a.id, -2, &inst
	if r := c.ConsumerGroupHeartbeat(Client{Version: 1}, leave); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	before := b.owned.size()
	b.heartbeat(t, c, "g", sub, nil)
	if b.owned.size() != before {
		t.Fatalf("b took partitions of a departed static member")
	}
	back := &cgMember{id: "a2", instance: &inst}
	if r := back.heartbeat(t, c, "g", sub, nil); r.ErrorCode != 0 || !back.owned.equal(kept) {
		t.Fatalf("static rejoin: %+v owned %v want %v", r, back.owned, kept)
	}
	// The old incarnation is fenced.
	if r := a.heartbeat(t, c, "g", sub, nil); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("old incarnation: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestConsumerGroupHeartbeatValidation(t *testing.T) {
	c := testCoordinator(t, newMemLog(1), newMemMeta())
	for _, tc := range []struct {
		name string
		mod  func(*kmsg.ConsumerGroupHeartbeatRequest)
		code int16
	}{
		{"no member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest.Code},
		{"owned partitions on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}, kerr.InvalidRequest.Code},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest.Code},
		{"bad epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { s := "sticky"; r.ServerAssignor = &s }, kerr.UnsupportedAssignor.Code},
		{"unknown group (state lost with a coordinator move: rejoin)", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 5 }, kerr.UnknownMemberID.Code},
	} {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", "m", 1000
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		tc.mod(req)
		if r := c.ConsumerGroupHeartbeat(Client{Version: 1}, req); r.ErrorCode != tc.code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(tc.code))
		}
	}
}

// A regex resolves to the matching topics the heartbeating principal may
// describe (Kafka's refreshRegularExpressions with the request's context);
// a topic it may not describe is left out without an error. The group's
// regexes are resolved with the authorization of whichever heartbeat asks
// for the resolution, as Kafka does. A coordinator that loads the group
// resolves again at the next heartbeat, with that member's authorization,
// and bumps nothing when the result is the same.
func TestConsumerGroupRegexFilteredByDescribe(t *testing.T) {
	log := newMemLog(1)
	open, secret := topicID(1), topicID(2)
	meta := newMemMeta(TopicMeta{Name: "r-open", ID: open, Partitions: 2}, TopicMeta{Name: "r-secret", ID: secret, Partitions: 1})
	c := testCoordinator(t, log, meta)
	notSecret := func(topic string) bool { return topic != "r-secret" }
	re := "r-.*"
	m := &cgMember{id: "member-regex", mayDescribe: notSecret}
	for range 2 { // join, then confirm the assignment
		if r := m.heartbeat(t, c, "g", nil, &re); r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if m.owned.size() != 2 || m.owned[secret] != nil {
		t.Fatalf("owned %v, want r-open's two partitions only", m.owned)
	}
	epoch := m.epoch
	c.Close()

	c2 := testCoordinator(t, log, meta)
	if r := m.heartbeat(t, c2, "g", nil, &re); r.ErrorCode != 0 || m.epoch != epoch || m.owned.size() != 2 || m.owned[secret] != nil {
		t.Fatalf("after the move: %v epoch %d (was %d) owned %v", kerr.ErrorForCode(r.ErrorCode), m.epoch, epoch, m.owned)
	}
	// A member whose principal may describe everything joins with the same
	// regex: its heartbeat resolves the group's regex, and r-secret is
	// assigned (to one of them) from then on.
	n := &cgMember{id: "member-all"}
	var total int
	for range 4 {
		for _, x := range []*cgMember{n, m} {
			if r := x.heartbeat(t, c2, "g", nil, &re); r.ErrorCode != 0 {
				t.Fatalf("heartbeat %s: %v", x.id, kerr.ErrorForCode(r.ErrorCode))
			}
		}
	}
	total = m.owned.size() + n.owned.size()
	if total != 3 || m.owned[secret] == nil && n.owned[secret] == nil {
		t.Fatalf("owned: %s %v, %s %v; want the three partitions of both topics", m.id, m.owned, n.id, n.owned)
	}
	checkExclusive(t, m, n)
}
