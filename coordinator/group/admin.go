package group

import (
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is the authorized-operations bit field of a group without
// an authorizer: every operation a group supports in Kafka 4 (READ, DELETE,
// DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: AclOperation codes 3, 6, 8, 10, 11).
const groupOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

func describedOps(include bool) int32 {
	if include {
		return groupOperations
	}
	return math.MinInt32
}

// ListGroups (key 16): every group this broker coordinates, filtered by state
// (v4+, case-insensitive) and type (v5+: classic, consumer).
func (c *Coordinator) ListGroups(cl Client, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if c.closed.Load() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	// A partition still loading would hide its groups: answer as Kafka
	// does and let the client retry.
	n := c.log.Partitions()
	for p := int32(0); p < n; p++ {
		if epoch, leads := c.log.LeaderEpoch(p); leads {
			if code := c.shardFor(p).ensureLoaded(c, epoch); code != 0 {
				resp.ErrorCode = code
				return resp
			}
		}
	}
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[strings.ToLower(strings.TrimSpace(s))] = true
	}
	types := map[string]bool{}
	for _, t := range req.TypesFilter {
		types[strings.ToLower(strings.TrimSpace(t))] = true
	}
	groups := c.allGroups()
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.id, b.id) })
	for _, g := range groups {
		g.mu.Lock()
		if g.removed {
			g.mu.Unlock()
			continue
		}
		state, kind := g.stateLocked(), g.kind.String()
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, g.protocolTypeLocked(), state, kind
		g.mu.Unlock()
		if len(states) > 0 && !states[strings.ToLower(state)] || len(types) > 0 && !types[kind] {
			continue
		}
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// DescribeGroups (key 15) describes classic groups. A missing group (or a
// consumer-protocol one) is Dead, with GROUP_ID_NOT_FOUND from v6.
func (c *Coordinator) DescribeGroups(cl Client, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeGroup(cl, id, req.IncludeAuthorizedOperations))
	}
	return resp
}

func (c *Coordinator) describeGroup(cl Client, id string, includeOps bool) kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = id
	if c.closed.Load() {
		dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return dg
	}
	g, code := c.lockGroup(id, false)
	if code != 0 {
		dg.ErrorCode = code
		return dg
	}
	if g == nil || g.kind != kindClassic {
		msg := "Group " + id + " not found."
		if g != nil {
			msg = "Group " + id + " is not a classic group."
			g.mu.Unlock()
		}
		dg.State = stateDead.String()
		if cl.Version >= 6 {
			dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		} else {
			// A dead group without an error is answered with its
			// operations, as KafkaApis does for every error-free group.
			dg.AuthorizedOperations = describedOps(includeOps)
		}
		return dg
	}
	defer g.mu.Unlock()
	cg := &g.classic
	dg.State, dg.ProtocolType = cg.state.String(), cg.protocolType
	stable := cg.state == stateStable
	if stable {
		dg.Protocol = cg.protocol
	}
	for _, mid := range cg.sortedMemberIDs() {
		m := cg.members[mid]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if stable {
			if md := m.metadata(cg.protocol); md != nil {
				dm.ProtocolMetadata = md
			}
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		dg.Members = append(dg.Members, dm)
	}
	dg.AuthorizedOperations = describedOps(includeOps)
	return dg
}

// DeleteGroups (key 42): deletes empty groups with all their offsets.
func (c *Coordinator) DeleteGroups(cl Client, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = id
		r.ErrorCode = c.deleteGroup(id)
		resp.Groups = append(resp.Groups, r)
	}
	return resp
}

func (c *Coordinator) deleteGroup(id string) int16 {
	if c.closed.Load() {
		return kerr.CoordinatorNotAvailable.Code
	}
	g, code := c.lockGroup(id, false)
	if code != 0 {
		return code
	}
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	defer g.mu.Unlock()
	if !g.isEmptyLocked() {
		return kerr.NonEmptyGroup.Code
	}
	var recs []record
	topics := make([]string, 0, len(g.offsets))
	for t := range g.offsets {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		for _, p := range sortedPartitionList(g.offsets[t]) {
			recs = append(recs, offsetTombstone(g.id, t, p))
		}
	}
	offsets := len(recs)
	recs = append(recs, g.groupTombstonesLocked()...)
	if err := g.appendRecords(recs); err != nil {
		c.logger.Warn("deleting group failed", "group", id, "err", err)
		return appendErrorCode(err)
	}
	g.shutdownMembersLocked(kerr.CoordinatorNotAvailable.Code)
	g.classic.state = stateDead
	g.offsets = map[string]map[int32]offsetEntry{}
	g.removeLocked()
	c.logger.Info("deleted group", "group", id, "offsets", offsets)
	return 0
}

func sortedPartitionList(ps map[int32]offsetEntry) []int32 {
	out := make([]int32, 0, len(ps))
	for p := range ps {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// ConsumerGroupDescribe (key 69) describes KIP-848 groups: epochs, assignor,
// and each member's subscription, assignment and target assignment.
func (c *Coordinator) ConsumerGroupDescribe(cl Client, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.consumerGroupDescribe(id, req.IncludeAuthorizedOperations))
	}
	return resp
}

func (c *Coordinator) consumerGroupDescribe(id string, includeOps bool) kmsg.ConsumerGroupDescribeResponseGroup {
	dg := kmsg.NewConsumerGroupDescribeResponseGroup()
	dg.Group = id
	fail := func(code int16, msg string) kmsg.ConsumerGroupDescribeResponseGroup {
		dg.ErrorCode = code
		if msg != "" {
			dg.ErrorMessage = &msg
		}
		return dg
	}
	g, code, msg := c.lockGroupOfKind(id, c.cfg.ConsumerProtocol, kindConsumer, "consumer")
	if code != 0 {
		return fail(code, msg)
	}
	defer g.mu.Unlock()
	cg := g.consumer
	dg.State, dg.Epoch, dg.AssignmentEpoch = cg.stateName(), cg.epoch, cg.assignmentEpoch
	// Kafka names the assignor its current members prefer (the default
	// once they have left), not the one the last assignment was made with.
	dg.AssignorName = g.preferredAssignorLocked()
	dg.AuthorizedOperations = describedOps(includeOps)
	ids := make([]string, 0, len(cg.members))
	for mid := range cg.members {
		ids = append(ids, mid)
	}
	slices.Sort(ids)
	for _, mid := range ids {
		m := cg.members[mid]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = slices.Clone(m.names)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		re := m.regex // Kafka answers "" when the member has no regex
		dm.SubscribedTopicRegex = &re
		dm.Assignment = c.describeAssignment(m.assigned)
		dm.TargetAssignment = c.describeAssignment(cg.target[m.id])
		dm.MemberType = 1 // a consumer-protocol member
		if m.classic != nil {
			dm.MemberType = 0 // a classic member of a mixed group
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

func (c *Coordinator) describeAssignment(s partitionSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range s.sortedTopics() {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = t, sortedPartitions(s[t])
		if meta, ok := c.meta.TopicByID(t); ok {
			tp.Topic = meta.Name
		}
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// lockGroupOfKind locks group id for a describe of a consumer or streams
// group, with Kafka's errors otherwise: UNSUPPORTED_VERSION when the
// protocol is disabled, COORDINATOR_NOT_AVAILABLE once closed,
// INVALID_GROUP_ID for an empty id, the coordinator's own errors, and
// GROUP_ID_NOT_FOUND for an unknown group or one of another kind. With
// code 0 the caller holds g.mu.
func (c *Coordinator) lockGroupOfKind(id string, enabled bool, kind groupKind, kindName string) (g *group, code int16, msg string) {
	switch {
	case !enabled:
		return nil, kerr.UnsupportedVersion.Code, ""
	case c.closed.Load():
		return nil, kerr.CoordinatorNotAvailable.Code, ""
	case id == "":
		return nil, kerr.InvalidGroupID.Code, ""
	}
	g, code = c.lockGroup(id, false)
	if code != 0 {
		return nil, code, ""
	}
	if g == nil {
		return nil, kerr.GroupIDNotFound.Code, "Group " + id + " not found."
	}
	if g.kind != kind {
		g.mu.Unlock()
		return nil, kerr.GroupIDNotFound.Code, "Group " + id + " is not a " + kindName + " group."
	}
	return g, 0, ""
}
