package share

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is a __consumer_offsets partition in memory: the records appended,
// in order; fail makes the next appends fail.
type memLog struct {
	recs []Record
	fail error
}

func (l *memLog) append(_ string, recs []Record) error {
	if l.fail != nil {
		return l.fail
	}
	l.recs = append(l.recs, recs...)
	return nil
}

// newPersistedCoordinator is newTestCoordinator writing to log; topic ids
// are the names' lengths (the topics' names must differ in length).
func newPersistedCoordinator(topics map[string]int32, log *memLog, clk *fakeClock) *Coordinator {
	cfg := DefaultConfig()
	cfg.Now = clk.Now
	cfg.Topic = func(name string) ([16]byte, int32, bool) {
		n, ok := topics[name]
		return [16]byte{byte(len(name))}, n, ok
	}
	cfg.TopicName = func(id [16]byte) (string, bool) {
		for name := range topics {
			if byte(len(name)) == id[0] {
				return name, true
			}
		}
		return "", false
	}
	cfg.PartitionOf = func(string) int32 { return 0 }
	cfg.Append = log.append
	return New(cfg)
}

func describeGroup(t *testing.T, c *Coordinator, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp := c.Describe(req, nil)
	if len(resp.Groups) != 1 {
		t.Fatalf("describe: %d groups", len(resp.Groups))
	}
	return resp.Groups[0]
}

// The records a group's heartbeats write, loaded into a fresh coordinator
// (a coordinator move), give the same group: members, epochs, subscriptions
// and assignments; the members carry on with their epochs, and are expired
// a session timeout after the load if they do not come back.
func TestShareMembershipSurvivesLoad(t *testing.T) {
	topics := map[string]int32{"t": 3, "uu": 2}
	log := &memLog{}
	clk := &fakeClock{now: t0}
	a := newPersistedCoordinator(topics, log, clk)
	heartbeat(a, "g", "m1", 0, "t", "uu")
	heartbeat(a, "g", "m2", 0, "t")
	r3 := heartbeat(a, "g", "m3", 0, "uu")
	for _, m := range []string{"m1", "m2"} {
		if r := heartbeat(a, "g", m, r3.MemberEpoch-1); r.ErrorCode != 0 && r.ErrorCode != kerr.FencedMemberEpoch.Code {
			t.Fatalf("%s: code %d", m, r.ErrorCode)
		}
	}
	// Every member at the group's epoch.
	for _, m := range []string{"m1", "m2", "m3"} {
		for e := int32(1); e <= r3.MemberEpoch; e++ {
			heartbeat(a, "g", m, e)
		}
	}
	before := describeGroup(t, a, "g")
	if before.ErrorCode != 0 || len(before.Members) != 3 {
		t.Fatalf("before: code %d, %d members", before.ErrorCode, len(before.Members))
	}
	for _, m := range before.Members {
		if m.MemberEpoch != before.GroupEpoch {
			t.Fatalf("member %s at epoch %d, group at %d", m.MemberID, m.MemberEpoch, before.GroupEpoch)
		}
	}
	written := len(log.recs)
	// A steady heartbeat writes nothing.
	heartbeat(a, "g", "m1", before.GroupEpoch)
	if len(log.recs) != written {
		t.Fatalf("a steady heartbeat wrote %d records", len(log.recs)-written)
	}

	clk.now = clk.now.Add(time.Second)
	b := newPersistedCoordinator(topics, &memLog{}, clk)
	if n := b.Load(0, log.recs); n != 1 {
		t.Fatalf("loaded %d groups, want 1", n)
	}
	after := describeGroup(t, b, "g")
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("after the load:\n%+v\nbefore:\n%+v", after, before)
	}
	// The members go on with their epochs; no new assignment is sent.
	for _, m := range before.Members {
		r := heartbeat(b, "g", m.MemberID, m.MemberEpoch)
		if r.ErrorCode != 0 || r.MemberEpoch != m.MemberEpoch || r.Assignment != nil {
			t.Fatalf("%s after the load: code %d epoch %d (want %d) assignment %v", m.MemberID, r.ErrorCode, r.MemberEpoch, m.MemberEpoch, r.Assignment)
		}
	}
	// Loaded again, only m1 heartbeats: the others are expired a session
	// timeout after the load.
	c := newPersistedCoordinator(topics, &memLog{}, clk)
	c.Load(0, log.recs)
	clk.now = clk.now.Add(DefaultConfig().SessionTimeout / 2)
	heartbeat(c, "g", "m1", before.GroupEpoch)
	clk.now = clk.now.Add(DefaultConfig().SessionTimeout/2 + time.Second)
	if d := describeGroup(t, c, "g"); len(d.Members) != 1 || d.Members[0].MemberID != "m1" {
		t.Fatalf("after the session timeout: %d members", len(d.Members))
	}
}

// A member leaving writes its tombstones, and a deleted group's tombstones
// leave nothing to load.
func TestShareMembershipTombstones(t *testing.T) {
	topics := map[string]int32{"t": 2}
	log := &memLog{}
	clk := &fakeClock{now: t0}
	a := newPersistedCoordinator(topics, log, clk)
	r1 := heartbeat(a, "g", "m1", 0, "t")
	r2 := heartbeat(a, "g", "m2", 0, "t")
	heartbeat(a, "g", "m2", -1)
	b := newPersistedCoordinator(topics, &memLog{}, clk)
	b.Load(0, log.recs)
	d := describeGroup(t, b, "g")
	if len(d.Members) != 1 || d.Members[0].MemberID != "m1" || d.GroupEpoch != r2.MemberEpoch+1 {
		t.Fatalf("after m2 left: %+v (m1 joined at %d)", d, r1.MemberEpoch)
	}
	heartbeat(a, "g", "m1", -1)
	if code, ok := a.Delete("g"); code != 0 || !ok {
		t.Fatalf("delete: code %d ok %v", code, ok)
	}
	c := newPersistedCoordinator(topics, &memLog{}, clk)
	if n := c.Load(0, log.recs); n != 0 || c.IsShareGroup("g") {
		t.Fatalf("a deleted group was loaded (%d groups)", n)
	}
}

// A heartbeat whose records cannot be written answers the write's error;
// the next one writes what the log lacks.
func TestShareMembershipWriteFailure(t *testing.T) {
	topics := map[string]int32{"t": 2}
	log := &memLog{fail: kerr.NotCoordinator}
	clk := &fakeClock{now: t0}
	a := newPersistedCoordinator(topics, log, clk)
	if r := heartbeat(a, "g", "m1", 0, "t"); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("failed write: code %d", r.ErrorCode)
	}
	log.fail = errors.New("disk gone")
	if r := heartbeat(a, "g", "m1", 0, "t"); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("failed write without a Kafka code: code %d", r.ErrorCode)
	}
	log.fail = nil
	r := heartbeat(a, "g", "m1", 0, "t")
	if r.ErrorCode != 0 {
		t.Fatalf("retry: code %d", r.ErrorCode)
	}
	b := newPersistedCoordinator(topics, &memLog{}, clk)
	b.Load(0, log.recs)
	if d := describeGroup(t, b, "g"); len(d.Members) != 1 || d.Members[0].MemberEpoch != r.MemberEpoch {
		t.Fatalf("loaded after the retry: %+v", d)
	}
}

// Records as Kafka 4.4 writes them (field order and versions of the
// ShareGroup*Key/Value JSON schemas, built here byte by byte, with a tagged
// field a newer Kafka adds) decode and load.
func TestShareRecordsKafkaBytes(t *testing.T) {
	key := func(typ int16, group string, member ...string) []byte {
		b := kbin.AppendInt16(nil, typ)
		b = kbin.AppendString(b, group)
		for _, m := range member {
			b = kbin.AppendString(b, m)
		}
		return b
	}
	// ShareGroupMetadataValue v0: Epoch, and the MetadataHash tag (0).
	meta := kbin.AppendInt16(nil, 0)
	meta = kbin.AppendInt32(meta, 7)
	meta = kbin.AppendUvarint(meta, 1) // one tagged field
	meta = kbin.AppendUvarint(meta, 0) // tag 0
	meta = kbin.AppendUvarint(meta, 8)
	meta = kbin.AppendInt64(meta, 0x1234)
	// ShareGroupMemberMetadataValue v0: RackId (null), ClientId,
	// ClientHost, SubscribedTopicNames.
	mem := kbin.AppendInt16(nil, 0)
	mem = append(mem, 0) // null compact string
	mem = kbin.AppendCompactString(mem, "client-1")
	mem = kbin.AppendCompactString(mem, "/127.0.0.1")
	mem = kbin.AppendCompactArrayLen(mem, 1)
	mem = kbin.AppendCompactString(mem, "t")
	mem = kbin.AppendUvarint(mem, 0)
	tps := func(b []byte, parts ...int32) []byte {
		b = kbin.AppendCompactArrayLen(b, 1)
		b = kbin.AppendUuid(b, [16]byte{1}) // "t"
		b = kbin.AppendCompactArrayLen(b, len(parts))
		for _, p := range parts {
			b = kbin.AppendInt32(b, p)
		}
		return kbin.AppendUvarint(b, 0)
	}
	// ShareGroupTargetAssignmentMemberValue v0: TopicPartitions.
	target := tps(kbin.AppendInt16(nil, 0), 0, 1)
	target = kbin.AppendUvarint(target, 0)
	// ShareGroupTargetAssignmentMetadataValue v0: AssignmentEpoch.
	tmeta := kbin.AppendUvarint(kbin.AppendInt32(kbin.AppendInt16(nil, 0), 7), 0)
	// ShareGroupCurrentMemberAssignmentValue v0: MemberEpoch,
	// PreviousMemberEpoch, State, AssignedPartitions.
	cur := kbin.AppendInt16(nil, 0)
	cur = kbin.AppendInt32(cur, 7)
	cur = kbin.AppendInt32(cur, 6)
	cur = kbin.AppendInt8(cur, 0)
	cur = tps(cur, 0, 1)
	cur = kbin.AppendUvarint(cur, 0)
	recs := []Record{
		{key(10, "g", "m"), mem}, {key(11, "g"), meta}, {key(13, "g", "m"), target},
		{key(12, "g"), tmeta}, {key(14, "g", "m"), cur},
		{key(15, "g"), []byte{0, 0, 1, 1, 1, 0}}, // ShareGroupStatePartitionMetadataValue: empty arrays
	}
	clk := &fakeClock{now: t0}
	c := newPersistedCoordinator(map[string]int32{"t": 2}, &memLog{}, clk)
	if n := c.Load(0, recs); n != 1 {
		t.Fatalf("loaded %d groups", n)
	}
	d := describeGroup(t, c, "g")
	if d.GroupEpoch != 7 || d.AssignmentEpoch != 7 || len(d.Members) != 1 {
		t.Fatalf("loaded group: %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != "m" || m.MemberEpoch != 7 || m.ClientID != "client-1" || m.ClientHost != "/127.0.0.1" ||
		!reflect.DeepEqual(m.SubscribedTopicNames, []string{"t"}) || len(m.Assignment.TopicPartitions) != 1 ||
		!reflect.DeepEqual(m.Assignment.TopicPartitions[0].Partitions, []int32{0, 1}) {
		t.Fatalf("loaded member: %+v", m)
	}
	// Strait's own encoding of the same state is Kafka's bytes (the
	// MetadataHash tag aside, which it does not write).
	if got := (&memberValue{clientID: "client-1", clientHost: "/127.0.0.1", topics: []string{"t"}}).encode(); string(got) != string(mem) {
		t.Fatalf("member value %x, Kafka's %x", got, mem)
	}
	if got := (&currentValue{epoch: 7, prevEpoch: 6, assigned: topicParts{{1}: {1, 0}}}).encode(); string(got) != string(cur) {
		t.Fatalf("current value %x, Kafka's %x", got, cur)
	}
	if got := encodeTarget(topicParts{{1}: {0, 1}}); string(got) != string(target) {
		t.Fatalf("target value %x, Kafka's %x", got, target)
	}
	if got := (recordKey{typ: KeyCurrentMember, group: "g", member: "m"}).encode(); string(got) != string(key(14, "g", "m")) {
		t.Fatalf("key %x", got)
	}
	// Truncated values are refused, never a panic.
	for _, r := range recs {
		for n := 0; n < len(r.Value); n++ {
			k, err := decodeGroupKey(r.Key)
			if err != nil {
				t.Fatal(err)
			}
			_ = newReplayed().apply(k, r.Value[:n])
		}
	}
}

// Members expired outside a heartbeat (a describe found their sessions
// over) get their tombstones written by Flush, which the coordinator asks
// for through Config.Expired: a coordinator loading the records afterwards
// finds the group empty, as Kafka writes the tombstones at expiry.
func TestShareExpiredMembersFlushed(t *testing.T) {
	topics := map[string]int32{"t": 2}
	log := &memLog{}
	clk := &fakeClock{now: t0}
	a := newPersistedCoordinator(topics, log, clk)
	var expired []string
	a.cfg.Expired = func(id string) { expired = append(expired, id) }
	heartbeat(a, "g", "m1", 0, "t")
	heartbeat(a, "g", "m2", 0, "t")
	clk.now = clk.now.Add(DefaultConfig().SessionTimeout + time.Second)
	if d := describeGroup(t, a, "g"); len(d.Members) != 0 || d.GroupState != "Empty" {
		t.Fatalf("after the session timeout: %+v", d)
	}
	if len(expired) != 1 || expired[0] != "g" {
		t.Fatalf("expired groups reported: %v", expired)
	}
	if err := a.Flush("g"); err != nil {
		t.Fatal(err)
	}
	b := newPersistedCoordinator(topics, &memLog{}, clk)
	b.Load(0, log.recs)
	before, after := describeGroup(t, a, "g"), describeGroup(t, b, "g")
	if after.GroupState != "Empty" || after.GroupEpoch != before.GroupEpoch {
		t.Fatalf("loaded after the flush: %+v, was %+v", after, before)
	}
}

// AlterShareGroupOffsets' new group is written, so another coordinator
// loads it.
func TestShareEnsureGroupWritten(t *testing.T) {
	log := &memLog{}
	clk := &fakeClock{now: t0}
	a := newPersistedCoordinator(map[string]int32{"t": 2}, log, clk)
	if !a.EnsureGroup("g") {
		t.Fatal("EnsureGroup refused")
	}
	b := newPersistedCoordinator(map[string]int32{"t": 2}, &memLog{}, clk)
	if n := b.Load(0, log.recs); n != 1 || !b.IsShareGroup("g") {
		t.Fatalf("loaded %d groups", n)
	}
}
