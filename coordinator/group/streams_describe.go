package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupDescribe (key 89), versions 0-1: epochs, the topology as
// configured, and each member's process, endpoint, assignment and target.
// The topology description (KIP-1331) comes from streams_description.go.
func (c *Coordinator) StreamsGroupDescribe(cl Client, req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.streamsGroupDescribe(id, req))
	}
	return resp
}

func (c *Coordinator) streamsGroupDescribe(id string, req *kmsg.StreamsGroupDescribeRequest) kmsg.StreamsGroupDescribeResponseGroup {
	dg := kmsg.NewStreamsGroupDescribeResponseGroup()
	dg.Group = id
	fail := func(code int16, msg string) kmsg.StreamsGroupDescribeResponseGroup {
		dg.ErrorCode = code
		if msg != "" {
			dg.ErrorMessage = &msg
		}
		return dg
	}
	g, code, msg := c.lockGroupOfKind(id, c.cfg.StreamsProtocol, kindStreams, "streams")
	if code != 0 {
		return fail(code, msg)
	}
	defer g.mu.Unlock()
	sg := g.streams
	dg.State, dg.Epoch, dg.AssignmentEpoch = sg.stateName(), sg.epoch, sg.assignmentEpoch
	dg.AuthorizedOperations = describedOps(req.IncludeAuthorizedOperations)
	assignor := "sticky"
	dg.AssignorName = &assignor
	c.describeDescriptionLocked(sg, req, &dg)
	if sg.topology != nil {
		t := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		t.Epoch = sg.topology.Epoch
		if sg.configured.ready() {
			t.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
			for _, st := range sg.topology.Subtopologies {
				ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				ds.SubtopologyID = st.SubtopologyID
				ds.SourceTopics = nonNil(slices.Clone(st.SourceTopics))
				ds.RepartitionSinkTopics = nonNil(slices.Clone(st.RepartitionSinkTopics))
				ds.StateChangelogTopics = nonNil(slices.Clone(st.StateChangelogTopics))
				ds.RepartitionSourceTopics = nonNil(slices.Clone(st.RepartitionSourceTopics))
				t.Subtopologies = append(t.Subtopologies, ds)
			}
		}
		dg.Topology = &t
	}
	dg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, mid := range sortedKeys(sg.members) {
		m := sg.members[mid]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.InstanceID, dm.RackID = m.id, m.epoch, m.instanceID, m.rackID
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.TopologyEpoch, dm.ProcessID = m.topologyEpoch, m.processID
		if m.endpoint != nil {
			e := kmsg.NewStreamsGroupDescribeResponseGroupMemberUserEndpoint()
			e.Host, e.Port = m.endpoint.Host, m.endpoint.Port
			dm.UserEndpoint = &e
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, ct := range m.clientTags {
			t := kmsg.NewStreamsGroupDescribeResponseGroupMemberClientTag()
			t.Key, t.Value = ct.Key, ct.Value
			dm.ClientTags = append(dm.ClientTags, t)
		}
		dm.TaskOffsets = nonNil(slices.Clone(m.taskOffsets))
		dm.TaskEndOffsets = nonNil(slices.Clone(m.taskEndOffsets))
		dm.Assignment = m.assigned.wire()
		target, ok := sg.target[m.id]
		if !ok {
			target = emptyTasks()
		}
		dm.TargetAssignment = target.wire()
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
