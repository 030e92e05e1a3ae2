package group

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The expected bytes are written out by hand from Kafka 4.4's StreamsGroup*
// schemas (their field order and types as Kafka's generated record classes
// in kafka-group-coordinator 4.4.0 write them), not by the encoder under
// test.
func TestStreamsGroupRecordBytes(t *testing.T) {
	check := func(name string, got, want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got % x\nwant % x", name, got, want)
		}
	}
	check("StreamsGroupMetadataKey", cgMemberKey(17, "g1", ""), []byte{0, 17, 0, 2, 'g', '1'})
	check("StreamsGroupMemberMetadataKey", cgMemberKey(19, "g", "m"), []byte{0, 19, 0, 1, 'g', 0, 1, 'm'})
	check("StreamsGroupTopologyKey", cgMemberKey(23, "g", "ignored"), []byte{0, 23, 0, 1, 'g'})
	// StreamsGroupMetadataValue v0: Epoch int32, MetadataHash int64, tags.
	check("StreamsGroupMetadataValue", encodeStreamsGroupValue(sgMetadataValue{epoch: 7, storedDesc: -1, failedDesc: -1}),
		[]byte{0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	// With StoredDescriptionTopologyEpoch (tag 2) and
	// FailedDescriptionTopologyEpoch (tag 3), each an int32 of 4 bytes.
	withDesc := sgMetadataValue{epoch: 7, storedDesc: 3, failedDesc: 2}
	check("StreamsGroupMetadataValue with description epochs", encodeStreamsGroupValue(withDesc),
		[]byte{0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 4, 0, 0, 0, 3, 3, 4, 0, 0, 0, 2})
	if got, err := decodeStreamsGroupValue(encodeStreamsGroupValue(withDesc)); err != nil || got != withDesc {
		t.Fatalf("StreamsGroupMetadataValue round trip: %+v, %v", got, err)
	}
	// Kafka's tags 0 (ValidatedTopologyEpoch) and 1 are skipped.
	kafkaTags := []byte{0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 4, 0, 0, 0, 5, 2, 4, 0xff, 0xff, 0xff, 0xfe}
	if got, err := decodeStreamsGroupValue(kafkaTags); err != nil || got != (sgMetadataValue{epoch: 7, storedDesc: -2, failedDesc: -1}) {
		t.Fatalf("StreamsGroupMetadataValue with tags 0 and 2: %+v, %v", got, err)
	}

	m := &streamsMember{id: "m", clientID: "c", clientHost: "/h", rebalanceTimeout: 300000, topologyEpoch: 2, processID: "p",
		endpoint:   &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h", Port: 8080},
		clientTags: []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "k", Value: "v"}}}
	check("StreamsGroupMemberMetadataValue", m.metadataValue(), []byte{
		0, 0, // version
		0, 0, // InstanceId, RackId null
		2, 'c', 3, '/', 'h', // ClientId, ClientHost
		0x00, 0x04, 0x93, 0xe0, // RebalanceTimeoutMs 300000
		0, 0, 0, 2, // TopologyEpoch
		2, 'p', // ProcessId
		1, 2, 'h', 0x1f, 0x90, 0, // UserEndpoint present: Host, Port 8080, tags
		2, 2, 'k', 2, 'v', 0, // ClientTags: one
		0, // tags
	})
	tasks := taskSet{}
	tasks.add(taskID{"0", 1})
	tasks.add(taskID{"0", 0})
	tasksBytes := []byte{2, 2, '0', 3, 0, 0, 0, 0, 0, 0, 0, 1, 0} // [{"0", [0, 1]}]
	target := tasksTuple{active: tasks, standby: taskSet{}, warmup: taskSet{}}
	want := append([]byte{0, 0}, tasksBytes...)
	want = append(want, 1, 1, 0) // no standby, no warm-up; tags
	check("StreamsGroupTargetAssignmentMemberValue", encodeStreamsTargetValue(target), want)

	m.epoch, m.prevEpoch, m.state, m.assigned, m.pendingActive = 5, 4, memberUnrevoked, target, taskSet{}
	want = []byte{0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 1}
	want = append(want, tasksBytes...)
	want = append(want, 1, 1, 1, 1, 1, 0) // standby, warm-up, three pending-revocation lists empty; tags
	check("StreamsGroupCurrentMemberAssignmentValue", m.currentValue(), want)

	// Round trips.
	if got, err := decodeStreamsMemberValue(m.metadataValue()); err != nil || got.processID != "p" || got.endpoint.Port != 8080 ||
		len(got.clientTags) != 1 || got.topologyEpoch != 2 {
		t.Fatalf("member value round trip: %+v %v", got, err)
	}
	if got, err := decodeStreamsCurrentValue(m.currentValue()); err != nil || got.epoch != 5 || got.state != kafkaStateUnrevoked ||
		!got.assigned.active.equal(tasks) {
		t.Fatalf("current value round trip: %+v %v", got, err)
	}
	topo := wordCountTopology()
	topo.Subtopologies[1].CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{
		{SourceTopics: []int16{}, SourceTopicRegex: []int16{}, RepartitionSourceTopics: []int16{0}}}
	got, err := decodeTopologyValue(encodeTopologyValue(topo))
	if err != nil || !bytes.Equal(encodeTopologyValue(got), encodeTopologyValue(topo)) ||
		!reflect.DeepEqual(got.Subtopologies[1].RepartitionSourceTopics[0].Configs, topo.Subtopologies[1].RepartitionSourceTopics[0].Configs) {
		t.Fatalf("topology round trip: %+v %v", got, err)
	}
	// A truncated record is an error, not a panic.
	v := encodeTopologyValue(topo)
	for i := range v {
		decodeTopologyValue(v[:i])
	}
}

// A coordinator that loads the partition brings the group back: the
// members keep their epochs and tasks (no rebalance), and an emptied and
// deleted group stays deleted.
func TestStreamsGroupSurvivesCoordinatorMove(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	c1 := testCoordinator(t, log, meta)
	a, b := &sgMember{id: "a", process: "p1"}, &sgMember{id: "b", process: "p2"}
	for range 3 {
		a.heartbeat(t, c1, "app")
		b.heartbeat(t, c1, "app")
	}
	before := streamsGroupState(t, c1, "app")
	if before.State != "Stable" || len(a.active) != 2 || len(b.active) != 2 {
		t.Fatalf("before the move: %s, a %v, b %v", before.State, a.active, b.active)
	}
	c1.Close()

	c2 := testCoordinator(t, log, meta)
	after := streamsGroupState(t, c2, "app")
	if after.State != "Stable" || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch ||
		!reflect.DeepEqual(after.Members, before.Members) || after.Topology == nil || len(after.Topology.Subtopologies) != 2 {
		t.Fatalf("after the move:\n%+v\nbefore:\n%+v", after, before)
	}
	epochA := a.epoch
	for _, m := range []*sgMember{a, b} {
		resp, _ := m.heartbeat(t, c2, "app")
		if resp.ErrorCode != 0 || resp.MemberEpoch != epochA || resp.ActiveTasks != nil {
			t.Fatalf("%s after the move: code %d epoch %d (was %d) tasks %v", m.id, resp.ErrorCode, resp.MemberEpoch, epochA, resp.ActiveTasks)
		}
	}

	// Both leave; the empty group is deleted; a third coordinator finds nothing.
	for _, id := range []string{"a", "b"} {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "app", id, leaveEpoch
		if r, _ := c2.StreamsGroupHeartbeat(Client{}, req); r.ErrorCode != 0 {
			t.Fatalf("leave %s: code %d", id, r.ErrorCode)
		}
	}
	if code := c2.deleteGroup("app"); code != 0 {
		t.Fatalf("delete: code %d", code)
	}
	c2.Close()
	c3 := testCoordinator(t, log, meta)
	if d := streamsGroupState(t, c3, "app"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after reload: %+v", d)
	}
}

// The streams decoders take any bytes (a damaged log) without panicking,
// and what they accept encodes back to a value that decodes the same.
func FuzzStreamsGroupValues(f *testing.F) {
	tasks := taskSet{}
	tasks.add(taskID{"0", 3})
	inst := "i"
	m := &streamsMember{id: "m", instanceID: &inst, clientID: "c", processID: "p",
		endpoint:   &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h", Port: 1},
		clientTags: []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "k", Value: "v"}},
		epoch:      2, assigned: tasksTuple{active: tasks, standby: taskSet{}, warmup: taskSet{}}, pendingActive: taskSet{}}
	f.Add(m.metadataValue())
	f.Add(m.currentValue())
	f.Add(encodeStreamsTargetValue(m.assigned))
	f.Add(encodeStreamsGroupValue(sgMetadataValue{epoch: 9, storedDesc: 1, failedDesc: -1}))
	f.Add(encodeTopologyValue(wordCountTopology()))
	f.Add(cgMemberKey(22, "g", "m"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := decodeStreamsMemberValue(b); err == nil {
			back := &streamsMember{instanceID: v.instanceID, rackID: v.rackID, clientID: v.clientID, clientHost: v.clientHost,
				rebalanceTimeout: v.rebalanceTimeout, topologyEpoch: v.topologyEpoch, processID: v.processID,
				endpoint: v.endpoint, clientTags: v.clientTags}
			if v2, err := decodeStreamsMemberValue(back.metadataValue()); err != nil || !reflect.DeepEqual(v, v2) {
				t.Fatalf("member value: %+v then %+v %v", v, v2, err)
			}
		}
		if c, err := decodeStreamsCurrentValue(b); err == nil {
			back := &streamsMember{epoch: c.epoch, prevEpoch: c.prevEpoch, assigned: c.assigned, pendingActive: c.pending.active}
			if c2, err := decodeStreamsCurrentValue(back.currentValue()); err != nil || c2.epoch != c.epoch ||
				!c2.assigned.equal(c.assigned) || !c2.pending.active.equal(c.pending.active) {
				t.Fatalf("current value: %+v then %+v %v", c, c2, err)
			}
		}
		if s, err := decodeStreamsTargetValue(b); err == nil {
			if s2, err := decodeStreamsTargetValue(encodeStreamsTargetValue(s)); err != nil || !s2.equal(s) {
				t.Fatalf("target value: %v then %v %v", s, s2, err)
			}
		}
		if topo, err := decodeTopologyValue(b); err == nil {
			if t2, err := decodeTopologyValue(encodeTopologyValue(topo)); err != nil ||
				!bytes.Equal(encodeTopologyValue(t2), encodeTopologyValue(topo)) {
				t.Fatalf("topology: %+v then %+v %v", topo, t2, err)
			}
		}
		decodeStreamsGroupValue(b)
		if k, err := decodeCGKey(b); err == nil && hasMemberKey(k.version) {
			if k2, err := decodeCGKey(cgMemberKey(k.version, k.group, k.member)); err != nil || k2 != k {
				t.Fatalf("key: %+v then %+v %v", k, k2, err)
			}
		}
	})
}
