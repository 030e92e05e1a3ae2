package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// streamsJoin is a streams member's first heartbeat with a word-count
// topology: lines -> (subtopology 0) -> repartition -> (subtopology 1,
// with a changelog).
func streamsJoin(group, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, member, 60000
	p := "process-" + member
	req.ProcessID = &p
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"st-lines"}, []string{group + "-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rep := kmsg.NewTopicInfo()
	rep.Topic = group + "-words-repartition"
	rep.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}, {Key: "retention.ms", Value: "-1"}}
	cl := kmsg.NewTopicInfo()
	cl.Topic = group + "-counts-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.RepartitionSourceTopics, s1.StateChangelogTopics = []kmsg.TopicInfo{rep}, []kmsg.TopicInfo{cl}
	topo.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	req.Topology = &topo
	return req
}

func countTasks(ids []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ids {
		n += len(t.Partitions)
	}
	return n
}

// A streams member over the wire: the broker creates the internal topics
// the first heartbeat reports missing, with the configs the topology asks
// for; the member then gets every task, StreamsGroupDescribe shows it, and
// after a broker restart the member heartbeats on at the same epoch.
func TestStreamsGroupHeartbeatCreatesInternalTopicsAndSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir, groupBrokerProps...)
	// kgo's default versions stop short of the streams group APIs, and kgo
	// does not route them to the coordinator: they go to the one broker.
	cl := newClient(t, srv, kgo.MaxVersions(kversion.V4_4_0()))
	node := cl.Broker(int(srv.NodeID()))
	createTopic(t, cl, "st-lines", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// As Streams does: find the coordinator first (which creates
	// __consumer_offsets), then heartbeat once it has loaded.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"wc"}
	if _, err := fc.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	join := streamsJoin("wc", "m1")
	resp, err := join.RequestWith(ctx, node)
	for i := 0; i < 600 && err == nil && isCoordinatorRetry(resp.ErrorCode); i++ {
		time.Sleep(50 * time.Millisecond)
		resp, err = join.RequestWith(ctx, node)
	}
	if err != nil || resp.ErrorCode != 0 || resp.MemberEpoch != 1 {
		t.Fatalf("join: %v %+v", err, resp)
	}
	if len(resp.Status) != 1 || resp.Status[0].StatusCode != 3 {
		t.Fatalf("status %+v, want MISSING_INTERNAL_TOPICS", resp.Status)
	}
	adm := kadm.NewClient(cl)
	var cfgs kadm.ResourceConfigs
	deadline := time.Now().Add(30 * time.Second)
	for {
		topics, err := adm.ListTopics(ctx, "wc-words-repartition", "wc-counts-changelog")
		if err == nil && len(topics) == 2 && topics["wc-counts-changelog"].Err == nil && topics["wc-words-repartition"].Err == nil {
			if n := len(topics["wc-words-repartition"].Partitions); n != 2 {
				t.Fatalf("repartition topic has %d partitions, want 2", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("internal topics not created: %v %v", topics, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if cfgs, err = adm.DescribeTopicConfigs(ctx, "wc-counts-changelog"); err != nil {
		t.Fatal(err)
	}
	if v, _ := cfgs.On("wc-counts-changelog", nil); v.Err != nil || !hasConfig(v.Configs, "cleanup.policy", "compact") {
		t.Fatalf("changelog configs: %+v", v)
	}

	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "wc", "m1", resp.MemberEpoch
	if resp, err = hb.RequestWith(ctx, node); err != nil || resp.ErrorCode != 0 || resp.MemberEpoch != 2 ||
		countTasks(resp.ActiveTasks) != 4 || len(resp.Status) != 0 {
		t.Fatalf("after the topics exist: %v %+v", err, resp)
	}
	hb.MemberEpoch, hb.ActiveTasks = resp.MemberEpoch, resp.ActiveTasks
	if resp, err = hb.RequestWith(ctx, node); err != nil || resp.ErrorCode != 0 || resp.ActiveTasks != nil {
		t.Fatalf("steady heartbeat: %v %+v", err, resp)
	}
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups = []string{"wc"}
	dresp, err := dreq.RequestWith(ctx, node)
	if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].State != "Stable" || len(dresp.Groups[0].Members) != 1 ||
		countTasks(dresp.Groups[0].Members[0].Assignment.ActiveTasks) != 4 || dresp.Groups[0].Members[0].ProcessID != "process-m1" {
		t.Fatalf("describe: %v %+v", err, dresp)
	}
	lg, err := adm.ListGroups(ctx)
	if err != nil || lg["wc"].ProtocolType != "streams" {
		t.Fatalf("ListGroups: %v %+v", err, lg)
	}

	// Restart: the group is loaded from __consumer_offsets.
	cl.Close()
	srv.Close()
	srv = startBroker(t, dir, groupBrokerProps...)
	defer srv.Close()
	cl2 := newClient(t, srv, kgo.MaxVersions(kversion.V4_4_0()))
	node = cl2.Broker(int(srv.NodeID()))
	resp, err = hb.RequestWith(ctx, node)
	for i := 0; i < 600 && err == nil && isCoordinatorRetry(resp.ErrorCode); i++ {
		time.Sleep(50 * time.Millisecond)
		resp, err = hb.RequestWith(ctx, node)
	}
	if err != nil || resp.ErrorCode != 0 || resp.MemberEpoch != hb.MemberEpoch || resp.ActiveTasks != nil {
		t.Fatalf("after restart: %v %+v", err, resp)
	}
}

// isCoordinatorRetry: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
// or NOT_COORDINATOR, which a client retries.
func isCoordinatorRetry(code int16) bool { return code == 14 || code == 15 || code == 16 }

func hasConfig(cs []kadm.Config, key, value string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// KIP-1331 over the wire, with Kafka's InMemoryTopologyDescriptionPlugin
// named in the broker's config: the join's answer asks for the topology
// description, the member pushes it, and StreamsGroupDescribe v1 serves it.
func TestStreamsGroupTopologyDescriptionOverTheWire(t *testing.T) {
	props := append([]string{"group.streams.topology.description.plugin.class",
		"org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"}, groupBrokerProps...)
	srv := startBroker(t, t.TempDir(), props...)
	cl := newClient(t, srv, kgo.MaxVersions(kversion.V4_4_0()))
	node := cl.Broker(int(srv.NodeID()))
	createTopic(t, cl, "st-lines", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"td"}
	if _, err := fc.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	join := streamsJoin("td", "m1")
	resp, err := join.RequestWith(ctx, node)
	for i := 0; i < 600 && err == nil && isCoordinatorRetry(resp.ErrorCode); i++ {
		time.Sleep(50 * time.Millisecond)
		resp, err = join.RequestWith(ctx, node)
	}
	if err != nil || resp.ErrorCode != 0 || !resp.TopologyDescriptionRequired {
		t.Fatalf("join: %v %+v", err, resp)
	}
	up := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	up.Group, up.MemberID, up.TopologyEpoch = "td", "m1", join.Topology.Epoch
	n := kmsg.NewTopologyDescriptionNode()
	n.Name, n.NodeType, n.SourceTopics = "KSTREAM-SOURCE-0000000000", 1, []string{"st-lines"}
	st := kmsg.NewTopologyDescriptionSubtopology()
	st.SubtopologyID, st.Nodes = "0", []kmsg.TopologyDescriptionNode{n}
	up.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{st}
	if r, err := up.RequestWith(ctx, node); err != nil || r.ErrorCode != 0 {
		t.Fatalf("update: %v %+v", err, r)
	}
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups, dreq.IncludeTopologyDescription = []string{"td"}, true
	dresp, err := dreq.RequestWith(ctx, node)
	if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].TopologyDescriptionStatus != 3 ||
		dresp.Groups[0].TopologyDescription == nil || dresp.Groups[0].TopologyDescription.Subtopologies[0].Nodes[0].Name != n.Name {
		t.Fatalf("describe: %v %+v", err, dresp)
	}
}

// A classic JoinGroup naming a share group, or a streams group with a
// member, is refused with INCONSISTENT_GROUP_PROTOCOL and no member id, as
// Kafka 4.4's classicGroupJoin refuses it (one namespace for every group
// type); an empty streams group would be converted. A streams heartbeat
// naming a share group is GROUP_ID_NOT_FOUND.
func TestJoinGroupRefusesShareAndStreamsGroups(t *testing.T) {
	srv := startBroker(t, t.TempDir(), groupBrokerProps...)
	cl := newClient(t, srv, kgo.MaxVersions(kversion.V4_4_0()))
	node := cl.Broker(int(srv.NodeID()))
	createTopic(t, cl, "st-lines", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"jg-streams"}
	if _, err := fc.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	sj := streamsJoin("jg-streams", "m1")
	sresp, err := sj.RequestWith(ctx, node)
	for i := 0; i < 600 && err == nil && isCoordinatorRetry(sresp.ErrorCode); i++ {
		time.Sleep(50 * time.Millisecond)
		sresp, err = sj.RequestWith(ctx, node)
	}
	if err != nil || sresp.ErrorCode != 0 {
		t.Fatalf("streams join: %v %+v", err, sresp)
	}
	shj := kmsg.NewPtrShareGroupHeartbeatRequest()
	shj.GroupID, shj.MemberID, shj.SubscribedTopicNames = "jg-share", "share-member", []string{"st-lines"}
	if r, err := shj.RequestWith(ctx, node); err != nil || r.ErrorCode != 0 {
		t.Fatalf("share join: %v %+v", err, r)
	}
	for _, g := range []string{"jg-streams", "jg-share"} {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType = g, "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
		r, err := join.RequestWith(ctx, node)
		if err != nil || r.ErrorCode != kerr.InconsistentGroupProtocol.Code || r.MemberID != "" {
			t.Fatalf("JoinGroup of %s: %v %+v", g, err, r)
		}
	}
	// Nor does a streams member take the share group's id.
	sj = streamsJoin("jg-share", "m2")
	if r, err := sj.RequestWith(ctx, node); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code ||
		r.ErrorMessage == nil || *r.ErrorMessage != "Group jg-share is not a streams group." {
		t.Fatalf("streams join of the share group: %v %+v", err, r)
	}
}
