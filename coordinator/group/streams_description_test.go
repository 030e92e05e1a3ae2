package group

import (
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func wordCountDescription() kmsg.TopologyDescription {
	node := func(name string, typ int8, succ ...string) kmsg.TopologyDescriptionNode {
		n := kmsg.NewTopologyDescriptionNode()
		n.Name, n.NodeType, n.Successors = name, typ, succ
		return n
	}
	src := node("KSTREAM-SOURCE-0000000000", nodeSource, "KSTREAM-FLATMAPVALUES-0000000001")
	src.SourceTopics = []string{"lines", "lines"}
	src.Stores = []string{"dropped: a source has no stores"}
	flat := node("KSTREAM-FLATMAPVALUES-0000000001", nodeProcessor, "KSTREAM-SINK-0000000002")
	sink := node("KSTREAM-SINK-0000000002", nodeSink)
	topic := "app-words-repartition"
	sink.SinkTopic = &topic
	s0 := kmsg.NewTopologyDescriptionSubtopology()
	s0.SubtopologyID, s0.Nodes = "0", []kmsg.TopologyDescriptionNode{src, flat, sink}
	d := kmsg.NewTopologyDescription()
	d.Subtopologies = []kmsg.TopologyDescriptionSubtopology{s0}
	return d
}

func pushDescription(c *Coordinator, group, member string, epoch int32, d kmsg.TopologyDescription) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
	req := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	req.Group, req.MemberID, req.TopologyEpoch, req.TopologyDescription = group, member, epoch, d
	return c.StreamsGroupTopologyDescriptionUpdate(req)
}

func describeWithDescription(c *Coordinator, group string) kmsg.StreamsGroupDescribeResponseGroup {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Version = 1
	req.Groups, req.IncludeTopologyDescription = []string{group}, true
	return c.StreamsGroupDescribe(Client{}, req).Groups[0]
}

func errMsg(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Without a topology description plugin (Kafka's default) the update is
// UNSUPPORTED_VERSION with Kafka's message, heartbeats never ask for a
// description, and describe says NOT_STORED.
func TestStreamsTopologyDescriptionWithoutPlugin(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	c := testCoordinator(t, newMemLog(1), meta)
	a := &sgMember{id: "a", process: "p1"}
	if resp, _ := a.heartbeat(t, c, "app"); resp.ErrorCode != 0 || resp.TopologyDescriptionRequired {
		t.Fatalf("join: code %d, description required %v", resp.ErrorCode, resp.TopologyDescriptionRequired)
	}
	r := pushDescription(c, "app", "a", 0, wordCountDescription())
	if r.ErrorCode != kerr.UnsupportedVersion.Code || errMsg(r.ErrorMessage) != "The broker has no streams group topology description plugin configured." {
		t.Fatalf("update without a plugin: code %d %q", r.ErrorCode, errMsg(r.ErrorMessage))
	}
	if d := describeWithDescription(c, "app"); d.TopologyDescriptionStatus != topologyDescriptionNotStored || d.TopologyDescription != nil {
		t.Fatalf("describe without a plugin: status %d, %v", d.TopologyDescriptionStatus, d.TopologyDescription)
	}
}

// With Kafka's InMemoryTopologyDescriptionPlugin: the join is asked for the
// description, not again within the backoff, again after it; a push is
// checked (member, topology epoch, node types) and kept; describe serves
// it; a coordinator that loads the group asks for it again.
func TestStreamsTopologyDescriptionPushDescribeAndReload(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	var offset atomic.Int64 // the test's clock, ahead of the wall clock
	clock := func(cfg *Config) {
		cfg.TopologyDescriptions = true
		cfg.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	}
	c := testCoordinator(t, log, meta, clock)
	a := &sgMember{id: "a", process: "p1"}
	if resp, _ := a.heartbeat(t, c, "app"); resp.ErrorCode != 0 || !resp.TopologyDescriptionRequired {
		t.Fatalf("join: code %d, description required %v", resp.ErrorCode, resp.TopologyDescriptionRequired)
	}
	if resp, _ := a.heartbeat(t, c, "app"); resp.ErrorCode != 0 || resp.TopologyDescriptionRequired {
		t.Fatalf("heartbeat within the backoff: code %d, description required %v", resp.ErrorCode, resp.TopologyDescriptionRequired)
	}
	offset.Store(int64(37 * time.Second)) // past 30 s + 20% jitter
	if resp, _ := a.heartbeat(t, c, "app"); resp.ErrorCode != 0 || !resp.TopologyDescriptionRequired {
		t.Fatalf("heartbeat after the backoff: code %d, description required %v", resp.ErrorCode, resp.TopologyDescriptionRequired)
	}
	if d := describeWithDescription(c, "app"); d.TopologyDescriptionStatus != topologyDescriptionNotStored {
		t.Fatalf("describe before a push: status %d", d.TopologyDescriptionStatus)
	}

	bad := wordCountDescription()
	bad.Subtopologies[0].Nodes[1].NodeType = 7
	store := kmsg.NewTopologyDescriptionGlobalStore()
	store.Source.NodeType, store.Processor.NodeType = nodeSource, nodeSink
	badStore := wordCountDescription()
	badStore.GlobalStores = []kmsg.TopologyDescriptionGlobalStore{store}
	for _, tc := range []struct {
		name, group, member string
		epoch               int32
		d                   kmsg.TopologyDescription
		code                int16
		msg                 string
	}{
		{"empty member id", "app", "", 0, wordCountDescription(), kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"unknown group", "nope", "a", 0, wordCountDescription(), kerr.GroupIDNotFound.Code, "Group nope not found."},
		{"unknown member", "app", "z", 0, wordCountDescription(), kerr.UnknownMemberID.Code, "Member z is not a member of group app."},
		{"other topology epoch", "app", "a", 3, wordCountDescription(), kerr.InvalidRequest.Code,
			"Topology epoch 3 does not match the group's current topology epoch 0."},
		{"unknown node type", "app", "a", 0, bad, kerr.InvalidRequest.Code, "Unknown topology node type: 7"},
		{"global store of a sink", "app", "a", 0, badStore, kerr.InvalidRequest.Code,
			"Global store must be composed of a source and a processor node."},
	} {
		r := pushDescription(c, tc.group, tc.member, tc.epoch, tc.d)
		if r.ErrorCode != tc.code || errMsg(r.ErrorMessage) != tc.msg {
			t.Fatalf("%s: code %d %q, want %d %q", tc.name, r.ErrorCode, errMsg(r.ErrorMessage), tc.code, tc.msg)
		}
	}
	if r := pushDescription(c, "app", "a", 0, wordCountDescription()); r.ErrorCode != 0 {
		t.Fatalf("push: code %d %q", r.ErrorCode, errMsg(r.ErrorMessage))
	}
	d := describeWithDescription(c, "app")
	if d.TopologyDescriptionStatus != topologyDescriptionAvailable || d.TopologyDescription == nil {
		t.Fatalf("describe after the push: status %d", d.TopologyDescriptionStatus)
	}
	got := d.TopologyDescription.Subtopologies[0].Nodes
	if len(got) != 3 || !reflect.DeepEqual(got[0].SourceTopics, []string{"lines"}) || len(got[0].Stores) != 0 ||
		got[2].SinkTopic == nil || *got[2].SinkTopic != "app-words-repartition" || got[1].Successors[0] != "KSTREAM-SINK-0000000002" {
		t.Fatalf("described nodes: %+v", got)
	}
	if d := streamsGroupState(t, c, "app"); d.TopologyDescriptionStatus != topologyDescriptionNotRequested || d.TopologyDescription != nil {
		t.Fatalf("describe not asking for it: status %d", d.TopologyDescriptionStatus)
	}
	offset.Store(int64(2 * time.Hour))
	if resp, _ := a.heartbeat(t, c, "app"); resp.ErrorCode != 0 || resp.TopologyDescriptionRequired {
		t.Fatalf("heartbeat with the description stored: code %d, required %v", resp.ErrorCode, resp.TopologyDescriptionRequired)
	}
	c.Close()

	// The stored epoch went to the log; the description, held in memory,
	// did not: the next coordinator asks for it again.
	c2 := testCoordinator(t, log, meta, clock)
	if d := describeWithDescription(c2, "app"); d.ErrorCode != 0 || d.TopologyDescriptionStatus != topologyDescriptionNotStored {
		t.Fatalf("describe after the move: code %d status %d", d.ErrorCode, d.TopologyDescriptionStatus)
	}
	if resp, _ := a.heartbeat(t, c2, "app"); resp.ErrorCode != 0 || !resp.TopologyDescriptionRequired {
		t.Fatalf("heartbeat after the move: code %d, required %v", resp.ErrorCode, resp.TopologyDescriptionRequired)
	}
	if r := pushDescription(c2, "app", "a", 0, wordCountDescription()); r.ErrorCode != 0 {
		t.Fatalf("push after the move: code %d %q", r.ErrorCode, errMsg(r.ErrorMessage))
	}
	if d := describeWithDescription(c2, "app"); d.TopologyDescriptionStatus != topologyDescriptionAvailable {
		t.Fatalf("describe after the second push: status %d", d.TopologyDescriptionStatus)
	}
}

// A description beyond Strait's bounds fails permanently: the failed
// epoch is recorded and the members are not asked for it again.
func TestStreamsTopologyDescriptionTooLarge(t *testing.T) {
	meta := newMemMeta(TopicMeta{Name: "lines", ID: topicID(1), Partitions: 2},
		TopicMeta{Name: "app-words-repartition", ID: topicID(2), Partitions: 2},
		TopicMeta{Name: "app-counts-changelog", ID: topicID(3), Partitions: 2})
	var offset atomic.Int64
	c := testCoordinator(t, newMemLog(1), meta, func(cfg *Config) {
		cfg.TopologyDescriptions = true
		cfg.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	a := &sgMember{id: "a", process: "p1"}
	a.heartbeat(t, c, "app")
	d := wordCountDescription()
	d.Subtopologies[0].Nodes[1].Stores = make([]string, maxDescriptionItems)
	for i := range d.Subtopologies[0].Nodes[1].Stores {
		d.Subtopologies[0].Nodes[1].Stores[i] = "store-" + strconv.Itoa(i)
	}
	r := pushDescription(c, "app", "a", 0, d)
	if r.ErrorCode != kerr.StreamsTopologyDescriptionUpdateFailed.Code {
		t.Fatalf("oversize push: code %d %q", r.ErrorCode, errMsg(r.ErrorMessage))
	}
	// So is one of fewer but longer names.
	long := wordCountDescription()
	long.Subtopologies[0].Nodes[0].Name = strings.Repeat("n", maxDescriptionBytes+1)
	if r := pushDescription(c, "app", "a", 0, long); r.ErrorCode != kerr.StreamsTopologyDescriptionUpdateFailed.Code {
		t.Fatalf("push of a long name: code %d %q", r.ErrorCode, errMsg(r.ErrorMessage))
	}
	offset.Store(int64(2 * time.Hour))
	if resp, _ := a.heartbeat(t, c, "app"); resp.ErrorCode != 0 || resp.TopologyDescriptionRequired {
		t.Fatalf("heartbeat after a permanent failure: code %d, required %v", resp.ErrorCode, resp.TopologyDescriptionRequired)
	}
	if d := describeWithDescription(c, "app"); d.TopologyDescriptionStatus != topologyDescriptionNotStored {
		t.Fatalf("describe after a permanent failure: status %d", d.TopologyDescriptionStatus)
	}
}
