package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

func TestBatchRoundTrip(t *testing.T) {
	recs := []record{{key: []byte("k1"), value: []byte("v1")}, {key: []byte("k2")}}
	b := buildBatch(recs, time.UnixMilli(1234))
	var got []record
	if err := readBatch(b, func(h *recordbatch.Header, k, v []byte) error {
		if h.IsControl() || h.IsTransactional() || h.ProducerID != -1 {
			t.Errorf("unexpected header %+v", *h)
		}
		got = append(got, record{k, v})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].key) != "k1" || string(got[0].value) != "v1" || string(got[1].key) != "k2" || got[1].value != nil {
		t.Fatalf("round trip: %q", got)
	}
}

// joinGroup runs the KIP-394 round trip and returns the member id and the
// parked join.
func joinGroup(t *testing.T, c *Coordinator, group string, protocols ...string) (string, chan *kmsg.JoinGroupResponse) {
	t.Helper()
	r := recv(t, joinAsync(c, 9, group, "", nil, protocols...))
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("first join: code %d member %q", r.ErrorCode, r.MemberID)
	}
	return r.MemberID, joinAsync(c, 9, group, r.MemberID, nil, protocols...)
}

func TestClassicJoinSyncHeartbeatLeave(t *testing.T) {
	log := newMemLog(4)
	c := testCoordinator(t, log, newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 4}))

	m1, j1 := joinGroup(t, c, "g", "range", "roundrobin")
	r1 := recv(t, j1)
	if r1.ErrorCode != 0 || r1.Generation != 1 || r1.LeaderID != m1 || *r1.Protocol != "range" || len(r1.Members) != 1 {
		t.Fatalf("join 1: %+v", r1)
	}
	s1 := recv(t, syncAsync(c, "g", m1, 1, map[string][]byte{m1: []byte("a1")}))
	if s1.ErrorCode != 0 || string(s1.MemberAssignment) != "a1" || *s1.Protocol != "range" {
		t.Fatalf("sync 1: %+v", s1)
	}
	if code := heartbeat(c, "g", m1, 1, nil); code != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
	}
	if code := heartbeat(c, "g", m1, 2, nil); code != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat at a wrong generation: %v", kerr.ErrorForCode(code))
	}
	if code := heartbeat(c, "g", "nobody", 1, nil); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of an unknown member: %v", kerr.ErrorForCode(code))
	}
	// A member with no protocol in common is refused.
	if r := recv(t, joinAsync(c, 3, "g", "", nil, "sticky")); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("inconsistent protocol: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// A second member: the group rebalances, the first member learns it
	// from its heartbeat and rejoins.
	m2, j2 := joinGroup(t, c, "g", "roundrobin", "range")
	if code := heartbeat(c, "g", m1, 1, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %v", kerr.ErrorForCode(code))
	}
	if r := recv(t, syncAsync(c, "g", m1, 1, nil)); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("sync during rebalance: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	j1 = joinAsync(c, 9, "g", m1, nil, "range", "roundrobin")
	r1, r2 := recv(t, j1), recv(t, j2)
	if r1.Generation != 2 || r2.Generation != 2 || r1.LeaderID != m1 || len(r1.Members) != 2 || len(r2.Members) != 0 {
		t.Fatalf("rebalance: %+v / %+v", r1, r2)
	}
	// Votes are tied one each; the leader's preference wins.
	if *r1.Protocol != "range" {
		t.Fatalf("selected protocol %q", *r1.Protocol)
	}
	sync2 := syncAsync(c, "g", m2, 2, nil) // parks until the leader's assignment
	s1 = recv(t, syncAsync(c, "g", m1, 2, map[string][]byte{m1: []byte("x"), m2: []byte("y")}))
	s2 := recv(t, sync2)
	if string(s1.MemberAssignment) != "x" || string(s2.MemberAssignment) != "y" {
		t.Fatalf("assignments %q %q", s1.MemberAssignment, s2.MemberAssignment)
	}

	// m2 leaves (batched LeaveGroup); m1 rebalances alone.
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Group = "g"
	lreq.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m2}, {MemberID: "ghost"}}
	lresp := c.LeaveGroup(Client{Version: 5}, lreq)
	if lresp.ErrorCode != 0 || lresp.Members[0].ErrorCode != 0 || lresp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", lresp)
	}
	if code := heartbeat(c, "g", m1, 2, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after leave: %v", kerr.ErrorForCode(code))
	}
	r1 = recv(t, joinAsync(c, 9, "g", m1, nil, "range"))
	if r1.Generation != 3 || len(r1.Members) != 1 {
		t.Fatalf("after leave: %+v", r1)
	}
	recv(t, syncAsync(c, "g", m1, 3, map[string][]byte{m1: []byte("all")}))

	// DescribeGroups shows the stable group; the log holds its metadata.
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{"g", "missing"}
	dresp := c.DescribeGroups(Client{Version: 6}, dreq)
	dg := dresp.Groups[0]
	if dg.State != "Stable" || dg.Protocol != "range" || len(dg.Members) != 1 || string(dg.Members[0].MemberAssignment) != "all" {
		t.Fatalf("describe: %+v", dg)
	}
	if m := dresp.Groups[1]; m.State != "Dead" || m.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe missing: %+v", m)
	}
	var lastGen int32 = -1
	for _, r := range log.records(t) {
		if v, _ := decodeKeyVersion(r.key); v == keyGroupMetadata {
			var gv kmsg.GroupMetadataValue
			if err := gv.ReadFrom(r.value); err != nil {
				t.Fatal(err)
			}
			if gv.Version != groupValueVersion {
				t.Fatalf("group metadata value version %d", gv.Version)
			}
			lastGen = gv.Generation
		}
	}
	if lastGen != 3 {
		t.Fatalf("last stored generation %d", lastGen)
	}
}

func TestClassicSessionTimeoutRemovesMember(t *testing.T) {
	c := testCoordinator(t, newMemLog(1), newMemMeta())
	join := func(member string) chan *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "g", member, "connect"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 300, 2000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "v1", Metadata: []byte{1}}}
		ch := make(chan *kmsg.JoinGroupResponse, 1)
		c.JoinGroup(Client{Version: 3, ID: "worker"}, req, func(r *kmsg.JoinGroupResponse) { ch <- r })
		return ch
	}
	// v3: no KIP-394 round trip, any protocol type.
	a := recv(t, join(""))
	if a.ErrorCode != 0 || *a.ProtocolType != "connect" {
		t.Fatalf("join: %+v", a)
	}
	recv(t, syncAsync(c, "g", a.MemberID, a.Generation, nil))
	bch := join("")
	if code := heartbeat(c, "g", a.MemberID, a.Generation, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
	}
	a = recv(t, join(a.MemberID))
	b := recv(t, bch)
	if a.Generation != 2 || b.Generation != 2 {
		t.Fatalf("generations %d %d", a.Generation, b.Generation)
	}
	bsync := syncAsync(c, "g", b.MemberID, 2, nil)
	recv(t, syncAsync(c, "g", a.MemberID, 2, nil))
	recv(t, bsync)
	// b stops heartbeating; a keeps going and is told to rejoin once b's
	// session expires.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code := heartbeat(c, "g", a.MemberID, 2, nil)
		if code == kerr.RebalanceInProgress.Code {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
		}
		time.Sleep(50 * time.Millisecond)
	}
	a = recv(t, join(a.MemberID))
	if a.Generation != 3 || len(a.Members) != 1 {
		t.Fatalf("after expiry: %+v", a)
	}
}

func TestClassicStaticMembership(t *testing.T) {
	c := testCoordinator(t, newMemLog(1), newMemMeta())
	inst := "instance-1"
	r := recv(t, joinAsync(c, 9, "g", "", &inst, "range"))
	if r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("static join (no member id round trip): %+v", r)
	}
	old := r.MemberID
	recv(t, syncAsync(c, "g", old, 1, map[string][]byte{old: []byte("mine")}))

	// The instance restarts: a new member id, the same generation, no
	// rebalance; as the leader it is told to skip the assignment (v9).
	r = recv(t, joinAsync(c, 9, "g", "", &inst, "range"))
	if r.ErrorCode != 0 || r.Generation != 1 || r.MemberID == old || !r.SkipAssignment || r.LeaderID != r.MemberID {
		t.Fatalf("static rejoin: %+v", r)
	}
	s := recv(t, syncAsync(c, "g", r.MemberID, 1, nil))
	if string(s.MemberAssignment) != "mine" {
		t.Fatalf("kept assignment %q", s.MemberAssignment)
	}
	// The old incarnation is fenced.
	if code := heartbeat(c, "g", old, 1, &inst); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old member heartbeat: %v", kerr.ErrorForCode(code))
	}
	if j := recv(t, joinAsync(c, 9, "g", old, &inst, "range")); j.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("old member join: %v", kerr.ErrorForCode(j.ErrorCode))
	}
	// Administrative removal by instance id.
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Group = "g"
	lreq.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: &inst}}
	if resp := c.LeaveGroup(Client{Version: 5}, lreq); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("leave by instance: %v", kerr.ErrorForCode(resp.Members[0].ErrorCode))
	}
	lg := c.ListGroups(Client{Version: 5}, kmsg.NewPtrListGroupsRequest())
	if len(lg.Groups) != 1 || lg.Groups[0].GroupState != "Empty" || lg.Groups[0].GroupType != "classic" {
		t.Fatalf("list: %+v", lg.Groups)
	}
}

func TestGroupMaxSize(t *testing.T) {
	c := testCoordinator(t, newMemLog(1), newMemMeta(), func(cfg *Config) { cfg.MaxSize = 1 })
	m1, j1 := joinGroup(t, c, "g", "range")
	recv(t, j1)
	recv(t, syncAsync(c, "g", m1, 1, nil))
	if r := recv(t, joinAsync(c, 9, "g", "", nil, "range")); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("second member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
