package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sgMember is a test's view of a streams member: what it owns.
type sgMember struct {
	id      string
	process string
	epoch   int32
	active  taskSet
}

// wordCountTopology is two subtopologies joined by a repartition topic, the
// second with a changelog: Kafka Streams' word count.
func wordCountTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = 0
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"lines"}, []string{"app-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rep := kmsg.NewTopicInfo()
	rep.Topic = "app-words-repartition"
	rep.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}
	cl := kmsg.NewTopicInfo()
	cl.Topic = "app-counts-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.RepartitionSourceTopics, s1.StateChangelogTopics = []kmsg.TopicInfo{rep}, []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

// heartbeat sends a heartbeat reporting the member's active tasks (the
// topology on joining) and adopts the tasks it gets back.
func (m *sgMember) heartbeat(t *testing.T, c *Coordinator, group string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, m.id, m.epoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.Topology = wordCountTopology()
		p := m.process
		req.ProcessID = &p
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		req.ActiveTasks = m.active.wire()
	}
	resp, missing := c.StreamsGroupHeartbeat(Client{Version: 1, ID: "streams-" + m.id, Host: "/127.0.0.1"}, req)
	if resp.ErrorCode != 0 {
		return resp, missing
	}
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		m.active = taskSetOf(resp.ActiveTasks)
	}
	return resp, missing
}

func checkTasksExclusive(t *testing.T, ms ...*sgMember) {
	t.Helper()
	seen := map[taskID]string{}
	for _, m := range ms {
		for task := range m.active {
			if o, ok := seen[task]; ok {
				t.Fatalf("task %v active on %s and %s", task, o, m.id)
			}
			seen[task] = m.id
		}
	}
}

func statusCodes(resp *kmsg.StreamsGroupHeartbeatResponse) []int8 {
	var out []int8
	for _, s := range resp.Status {
		out = append(out, s.StatusCode)
	}
	return out
}

func streamsGroupState(t *testing.T, c *Coordinator, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	return c.StreamsGroupDescribe(Client{}, req).Groups[0]
}

// The first heartbeat reports the internal topics missing and asks for
// them; once they exist the tasks are assigned, and a second member gets
// its share only after the first has given it up.
func TestStreamsGroupCreatesTopicsAssignsAndRevokesBeforeReassigning(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2})
	c := testCoordinator(t, newMemLog(1), meta)
	a := &sgMember{id: "a", process: "p1"}
	resp, missing := a.heartbeat(t, c, "app")
	if resp.ErrorCode != 0 || resp.MemberEpoch != 1 || len(a.active) != 0 {
		t.Fatalf("join: code %d epoch %d tasks %v", resp.ErrorCode, resp.MemberEpoch, a.active)
	}
	if codes := statusCodes(resp); len(codes) != 1 || codes[0] != statusMissingInternalTopics {
		t.Fatalf("status %v, want MISSING_INTERNAL_TOPICS", resp.Status)
	}
	if len(missing) != 2 || missing[0].Name != "app-counts-changelog" || missing[0].Partitions != 2 ||
		missing[0].Configs["cleanup.policy"] != "compact" || missing[1].Name != "app-words-repartition" || missing[1].Partitions != 2 {
		t.Fatalf("missing internal topics %+v", missing)
	}
	if s := streamsGroupState(t, c, "app").State; s != "NotReady" {
		t.Fatalf("state %s, want NotReady", s)
	}

	meta.add(TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2})
	meta.add(TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	c.TopicsChanged()
	resp, missing = a.heartbeat(t, c, "app")
	if resp.ErrorCode != 0 || len(missing) != 0 || len(resp.Status) != 0 || resp.MemberEpoch != 2 || len(a.active) != 4 {
		t.Fatalf("after topics: code %d status %v missing %v epoch %d tasks %v", resp.ErrorCode, resp.Status, missing, resp.MemberEpoch, a.active)
	}
	if resp.HeartbeatIntervalMillis != 5000 || resp.AcceptableRecoveryLag != 10000 || resp.TaskOffsetIntervalMillis != 60000 {
		t.Fatalf("settings in answer: %+v", resp)
	}
	resp, _ = a.heartbeat(t, c, "app")
	if resp.ActiveTasks != nil {
		t.Fatalf("unchanged assignment sent again: %v", resp.ActiveTasks)
	}
	if d := streamsGroupState(t, c, "app"); d.State != "Stable" || len(d.Members) != 1 || d.Topology == nil || len(d.Topology.Subtopologies) != 2 {
		t.Fatalf("describe: %+v", d)
	}

	// b joins: a must give up two tasks first, b waits for them.
	b := &sgMember{id: "b", process: "p2"}
	resp, _ = b.heartbeat(t, c, "app")
	if resp.ErrorCode != 0 || resp.MemberEpoch != 3 || len(b.active) != 0 {
		t.Fatalf("b join: code %d epoch %d tasks %v", resp.ErrorCode, resp.MemberEpoch, b.active)
	}
	checkTasksExclusive(t, a, b)
	resp, _ = a.heartbeat(t, c, "app")
	if resp.MemberEpoch != 2 || len(a.active) != 2 {
		t.Fatalf("a revoking: epoch %d tasks %v", resp.MemberEpoch, a.active)
	}
	if s := streamsGroupState(t, c, "app").State; s != "Reconciling" {
		t.Fatalf("state %s, want Reconciling", s)
	}
	checkTasksExclusive(t, a, b)
	resp, _ = b.heartbeat(t, c, "app") // a has not confirmed yet
	if len(b.active) != 0 {
		t.Fatalf("b got %v before a released them", b.active)
	}
	resp, _ = a.heartbeat(t, c, "app") // confirms: reports only its two
	if resp.MemberEpoch != 3 || len(a.active) != 2 {
		t.Fatalf("a after revocation: epoch %d tasks %v", resp.MemberEpoch, a.active)
	}
	b.heartbeat(t, c, "app")
	if len(b.active) != 2 {
		t.Fatalf("b tasks %v after release", b.active)
	}
	checkTasksExclusive(t, a, b)
	b.heartbeat(t, c, "app")
	if d := streamsGroupState(t, c, "app"); d.State != "Stable" || d.Epoch != 3 || d.AssignmentEpoch != 3 {
		t.Fatalf("describe after reconciliation: %s epoch %d/%d", d.State, d.Epoch, d.AssignmentEpoch)
	}

	// a leaves: b gets everything at a new epoch.
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "app", "a", leaveEpoch
	if r, _ := c.StreamsGroupHeartbeat(Client{}, req); r.ErrorCode != 0 || r.MemberEpoch != leaveEpoch {
		t.Fatalf("leave: %+v", r)
	}
	resp, _ = b.heartbeat(t, c, "app")
	if resp.MemberEpoch != 4 || len(b.active) != 4 {
		t.Fatalf("b after a left: epoch %d tasks %v", resp.MemberEpoch, b.active)
	}
}

func TestStreamsGroupMissingSourceTopic(t *testing.T) {
	c := testCoordinator(t, newMemLog(1), newMemMeta())
	a := &sgMember{id: "a", process: "p1"}
	resp, missing := a.heartbeat(t, c, "app")
	if resp.ErrorCode != 0 || len(missing) != 0 {
		t.Fatalf("code %d missing %v", resp.ErrorCode, missing)
	}
	if codes := statusCodes(resp); len(codes) != 1 || codes[0] != statusMissingSourceTopics ||
		!strings.Contains(resp.Status[0].StatusDetail, "lines") {
		t.Fatalf("status %+v, want MISSING_SOURCE_TOPICS naming lines", resp.Status)
	}
}

func TestStreamsGroupHeartbeatValidationAndFencing(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	c := testCoordinator(t, newMemLog(1), meta)
	send := func(mod func(*kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "app", "x", 1000
		req.Topology = wordCountTopology()
		p := "p"
		req.ProcessID = &p
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		mod(req)
		r, _ := c.StreamsGroupHeartbeat(Client{}, req)
		return r
	}
	for _, tc := range []struct {
		name string
		mod  func(*kmsg.StreamsGroupHeartbeatRequest)
		code int16
	}{
		{"empty member id", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{"no topology on join", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }, kerr.InvalidRequest.Code},
		{"no rebalance timeout", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest.Code},
		{"tasks on join", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
		}, kerr.InvalidRequest.Code},
		{"bad epoch", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code},
		{"duplicate subtopology", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[1].SubtopologyID = "0"
		}, kerr.StreamsInvalidTopology.Code},
		{"unknown member", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = 5; r.Topology = nil }, kerr.UnknownMemberID.Code},
		{"too many subtopologies", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			for i := range maxSubtopologies {
				st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
				st.SubtopologyID = "x" + itoa(int32(i))
				r.Topology.Subtopologies = append(r.Topology.Subtopologies, st)
			}
		}, kerr.StreamsInvalidTopology.Code},
	} {
		if r := send(tc.mod); r.ErrorCode != tc.code {
			t.Errorf("%s: code %d, want %d (%v)", tc.name, r.ErrorCode, tc.code, r.ErrorMessage)
		}
	}
	a := &sgMember{id: "a", process: "p1"}
	a.heartbeat(t, c, "app")
	if a.epoch != 1 || len(a.active) != 4 {
		t.Fatalf("join: epoch %d tasks %v", a.epoch, a.active)
	}
	stale := &sgMember{id: "a", epoch: 7, active: a.active}
	if r, _ := stale.heartbeat(t, c, "app"); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("epoch ahead: code %d, want FENCED_MEMBER_EPOCH", r.ErrorCode)
	}

	// The group is a streams group to the other protocols and the offset APIs.
	chb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	chb.Group, chb.MemberID, chb.RebalanceTimeoutMillis, chb.SubscribedTopicNames = "app", "c", 1000, []string{"lines"}
	chb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := c.ConsumerGroupHeartbeat(Client{Version: 1}, chb); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat on a streams group: code %d", r.ErrorCode)
	}
	if r := commit(c, 9, "app", "a", a.epoch-1, "lines", map[int32]int64{0: 1}); r.Topics[0].Partitions[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: code %d", r.Topics[0].Partitions[0].ErrorCode)
	}
	if r := commit(c, 9, "app", "a", a.epoch, "lines", map[int32]int64{0: 1}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: code %d", r.Topics[0].Partitions[0].ErrorCode)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version, lg.TypesFilter = 5, []string{"streams"}
	if r := c.ListGroups(Client{Version: 5}, lg); len(r.Groups) != 1 || r.Groups[0].GroupType != "streams" || r.Groups[0].ProtocolType != "streams" {
		t.Fatalf("ListGroups streams: %+v", r.Groups)
	}
	if code := c.deleteGroup("app"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a group with members: code %d", code)
	}
}

// A member that stops heartbeating is fenced after the group's session
// timeout (its group config), and its tasks go to the others.
func TestStreamsGroupSessionTimeoutFromGroupSettings(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	c := testCoordinator(t, newMemLog(1), meta, func(cfg *Config) {
		cfg.StreamsSettings = func(id string) StreamsSettings {
			s := cfg.Streams
			if id == "app" {
				s.Session, s.Heartbeat, s.NumStandby = 50*time.Millisecond, 20*time.Millisecond, 1
			}
			return s
		}
	})
	a := &sgMember{id: "a", process: "p1"}
	b := &sgMember{id: "b", process: "p2"}
	resp, _ := a.heartbeat(t, c, "app")
	if resp.HeartbeatIntervalMillis != 20 {
		t.Fatalf("heartbeat interval %d, want the group's 20", resp.HeartbeatIntervalMillis)
	}
	b.heartbeat(t, c, "app")
	waitFor(t, "a fenced after its session", func() bool {
		b.heartbeat(t, c, "app")
		d := streamsGroupState(t, c, "app")
		return len(d.Members) == 1 && d.Members[0].MemberID == "b"
	})
	b.heartbeat(t, c, "app")
	if len(b.active) != 4 {
		t.Fatalf("b has %v after a was fenced", b.active)
	}
	d := streamsGroupState(t, c, "app")
	if n := len(d.Members[0].TargetAssignment.StandbyTasks); n != 0 {
		t.Fatalf("standby tasks with one process: %v", d.Members[0].TargetAssignment.StandbyTasks)
	}
}

// A member with a user endpoint (Interactive Queries) is told which
// partitions each endpoint serves when its endpoint epoch is behind, and
// again after the assignments change.
func TestStreamsGroupPartitionsByUserEndpoint(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	c := testCoordinator(t, newMemLog(1), meta)
	send := func(member string, epoch, endpointEpoch int32, active []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.EndpointInformationEpoch = "app", member, epoch, endpointEpoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.Topology = 60000, wordCountTopology()
			p := "p-" + member
			req.ProcessID = &p
			req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "host-" + member, Port: 9000}
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		} else {
			req.ActiveTasks = active
		}
		resp, _ := c.StreamsGroupHeartbeat(Client{}, req)
		if resp.ErrorCode != 0 {
			t.Fatalf("%s: code %d", member, resp.ErrorCode)
		}
		return resp
	}
	r := send("a", 0, 0, nil)
	if r.EndpointInformationEpoch == 0 || len(r.PartitionsByUserEndpoint) != 1 {
		t.Fatalf("first heartbeat: epoch %d endpoints %+v", r.EndpointInformationEpoch, r.PartitionsByUserEndpoint)
	}
	e := r.PartitionsByUserEndpoint[0]
	got := map[string][]int32{}
	for _, p := range e.ActivePartitions {
		got[p.Topic] = p.Partitions
	}
	if e.UserEndpoint.Host != "host-a" || e.UserEndpoint.Port != 9000 || len(got["lines"]) != 2 || len(got["app-words-repartition"]) != 2 {
		t.Fatalf("endpoint partitions %+v", e)
	}
	// Up to date: nothing sent.
	r2 := send("a", r.MemberEpoch, r.EndpointInformationEpoch, r.ActiveTasks)
	if r2.PartitionsByUserEndpoint != nil {
		t.Fatalf("endpoints sent to an up-to-date member: %+v", r2.PartitionsByUserEndpoint)
	}
	// b joins and gets tasks once a gives them up: a learns of b's endpoint.
	rb := send("b", 0, 0, nil)
	ra := send("a", r2.MemberEpoch, r.EndpointInformationEpoch, r.ActiveTasks)
	ra = send("a", ra.MemberEpoch, r.EndpointInformationEpoch, ra.ActiveTasks)
	rb = send("b", rb.MemberEpoch, rb.EndpointInformationEpoch, []kmsg.TaskIDs{})
	ra = send("a", ra.MemberEpoch, r.EndpointInformationEpoch, ra.ActiveTasks)
	if len(ra.PartitionsByUserEndpoint) != 2 {
		t.Fatalf("a does not see both endpoints: %+v", ra.PartitionsByUserEndpoint)
	}
	for _, ep := range ra.PartitionsByUserEndpoint {
		n := 0
		for _, p := range ep.ActivePartitions {
			n += len(p.Partitions)
		}
		if n != 2 {
			t.Fatalf("endpoint %s serves %d partitions, want 2: %+v", ep.UserEndpoint.Host, n, ra.PartitionsByUserEndpoint)
		}
	}
}

// A static member (group.instance.id) that leaves with epoch -2 keeps its
// tasks: the other member does not get them, and the instance rejoining
// under a new member id gets them back without a new group epoch. A second
// live member with the same instance id is refused, and an old member id
// of a replaced instance is fenced.
func TestStreamsGroupStaticMember(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	c := testCoordinator(t, newMemLog(1), meta)
	inst := "instance-1"
	send := func(member string, epoch int32, instance *string, active taskSet) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = "app", member, epoch, instance
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.Topology = 60000, wordCountTopology()
			p := "p-" + member
			if instance != nil {
				p = "p-" + *instance
			}
			req.ProcessID = &p
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		} else if epoch > 0 {
			req.ActiveTasks = active.wire()
		}
		resp, _ := c.StreamsGroupHeartbeat(Client{}, req)
		return resp
	}
	a := send("a1", 0, &inst, nil)
	b := send("b", 0, nil, nil)
	aTasks := taskSetOf(a.ActiveTasks)
	a = send("a1", a.MemberEpoch, &inst, aTasks) // revokes half
	if a.ActiveTasks != nil {
		aTasks = taskSetOf(a.ActiveTasks)
	}
	a = send("a1", a.MemberEpoch, &inst, aTasks)
	b = send("b", b.MemberEpoch, nil, taskSet{})
	if len(aTasks) != 2 || countTasksOf(b) != 2 {
		t.Fatalf("a %v, b %v", aTasks, b.ActiveTasks)
	}
	epoch := streamsGroupState(t, c, "app").Epoch

	if r := send("a1", staticLeaveEpoch, &inst, nil); r.ErrorCode != 0 || r.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", r)
	}
	if r := send("b", b.MemberEpoch, nil, taskSetOf(b.ActiveTasks)); r.ErrorCode != 0 || r.ActiveTasks != nil {
		t.Fatalf("b after a's static leave: %+v", r)
	}
	if r := send("a2", 0, &inst, nil); r.ErrorCode != 0 || !taskSetOf(r.ActiveTasks).equal(aTasks) {
		t.Fatalf("instance rejoining as a2: code %d tasks %v, want %v", r.ErrorCode, r.ActiveTasks, aTasks)
	}
	if e := streamsGroupState(t, c, "app").Epoch; e != epoch {
		t.Fatalf("group epoch %d after a static rejoin, was %d", e, epoch)
	}
	if r := send("a3", 0, &inst, nil); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("a second live member for the instance: code %d", r.ErrorCode)
	}
	if r := send("a1", a.MemberEpoch, &inst, aTasks); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("the replaced member id: code %d", r.ErrorCode)
	}
}

func countTasksOf(r *kmsg.StreamsGroupHeartbeatResponse) int {
	n := 0
	for _, t := range r.ActiveTasks {
		n += len(t.Partitions)
	}
	return n
}
