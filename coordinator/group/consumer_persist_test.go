package group

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The expected bytes below are written out by hand from Kafka's JSON
// schemas (group-coordinator/src/main/resources/common/message), not by the
// encoder under test.
func TestConsumerGroupRecordBytes(t *testing.T) {
	check := func(name string, got, want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got % x\nwant % x", name, got, want)
		}
	}
	// Keys: int16 type version, then int16-length strings (not flexible).
	check("ConsumerGroupMetadataKey", cgKey{version: 3, group: "g1"}.encode(),
		[]byte{0, 3, 0, 2, 'g', '1'})
	check("ConsumerGroupMemberMetadataKey", cgMemberKey(5, "g1", "m"),
		[]byte{0, 5, 0, 2, 'g', '1', 0, 1, 'm'})
	check("ConsumerGroupTargetAssignmentMetadataKey", cgKey{version: 6, group: "g"}.encode(),
		[]byte{0, 6, 0, 1, 'g'})
	check("ConsumerGroupTargetAssignmentMemberKey", cgMemberKey(7, "g", "m"),
		[]byte{0, 7, 0, 1, 'g', 0, 1, 'm'})
	check("ConsumerGroupCurrentMemberAssignmentKey", cgMemberKey(8, "g", "m"),
		[]byte{0, 8, 0, 1, 'g', 0, 1, 'm'})

	// ConsumerGroupMetadataValue v0: version, Epoch int32, empty tag buffer.
	check("ConsumerGroupMetadataValue", encodeEpochValue(7), []byte{0, 0, 0, 0, 0, 7, 0})

	// ConsumerGroupMemberMetadataValue v0.
	inst, re := "i", "t.*"
	mv := cgMemberValue{instanceID: &inst, clientID: "c", clientHost: "/h", names: []string{"a", "bb"},
		regex: &re, rebalanceTimeout: 300000}
	check("ConsumerGroupMemberMetadataValue", mv.encode(), []byte{
		0, 0, // version
		2, 'i', // InstanceId (compact nullable: len+1)
		0,      // RackId null
		2, 'c', // ClientId
		3, '/', 'h', // ClientHost
		3, 2, 'a', 3, 'b', 'b', // SubscribedTopicNames: 2 elements
		4, 't', '.', '*', // SubscribedTopicRegex
		0x00, 0x04, 0x93, 0xe0, // RebalanceTimeoutMs 300000
		0, // ServerAssignor null
		0, // tags
	})

	tid := [16]byte{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	ps := partitionSet{}
	ps.add(tid, 2)
	ps.add(tid, 0)
	tpBytes := append(append([]byte{2}, tid[:]...), // one topic: TopicId
		3, 0, 0, 0, 0, 0, 0, 0, 2, // Partitions [0, 2]
		0) // topic tags
	// ConsumerGroupTargetAssignmentMemberValue v0.
	check("ConsumerGroupTargetAssignmentMemberValue", encodeTargetValue(ps),
		append(append([]byte{0, 0}, tpBytes...), 0))

	// ConsumerGroupCurrentMemberAssignmentValue v0.
	cur := cgCurrentValue{epoch: 5, prevEpoch: 4, state: kafkaStateUnrevoked, assigned: ps, pending: partitionSet{}}
	want := []byte{0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 1}
	want = append(want, tpBytes...)
	want = append(want, 1, 0) // no partitions pending revocation; tags
	check("ConsumerGroupCurrentMemberAssignmentValue", cur.encode(), want)

	// Decoding gives the same values back, and skips tagged fields a newer
	// Kafka adds (a MetadataHash-like tag 0 of 8 bytes here).
	if e, err := decodeEpochValue([]byte{0, 0, 0, 0, 0, 7, 1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8}); err != nil || e != 7 {
		t.Fatalf("epoch with a tag: %d %v", e, err)
	}
	if got, err := decodeMemberValue(mv.encode()); err != nil || !reflect.DeepEqual(got, mv) {
		t.Fatalf("member value round trip: %+v %v", got, err)
	}
	if got, err := decodeCurrentValue(cur.encode()); err != nil || got.epoch != 5 || got.prevEpoch != 4 ||
		got.state != kafkaStateUnrevoked || !got.assigned.equal(ps) || got.pending.size() != 0 {
		t.Fatalf("current value round trip: %+v %v", got, err)
	}
	if k, err := decodeCGKey(cgMemberKey(8, "g", "m")); err != nil || k != (cgKey{8, "g", "m"}) {
		t.Fatalf("key round trip: %+v %v", k, err)
	}
	// Truncated or lying input is an error, never a panic or a huge
	// allocation.
	for _, bad := range [][]byte{nil, {0}, {0, 0, 0}, {0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 1, 0xff, 0xff, 0xff, 0x0f}} {
		if _, err := decodeCurrentValue(bad); err == nil {
			t.Fatalf("decoded % x", bad)
		}
	}
}

// memberOf returns the coordinator's view of a member (test only).
func memberOf(t *testing.T, c *Coordinator, group, id string) (epoch int32, assigned, pending partitionSet) {
	t.Helper()
	g, code := c.lockGroup(group, false)
	if code != 0 || g == nil {
		t.Fatalf("group %s: code %d", group, code)
	}
	defer g.mu.Unlock()
	if g.kind != kindConsumer {
		t.Fatalf("group %s is %v", group, g.kind)
	}
	m := g.consumer.members[id]
	if m == nil {
		t.Fatalf("member %s not in group %s", id, group)
	}
	return m.epoch, m.assigned, m.pendingRevocation
}

func TestConsumerGroupStateReplayed(t *testing.T) {
	log := newMemLog(2)
	tid := topicID(7)
	meta := newMemMeta(TopicMeta{Name: "t", ID: tid, Partitions: 4})
	c := testCoordinator(t, log, meta)
	sub := []string{"t"}
	inst := "static-b"
	a, b := &cgMember{id: "member-a"}, &cgMember{id: "member-b", instance: &inst}
	a.heartbeat(t, c, "g", sub, nil)
	b.heartbeat(t, c, "g", sub, nil)
	// a is told to revoke two partitions and has not confirmed yet.
	a.heartbeat(t, c, "g", sub, nil)
	aEpoch, aAssigned, aPending := memberOf(t, c, "g", a.id)
	if aEpoch != 1 || aAssigned.size() != 2 || aPending.size() != 2 {
		t.Fatalf("a before the move: epoch %d assigned %d pending %d", aEpoch, aAssigned.size(), aPending.size())
	}
	bEpoch, _, _ := memberOf(t, c, "g", b.id)
	commit(c, 9, "g", a.id, a.epoch, "t", map[int32]int64{0: 42})
	c.Close()

	// The partition moves: a new coordinator loads the same log.
	c2 := testCoordinator(t, log, meta)
	if e, as, pe := memberOf(t, c2, "g", a.id); e != aEpoch || !as.equal(aAssigned) || !pe.equal(aPending) {
		t.Fatalf("a after the move: epoch %d assigned %v pending %v", e, as, pe)
	}
	if e, _, _ := memberOf(t, c2, "g", b.id); e != bEpoch {
		t.Fatalf("b after the move: epoch %d, was %d", e, bEpoch)
	}
	if st := describeState(t, c2, "g"); st != "Reconciling" {
		t.Fatalf("state after the move %s", st)
	}
	// The members carry on with their epochs: a confirms its revocation,
	// b then gets the released partitions; nobody is fenced and the group
	// epoch is not bumped.
	if r := a.heartbeat(t, c2, "g", sub, nil); r.ErrorCode != 0 || a.epoch != 2 {
		t.Fatalf("a after the move: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), a.epoch)
	}
	if r := b.heartbeat(t, c2, "g", sub, nil); r.ErrorCode != 0 || b.epoch != 2 || b.owned.size() != 2 {
		t.Fatalf("b after the move: %v epoch %d owned %d", kerr.ErrorForCode(r.ErrorCode), b.epoch, b.owned.size())
	}
	checkExclusive(t, a, b)
	if st := describeState(t, c2, "g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}
	if got := fetchOffsets(t, c2, "g"); got["t"][0] != 42 {
		t.Fatalf("offsets after the move: %v", got)
	}

	// A heartbeat that changes nothing writes nothing.
	n := len(log.records(t))
	a.heartbeat(t, c2, "g", sub, nil)
	if got := len(log.records(t)); got != n {
		t.Fatalf("an idle heartbeat wrote %d records", got-n)
	}

	// Both leave; the group is deleted: a third coordinator finds nothing.
	for _, m := range []*cgMember{a, b} {
		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.Group, leave.MemberID, leave.MemberEpoch = "g", m.id, -1
		if r := c2.ConsumerGroupHeartbeat(Client{Version: 1}, leave); r.ErrorCode != 0 {
			t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	c2.Close()
	c3 := testCoordinator(t, log, meta)
	if st := describeState(t, c3, "g"); st != "Empty" {
		t.Fatalf("state after both left %s", st)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	if r := c3.DeleteGroups(Client{}, del); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	c3.Close()
	c4 := testCoordinator(t, log, meta)
	resp := c4.ConsumerGroupDescribe(Client{Version: 1}, &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}})
	if resp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group described: %+v", resp.Groups[0])
	}
	// Every ConsumerGroup* record decodes, and the last word on each key is
	// a tombstone.
	last := map[string][]byte{}
	for _, r := range log.records(t) {
		v, _ := decodeKeyVersion(r.key)
		if v < keyConsumerGroupMetadata || v > keyConsumerGroupCurrentMember {
			continue
		}
		if _, err := decodeCGKey(r.key); err != nil {
			t.Fatalf("key % x: %v", r.key, err)
		}
		last[string(r.key)] = r.value
	}
	if len(last) == 0 {
		t.Fatal("no consumer group records written")
	}
	for k, v := range last {
		if v != nil {
			t.Fatalf("key % x still has a value after the group was deleted", k)
		}
	}
}

func TestConsumerGroupHeartbeatFailsWhenNotWritten(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(7), Partitions: 2})
	c := testCoordinator(t, log, meta)
	a := &cgMember{id: "member-a"}
	log.mu.Lock()
	log.fail = kerr.NotEnoughReplicas
	log.mu.Unlock()
	if r := a.heartbeat(t, c, "g", []string{"t"}, nil); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("heartbeat with a failing log: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	log.mu.Lock()
	log.fail = nil
	log.mu.Unlock()
	// The member rejoins; the state it is given is written before the answer.
	if r := a.heartbeat(t, c, "g", []string{"t"}, nil); r.ErrorCode != 0 || a.owned.size() != 2 {
		t.Fatalf("rejoin: %v owned %d", kerr.ErrorForCode(r.ErrorCode), a.owned.size())
	}
	c.Close()
	c2 := testCoordinator(t, log, meta)
	if e, as, _ := memberOf(t, c2, "g", a.id); e != a.epoch || !as.equal(a.owned) {
		t.Fatalf("after reload: epoch %d (want %d) assigned %v", e, a.epoch, as)
	}
}

// A loaded group's session timers run: members that never come back are
// fenced and their records deleted; the group then converts to a classic
// group, whose join deletes the consumer group's records.
func TestConsumerGroupLoadedSessionsExpire(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(7), Partitions: 3})
	c := testCoordinator(t, log, meta)
	a, b := &cgMember{id: "member-a"}, &cgMember{id: "member-b"}
	a.heartbeat(t, c, "g", []string{"t"}, nil)
	b.heartbeat(t, c, "g", []string{"t"}, nil)
	c.Close()

	short := func(cfg *Config) { cfg.ConsumerSessionTimeout = 100 * time.Millisecond }
	c2 := testCoordinator(t, log, meta, short)
	if st := describeState(t, c2, "g"); st == "Empty" {
		t.Fatal("loaded group has no members")
	}
	waitFor(t, "loaded members to expire", func() bool { return describeState(t, c2, "g") == "Empty" })
	c2.Close()

	// The fencing was written: a third coordinator loads an empty group.
	c3 := testCoordinator(t, log, meta)
	if st := describeState(t, c3, "g"); st != "Empty" {
		t.Fatalf("state after the members expired: %s", st)
	}
	// A classic member takes the empty group over: the consumer group's
	// records are deleted, and a reload finds the classic group.
	r := recv(t, joinAsync(c3, 9, "g", "", nil, "range"))
	if r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r = recv(t, joinAsync(c3, 9, "g", r.MemberID, nil, "range")); r.ErrorCode != 0 {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if s := recv(t, syncAsync(c3, "g", r.MemberID, r.Generation, map[string][]byte{r.MemberID: []byte("x")})); s.ErrorCode != 0 {
		t.Fatalf("classic sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	c3.Close()
	c4 := testCoordinator(t, log, meta)
	lg := c4.ListGroups(Client{Version: 5}, &kmsg.ListGroupsRequest{})
	if len(lg.Groups) != 1 || lg.Groups[0].GroupType != "classic" {
		t.Fatalf("groups after the conversion: %+v", lg.Groups)
	}
	for _, r := range lastValues(t, log) {
		if r.value != nil {
			t.Fatalf("consumer group key % x kept a value after the conversion", r.key)
		}
	}
}

// lastValues returns the last record of each ConsumerGroup* key.
func lastValues(t *testing.T, log *memLog) []record {
	t.Helper()
	last := map[string][]byte{}
	var order []string
	for _, r := range log.records(t) {
		if v, _ := decodeKeyVersion(r.key); v < keyConsumerGroupMetadata || v > keyConsumerGroupCurrentMember {
			continue
		}
		if _, ok := last[string(r.key)]; !ok {
			order = append(order, string(r.key))
		}
		last[string(r.key)] = r.value
	}
	out := make([]record, 0, len(order))
	for _, k := range order {
		out = append(out, record{key: []byte(k), value: last[k]})
	}
	return out
}

// The decoders take any bytes (a damaged log) without panicking, and what
// they accept encodes back to a value that decodes the same.
func FuzzConsumerGroupValues(f *testing.F) {
	ps := partitionSet{}
	ps.add(topicID(1), 3)
	inst := "i"
	f.Add((&cgMemberValue{instanceID: &inst, clientID: "c", names: []string{"t"}}).encode())
	f.Add((&cgCurrentValue{epoch: 2, assigned: ps, pending: partitionSet{}}).encode())
	f.Add(encodeTargetValue(ps))
	f.Add(encodeEpochValue(9))
	f.Add(cgMemberKey(8, "g", "m"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := decodeMemberValue(b); err == nil {
			if m2, err := decodeMemberValue(m.encode()); err != nil || !reflect.DeepEqual(m, m2) {
				t.Fatalf("member value: %+v then %+v %v", m, m2, err)
			}
		}
		if c, err := decodeCurrentValue(b); err == nil {
			if c2, err := decodeCurrentValue(c.encode()); err != nil || c2.epoch != c.epoch || !c2.assigned.equal(c.assigned) || !c2.pending.equal(c.pending) {
				t.Fatalf("current value: %+v then %+v %v", c, c2, err)
			}
		}
		if s, err := decodeTargetValue(b); err == nil {
			if s2, err := decodeTargetValue(encodeTargetValue(s)); err != nil || !s2.equal(s) {
				t.Fatalf("target value: %v then %v %v", s, s2, err)
			}
		}
		decodeEpochValue(b)
		if k, err := decodeCGKey(b); err == nil && hasMemberKey(k.version) {
			if k2, err := decodeCGKey(k.encode()); err != nil || k2 != k {
				t.Fatalf("key: %+v then %+v %v", k, k2, err)
			}
		}
	})
}
