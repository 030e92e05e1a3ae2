package group

import (
	"bytes"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

// classicJoin sends a classic consumer's JoinGroup (v9, protocol "range")
// subscribing to topic t and reporting owned partitions of it.
func classicJoin(t *testing.T, c *Coordinator, group, member string, owned ...int32) *kmsg.JoinGroupResponse {
	t.Helper()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 1
	meta.Topics = []string{"t"}
	if len(owned) > 0 {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = "t", owned
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID = group, member
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 5000
	req.ProtocolType = "consumer"
	rp := kmsg.NewJoinGroupRequestProtocol()
	rp.Name, rp.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, rp)
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	c.JoinGroup(Client{Version: 9, ID: "classic", Host: "/127.0.0.1"}, req, func(r *kmsg.JoinGroupResponse) { ch <- r })
	return recv(t, ch)
}

// syncedPartitions sends SyncGroup and returns the partitions of t it gets.
func syncedPartitions(t *testing.T, c *Coordinator, group, member string, gen int32) []int32 {
	t.Helper()
	r := recv(t, syncAsync(c, group, member, gen, nil))
	if r.ErrorCode != 0 {
		t.Fatalf("sync %s gen %d: %v", member, gen, kerr.ErrorForCode(r.ErrorCode))
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(r.MemberAssignment); err != nil {
		t.Fatalf("assignment: %v", err)
	}
	var ps []int32
	for _, tp := range a.Topics {
		if tp.Topic == "t" {
			ps = append(ps, tp.Partitions...)
		}
	}
	slices.Sort(ps)
	return ps
}

// classicGroupOfOne makes a classic group g whose member holds every
// partition of t at generation 1, and returns the member id.
func classicGroupOfOne(t *testing.T, c *Coordinator) string {
	t.Helper()
	r := classicJoin(t, c, "g", "")
	if r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	id := r.MemberID
	if r = classicJoin(t, c, "g", id); r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != id {
		t.Fatalf("join: %+v", r)
	}
	a := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "t", []int32{0, 1, 2, 3}
	a.Topics = append(a.Topics, at)
	if s := recv(t, syncAsync(c, "g", id, 1, map[string][]byte{id: a.AppendTo(nil)})); s.ErrorCode != 0 {
		t.Fatalf("leader sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	return id
}

func memberTypes(c *Coordinator) map[string]int8 {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{"g"}
	resp := c.ConsumerGroupDescribe(Client{Version: 1}, req)
	out := map[string]int8{}
	for _, m := range resp.Groups[0].Members {
		out[m.MemberID] = m.MemberType
	}
	return out
}

// Online upgrade and downgrade, as Kafka's GroupMetadataManager runs them:
// a KIP-848 member joining a classic group converts it, the classic member
// is reconciled through JoinGroup/SyncGroup/Heartbeat (it gives up half of
// its partitions before the new member gets them), its metadata survives a
// coordinator move in ClassicMemberMetadata, and the group becomes classic
// again when the consumer-protocol member leaves.
func TestMixedGroupUpgradeReloadDowngrade(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(7), Partitions: 4})
	c := testCoordinator(t, log, meta)
	a := classicGroupOfOne(t, c)

	b := &cgMember{id: "member-b"}
	if r := b.heartbeat(t, c, "g", []string{"t"}, nil); r.ErrorCode != 0 || r.MemberEpoch != 2 || b.owned.size() != 0 {
		t.Fatalf("b joins: %v epoch %d owned %v", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, b.owned)
	}
	if ts := memberTypes(c); ts[a] != 0 || ts[b.id] != 1 {
		t.Fatalf("member types after the upgrade: %v", ts)
	}
	// The classic group's tombstone and the consumer group's records are
	// one batch, a's member record carrying its classic metadata.
	converted := false
	for _, batch := range log.batches[0] {
		var tomb, epochRec bool
		var classicMember *classicMeta
		readBatch(batch, func(_ *recordbatch.Header, k, v []byte) error {
			ver, _ := decodeKeyVersion(k)
			switch {
			case ver == keyGroupMetadata && v == nil:
				tomb = true
			case ver == keyConsumerGroupMetadata:
				epochRec = true
			case ver == keyConsumerGroupMember:
				if ck, err := decodeCGKey(k); err == nil && ck.member == a {
					mv, _ := decodeMemberValue(v)
					classicMember = mv.classic
				}
			}
			return nil
		})
		if tomb {
			converted = epochRec && classicMember != nil && classicMember.sessionTimeout == 10000
		}
	}
	if !converted {
		t.Fatal("no batch holds the classic group's tombstone with the consumer group's records")
	}
	// a keeps its partitions at generation 1 until told to rejoin.
	if code := heartbeat(c, "g", a, 1, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a's heartbeat after the upgrade: %v", kerr.ErrorForCode(code))
	}
	if r := commit(c, 8, "g", a, 1, "t", map[int32]int64{0: 10}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("a commits at generation 1: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	r := classicJoin(t, c, "g", a, 0, 1, 2, 3)
	if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != "" || r.Protocol == nil || *r.Protocol != "range" {
		t.Fatalf("a rejoins: %+v", r)
	}
	kept := syncedPartitions(t, c, "g", a, 1)
	if len(kept) != 2 {
		t.Fatalf("a keeps %v", kept)
	}
	if code := heartbeat(c, "g", a, 1, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a with partitions to revoke: %v", kerr.ErrorForCode(code))
	}
	if r = classicJoin(t, c, "g", a, kept...); r.ErrorCode != 0 || r.Generation != 2 {
		t.Fatalf("a rejoins after revoking: %+v", r)
	}
	if got := syncedPartitions(t, c, "g", a, 2); !slices.Equal(got, kept) {
		t.Fatalf("a at generation 2: %v, want %v", got, kept)
	}
	if code := heartbeat(c, "g", a, 2, nil); code != 0 {
		t.Fatalf("a reconciled: %v", kerr.ErrorForCode(code))
	}
	if r := commit(c, 8, "g", a, 1, "t", map[int32]int64{0: 11}); r.Topics[0].Partitions[0].ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("a commits at a stale generation: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	b.heartbeat(t, c, "g", []string{"t"}, nil)
	if b.owned.size() != 2 || b.epoch != 2 {
		t.Fatalf("b after a released: epoch %d owned %v", b.epoch, b.owned)
	}

	// The coordinator moves: a is still a classic member, at generation 2.
	c.Close()
	c2 := testCoordinator(t, log, meta)
	if ts := memberTypes(c2); ts[a] != 0 || ts[b.id] != 1 {
		t.Fatalf("member types after the move: %v", ts)
	}
	if code := heartbeat(c2, "g", a, 2, nil); code != 0 {
		t.Fatalf("a after the move: %v", kerr.ErrorForCode(code))
	}
	if got := syncedPartitions(t, c2, "g", a, 2); !slices.Equal(got, kept) {
		t.Fatalf("a's assignment after the move: %v", got)
	}

	// b leaves: only a classic member remains, so the group is classic
	// again at generation = group epoch and rebalances.
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "g", b.id, -1
	if lr := c2.ConsumerGroupHeartbeat(Client{Version: 1}, leave); lr.ErrorCode != 0 {
		t.Fatalf("b leaves: %v", kerr.ErrorForCode(lr.ErrorCode))
	}
	dg := c2.DescribeGroups(Client{Version: 5}, &kmsg.DescribeGroupsRequest{Groups: []string{"g"}}).Groups[0]
	if dg.ProtocolType != "consumer" || dg.State != "PreparingRebalance" || len(dg.Members) != 1 {
		t.Fatalf("after the downgrade: %+v", dg)
	}
	if code := heartbeat(c2, "g", a, 2, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a after the downgrade: %v", kerr.ErrorForCode(code))
	}
	if r = classicJoin(t, c2, "g", a); r.ErrorCode != 0 || r.Generation != 3 || r.LeaderID != a {
		t.Fatalf("a rejoins the classic group: %+v", r)
	}
	// The log says the same: the consumer group's records are deleted and
	// a GroupMetadata record follows.
	c2.Close()
	c3 := testCoordinator(t, log, meta)
	dg = c3.DescribeGroups(Client{Version: 5}, &kmsg.DescribeGroupsRequest{Groups: []string{"g"}}).Groups[0]
	if dg.ProtocolType != "consumer" || len(dg.Members) != 1 || dg.Members[0].MemberID != a {
		t.Fatalf("classic group after a reload: %+v", dg)
	}
}

// The policy: with upgrades disabled a consumer-protocol member cannot
// join a non-empty classic group; with downgrades disabled the group stays
// a consumer group when its last consumer-protocol member leaves.
func TestMigrationPolicy(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(7), Partitions: 4})
	for _, policy := range []string{"disabled", "downgrade"} {
		c := testCoordinator(t, newMemLog(1), meta, func(cfg *Config) { cfg.MigrationPolicy = policy })
		classicGroupOfOne(t, c)
		b := &cgMember{id: "member-b"}
		if r := b.heartbeat(t, c, "g", []string{"t"}, nil); r.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("%s: consumer member joins a classic group: %v", policy, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	c := testCoordinator(t, newMemLog(1), meta, func(cfg *Config) { cfg.MigrationPolicy = "upgrade" })
	a := classicGroupOfOne(t, c)
	b := &cgMember{id: "member-b"}
	if r := b.heartbeat(t, c, "g", []string{"t"}, nil); r.ErrorCode != 0 {
		t.Fatalf("upgrade: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "g", b.id, -1
	c.ConsumerGroupHeartbeat(Client{Version: 1}, leave)
	if ts := memberTypes(c); len(ts) != 1 || ts[a] != 0 {
		t.Fatalf("upgrade only: the group after b left: %v", ts)
	}
}

// ClassicMemberMetadata is the member value's tagged field 0, a nullable
// struct: its size counts the presence byte. Bytes written by hand from
// Kafka's ConsumerGroupMemberMetadataValue schema.
func TestClassicMemberMetadataBytes(t *testing.T) {
	mv := cgMemberValue{clientID: "c", clientHost: "/h", names: []string{},
		rebalanceTimeout: 5000, classic: &classicMeta{sessionTimeout: 10000,
			protocols: []protocolMeta{{name: "range", metadata: []byte{1, 2}}}}}
	want := []byte{
		0, 0, // version
		0, 0, // InstanceId, RackId null
		2, 'c', 3, '/', 'h', // ClientId, ClientHost
		1,                // no topics
		0,                // regex null
		0, 0, 0x13, 0x88, // RebalanceTimeoutMs 5000
		0,     // ServerAssignor null
		1,     // one tagged field
		0, 17, // tag 0, 17 bytes
		1,                // present
		0, 0, 0x27, 0x10, // SessionTimeoutMs 10000
		2, 6, 'r', 'a', 'n', 'g', 'e', 3, 1, 2, 0, // one protocol: name, metadata, tags
		0, // struct tags
	}
	if got := mv.encode(); !bytes.Equal(got, want) {
		t.Fatalf("\n got % x\nwant % x", got, want)
	}
	got, err := decodeMemberValue(want)
	if err != nil || got.classic == nil || got.classic.sessionTimeout != 10000 || len(got.classic.protocols) != 1 ||
		got.classic.protocols[0].name != "range" || !bytes.Equal(got.classic.protocols[0].metadata, []byte{1, 2}) {
		t.Fatalf("decoded: %+v %v", got, err)
	}
}

// A static classic member restarted with the consumer protocol under the
// same group.instance.id takes its instance over at once (Kafka checks
// for an unreleased instance only between consumer-protocol members):
// the upgraded group then has one member, of the consumer protocol, that
// keeps the instance's partitions.
func TestStaticClassicMemberUpgrades(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(7), Partitions: 4})
	c := testCoordinator(t, log, meta)
	inst := "i1"
	r := recv(t, joinAsync(c, 9, "g", "", &inst, "range"))
	if r.ErrorCode != 0 || r.LeaderID != r.MemberID {
		t.Fatalf("static join: %+v", r)
	}
	a := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "t", []int32{0, 1, 2, 3}
	a.Topics = append(a.Topics, at)
	if s := recv(t, syncAsync(c, "g", r.MemberID, r.Generation, map[string][]byte{r.MemberID: a.AppendTo(nil)})); s.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	b := &cgMember{id: "member-b", instance: &inst}
	if hr := b.heartbeat(t, c, "g", []string{"t"}, nil); hr.ErrorCode != 0 {
		t.Fatalf("consumer-protocol join of the instance: %v", kerr.ErrorForCode(hr.ErrorCode))
	}
	b.heartbeat(t, c, "g", []string{"t"}, nil)
	if ts := memberTypes(c); len(ts) != 1 || ts[b.id] != 1 {
		t.Fatalf("members: %v", ts)
	}
	if b.owned.size() != 4 {
		t.Fatalf("b owns %v", b.owned)
	}
}
