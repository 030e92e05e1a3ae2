package reference

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The sequences of the keys Strait gained after the harness was written:
// the quorum and registration calls, UpdateFeatures, share groups and
// streams groups.

// straitOnlyKeys: keys Strait serves and Kafka 4.4, as the harness starts
// it, does not. Kafka advertises GetTelemetrySubscriptions and PushTelemetry
// only with a metrics reporter implementing ClientTelemetry configured, and
// its jars ship none (only test ones), so they cannot be compared here:
// DIFFERENCES.md's "Client telemetry (KIP-714)" entry (telemetry APIs are
// always advertised). Any other key Strait alone serves fails the test.
var straitOnlyKeys = map[int16]string{
	int16(kmsg.GetTelemetrySubscriptions): "**Client telemetry (KIP-714)**",
	int16(kmsg.PushTelemetry):             "**Client telemetry (KIP-714)**",
}

func shareGroup(t *target) string   { return t.name("cf-sg") }
func streamsGroup(t *target) string { return t.name("cf-st") }

func shareHeartbeat(epoch func(*target) int32, join bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID = shareGroup(t)
		r.MemberID = t.name("cf-share-member-000000")
		r.MemberEpoch = epoch(t)
		if join {
			r.SubscribedTopicNames = []string{cfTopic}
		}
		return r
	}
}

func shareFetchReq(epoch int32, ack bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID = kmsg.StringPtr(shareGroup(t))
		r.MemberID = kmsg.StringPtr(t.name("cf-share-member-000000"))
		r.ShareSessionEpoch = epoch
		r.MaxWaitMillis = 10
		r.MinBytes = 1
		r.MaxBytes = 1 << 20
		r.MaxRecords = 100
		r.BatchSize = 100
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = t.id(cfTopic)
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = 0
		rp.PartitionMaxBytes = 1 << 20
		if ack {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 0, []int8{1}
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		}
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func shareAckReq(epoch int32) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrShareAcknowledgeRequest()
		r.GroupID = kmsg.StringPtr(shareGroup(t))
		r.MemberID = kmsg.StringPtr(t.name("cf-share-member-000000"))
		r.ShareSessionEpoch = epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = t.id(cfTopic)
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 0, []int8{1}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func streamsHeartbeat(epoch func(*target) int32, join bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		r.Group = streamsGroup(t)
		r.MemberID = t.name("cf-streams-member-0000")
		r.MemberEpoch = epoch(t)
		r.RebalanceTimeoutMillis = -1
		if join {
			r.RebalanceTimeoutMillis = 30000
			r.ProcessID = kmsg.StringPtr("cf-process")
			topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
			topo.Epoch = 1
			sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			sub.SubtopologyID = "0"
			sub.SourceTopics = []string{cfTopic}
			topo.Subtopologies = append(topo.Subtopologies, sub)
			r.Topology = &topo
			r.ActiveTasks = []kmsg.TaskIDs{}
			r.StandbyTasks = []kmsg.TaskIDs{}
			r.WarmupTasks = []kmsg.TaskIDs{}
		}
		return r
	}
}

// topologyDescriptionUpdate is a StreamsGroupTopologyDescriptionUpdate of
// a one-node topology.
func topologyDescriptionUpdate(group, member string, epoch int32) *kmsg.StreamsGroupTopologyDescriptionUpdateRequest {
	r := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	r.Group, r.MemberID, r.TopologyEpoch = group, member, epoch
	n := kmsg.NewTopologyDescriptionNode()
	n.Name, n.NodeType, n.SourceTopics = "KSTREAM-SOURCE-0000000000", 1, []string{cfTopic}
	st := kmsg.NewTopologyDescriptionSubtopology()
	st.SubtopologyID, st.Nodes = "0", []kmsg.TopologyDescriptionNode{n}
	r.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{st}
	return r
}

func updateFeaturesReq(feature string, level int16, validate bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrUpdateFeaturesRequest()
		r.TimeoutMillis = 10000
		r.ValidateOnly = validate
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = feature, level, 1
		r.FeatureUpdates = append(r.FeatureUpdates, u)
		return r
	}
}

// updateFeaturesTypeReq validates (only) an update of feature to level
// with the given upgrade type (v1+).
func updateFeaturesTypeReq(feature string, level int16, typ int8) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := updateFeaturesReq(feature, level, true)(t).(*kmsg.UpdateFeaturesRequest)
		r.FeatureUpdates[0].UpgradeType = typ
		return r
	}
}

func newerScenarios() []scenario {
	return []scenario{
		{name: "quorum", steps: []step{
			{path: "describe", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeQuorumRequest()
				rt := kmsg.NewDescribeQuorumRequestTopic()
				rt.Topic = "__cluster_metadata"
				rp := kmsg.NewDescribeQuorumRequestTopicPartition()
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "describe an unknown partition", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeQuorumRequest()
				rt := kmsg.NewDescribeQuorumRequestTopic()
				rt.Topic = "cf-not-the-metadata-log"
				rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "add an unknown voter", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrAddRaftVoterRequest()
				r.TimeoutMillis = 2000
				r.VoterID = 999
				r.VoterDirectoryID = [16]byte{1, 2, 3}
				l := kmsg.NewAddRaftVoterRequestListener()
				l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
				r.Listeners = append(r.Listeners, l)
				return r
			}},
			{path: "remove an unknown voter", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrRemoveRaftVoterRequest()
				r.VoterID = 999
				r.VoterDirectoryID = [16]byte{1, 2, 3}
				return r
			}},
			{path: "unregister an unknown broker", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrUnregisterBrokerRequest()
				r.BrokerID = 999
				return r
			}},
			{path: "unregister an unknown controller", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrUnregisterControllerRequest()
				r.ControllerID = 999
				return r
			}},
		}},
		{name: "UpdateFeatures", steps: []step{
			// v0 has no validate-only: an upgrade to the current
			// level changes nothing either way.
			{path: "current level", req: updateFeaturesReq("group.version", 1, true)},
			{path: "unknown feature", req: updateFeaturesReq("cf.no.such.feature", 1, true)},
			{path: "level above the supported", minVersion: 1, req: updateFeaturesReq("group.version", 99, true)},
			// Levels Kafka accepts and Strait now stores too, validated only
			// (stored, group.version 0 would turn the consumer group
			// protocol off for the scenarios after this one).
			{path: "safe downgrade, validate only", minVersion: 1, req: updateFeaturesTypeReq("group.version", 0, 2)},
			{path: "upgrade, validate only", minVersion: 1, req: updateFeaturesTypeReq("eligible.leader.replicas.version", 1, 1)},
			{path: "downgrade with the upgrade type", minVersion: 1, req: updateFeaturesTypeReq("group.version", 0, 1)},
		}},
		{name: "share group", steps: []step{
			{path: "join", req: shareHeartbeat(func(*target) int32 { return 0 }, true), keep: func(t *target, r kmsg.Response) {
				t.set("sepoch", r.(*kmsg.ShareGroupHeartbeatResponse).MemberEpoch)
			}},
			// Kafka assigns in the background (DIFFERENCES.md's share
			// groups): its member is asked again until it has its
			// partition, so that the fetches below find the same state.
			{path: "heartbeat", eventually: true, req: shareHeartbeat(func(t *target) int32 { return t.i32("sepoch") }, false), keep: func(t *target, r kmsg.Response) {
				t.set("sepoch", r.(*kmsg.ShareGroupHeartbeatResponse).MemberEpoch)
			}},
			{path: "fenced epoch", req: shareHeartbeat(func(t *target) int32 { return t.i32("sepoch") + 5 }, false)},
			{path: "describe", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrShareGroupDescribeRequest()
				r.GroupIDs = []string{shareGroup(t), "cf-absent-group"}
				r.IncludeAuthorizedOperations = true
				return r
			}},
			{path: "fetch opening a session", req: shareFetchReq(0, false)},
			{path: "fetch with a wrong session epoch", req: shareFetchReq(5, false)},
			{path: "acknowledge with a wrong session epoch", req: shareAckReq(7)},
			{path: "acknowledge", req: shareAckReq(1)},
			{path: "close the session", req: shareFetchReq(-1, false)},
			{path: "offsets", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
				g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
				g.GroupID = shareGroup(t)
				gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
				gt.Topic, gt.Partitions = cfTopic, []int32{0}
				g.Topics = append(g.Topics, gt)
				r.Groups = append(r.Groups, g)
				return r
			}},
			{path: "alter offsets of a group with members", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
				r.GroupID = shareGroup(t)
				rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
				rt.Topic = cfTopic
				rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
				rp.StartOffset = 1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "delete offsets of a group with members", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
				r.GroupID = shareGroup(t)
				r.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: cfTopic}}
				return r
			}},
			{path: "leave", req: shareHeartbeat(func(*target) int32 { return -1 }, false)},
			{path: "delete offsets of an unknown group", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
				r.GroupID = "cf-absent-group"
				r.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: cfTopic}}
				return r
			}},
		}},
		{name: "streams group", steps: []step{
			{path: "join", req: streamsHeartbeat(func(*target) int32 { return 0 }, true), keep: func(t *target, r kmsg.Response) {
				t.set("stepoch", r.(*kmsg.StreamsGroupHeartbeatResponse).MemberEpoch)
			}},
			{path: "heartbeat", req: streamsHeartbeat(func(t *target) int32 { return t.i32("stepoch") }, false)},
			{path: "fenced epoch", req: streamsHeartbeat(func(t *target) int32 { return t.i32("stepoch") + 5 }, false)},
			// KIP-1331 without a topology description plugin (the default):
			// UNSUPPORTED_VERSION, and describe says NOT_STORED.
			{path: "topology description update", req: func(t *target) kmsg.Request {
				return topologyDescriptionUpdate(streamsGroup(t), t.name("cf-streams-member-0000"), 1)
			}},
			{path: "topology description update with an empty member id", req: func(t *target) kmsg.Request {
				return topologyDescriptionUpdate(streamsGroup(t), "", 1)
			}},
			{path: "describe description", minVersion: 1, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrStreamsGroupDescribeRequest()
				r.Groups = []string{streamsGroup(t)}
				r.IncludeTopologyDescription = true
				return r
			}},
			{path: "describe", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrStreamsGroupDescribeRequest()
				r.Groups = []string{streamsGroup(t), "cf-absent-group"}
				r.IncludeAuthorizedOperations = true
				return r
			}},
			{path: "leave", req: streamsHeartbeat(func(*target) int32 { return -1 }, false)},
		}},
		// The share coordinator's RPCs (brokers send them to each other;
		// the harness's principal may send them as a super user).
		{name: "share group state", steps: []step{
			{path: "read an absent group's state", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrReadShareGroupStateRequest()
				r.GroupID = "cf-absent-share-group"
				rt := kmsg.NewReadShareGroupStateRequestTopic()
				rt.TopicID = t.id(cfTopic)
				rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
				rp.LeaderEpoch = -1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "summary of an absent group's state", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
				r.GroupID = "cf-absent-share-group"
				rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
				rt.TopicID = t.id(cfTopic)
				rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
				rp.LeaderEpoch = -1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "delete an absent group's state", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDeleteShareGroupStateRequest()
				r.GroupID = "cf-absent-share-group"
				rt := kmsg.NewDeleteShareGroupStateRequestTopic()
				rt.TopicID = t.id(cfTopic)
				rt.Partitions = append(rt.Partitions, kmsg.NewDeleteShareGroupStateRequestTopicPartition())
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "write with an empty group id", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrWriteShareGroupStateRequest()
				rt := kmsg.NewWriteShareGroupStateRequestTopic()
				rt.TopicID = t.id(cfTopic)
				rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
				rp.StartOffset = 0
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "initialize with an empty group id", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrInitializeShareGroupStateRequest()
				rt := kmsg.NewInitializeShareGroupStateRequestTopic()
				rt.TopicID = t.id(cfTopic)
				rt.Partitions = append(rt.Partitions, kmsg.NewInitializeShareGroupStateRequestTopicPartition())
				r.Topics = append(r.Topics, rt)
				return r
			}},
		}},
	}
}
