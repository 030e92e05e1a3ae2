package group

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Mixed groups, Kafka's online migration between the rebalance protocols
// (group.consumer.migration.policy):
//
//   - upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group of
//     the consumer protocol type converts it (ConsumerGroup.fromClassicGroup):
//     the group epoch is the classic generation, every classic member
//     becomes a consumer-group member at that epoch owning its last
//     assignment, which is also its target; the new member's join bumps the
//     epoch, and the classic members learn of the new assignment through
//     REBALANCE_IN_PROGRESS on their heartbeats;
//   - classic members of a consumer group: JoinGroup updates the member and
//     reconciles it as a heartbeat would (its owned partitions are those of
//     its subscription), answering with generation = member epoch and no
//     leader; SyncGroup returns its assigned partitions in the consumer
//     protocol's assignment; Heartbeat asks it to rejoin while the group is
//     ahead of it or it has partitions to revoke or to collect; a classic
//     member that does not rejoin or sync within its rebalance timeout is
//     fenced;
//   - downgrade: when the last consumer-protocol member leaves (or is
//     fenced) and only classic members remain, the group becomes a classic
//     group at generation = group epoch (ClassicGroup.fromConsumerGroup),
//     each member keeping its target assignment, and a rebalance starts.
//
// A classic member's protocols and session timeout are persisted in its
// ConsumerGroupMemberMetadata record's ClassicMemberMetadata.

// classicMeta is what the classic protocol adds to a consumer-group member.
type classicMeta struct {
	sessionTimeout int32 // ms
	protocols      []protocolMeta
}

// errNotConvertible: a classic member's embedded consumer protocol does not
// parse, so the group cannot be upgraded.
var errNotConvertible = errors.New("malformed embedded consumer protocol")

func (c *Coordinator) upgradeEnabled() bool {
	p := strings.ToLower(c.cfg.MigrationPolicy)
	return p == "" || p == "bidirectional" || p == "upgrade"
}

func (c *Coordinator) downgradeEnabled() bool {
	p := strings.ToLower(c.cfg.MigrationPolicy)
	return p == "" || p == "bidirectional" || p == "downgrade"
}

// canUpgradeLocked is Kafka's validateOnlineUpgrade.
func (g *group) canUpgradeLocked() bool {
	cg := &g.classic
	switch {
	case !g.c.upgradeEnabled():
		g.c.logger.Info("cannot upgrade classic group to consumer group: the online upgrade is disabled", "group", g.id)
	case cg.protocolType != consumerProtocolType:
		g.c.logger.Info("cannot upgrade classic group to consumer group: it does not use the consumer embedded protocol", "group", g.id)
	case len(cg.members) > int(g.c.cfg.ConsumerMaxSize):
		g.c.logger.Info("cannot upgrade classic group to consumer group: it has more members than group.consumer.max.size", "group", g.id)
	default:
		return true
	}
	return false
}

// upgradeLocked converts a non-empty classic group to a consumer group,
// writing the classic group's tombstone and the consumer group's records.
func (g *group) upgradeLocked() error {
	cg := &g.classic
	ncg := newConsumerGroup()
	ncg.epoch, ncg.assignmentEpoch = cg.generation, cg.generation
	for _, id := range cg.sortedMemberIDs() {
		cm := cg.members[id]
		meta := cm.metadata(cg.protocol)
		if cg.protocol == "" && len(cm.protocols) > 0 {
			meta = cm.protocols[0].metadata
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(meta); err != nil {
			g.c.logger.Warn("cannot upgrade classic group: a member's subscription does not parse", "group", g.id, "member", id, "err", err)
			return errNotConvertible
		}
		assigned := partitionSet{}
		if len(cm.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(cm.assignment); err != nil {
				g.c.logger.Warn("cannot upgrade classic group: a member's assignment does not parse", "group", g.id, "member", id, "err", err)
				return errNotConvertible
			}
			for _, t := range a.Topics {
				if tm, ok := g.c.meta.Topic(t.Topic); ok {
					for _, p := range t.Partitions {
						assigned.add(tm.ID, p)
					}
				}
			}
		}
		target := partitionSet{}
		for t, ps := range assigned {
			for p := range ps {
				target.add(t, p)
			}
		}
		names := slices.Clone(sub.Topics)
		slices.Sort(names)
		names = slices.Compact(names)
		m := &consumerMember{
			id: id, instanceID: cm.instanceID, rackID: sub.Rack, clientID: cm.clientID, clientHost: cm.clientHost,
			rebalanceTimeout: cm.rebalanceTimeout, names: names,
			state: memberStable, epoch: cg.generation, prevEpoch: cg.generation,
			assigned: assigned, pendingRevocation: partitionSet{},
			classic: &classicMeta{sessionTimeout: cm.sessionTimeout, protocols: slices.Clone(cm.protocols)},
		}
		ncg.members[id] = m
		if m.instanceID != nil {
			ncg.static[*m.instanceID] = id
		}
		ncg.target[id] = target
	}
	// The classic group's tombstone and the consumer group's records go in
	// one batch, as Kafka writes them.
	var recs []record
	if cg.hasRecord {
		recs = append(recs, groupTombstone(g.id))
	}
	g.consumer = ncg // consumerRecordsLocked reads it
	crecs, commit := g.consumerRecordsLocked(nil)
	g.consumer = nil
	if err := g.appendRecords(append(recs, crecs...)); err != nil {
		return err
	}
	// Parked JoinGroup and SyncGroup requests are told to rejoin.
	g.shutdownMembersLocked(kerr.RebalanceInProgress.Code)
	n := len(cg.members)
	g.classic.init(g.c.now())
	g.kind = kindConsumer
	g.consumer = ncg
	commit()
	for _, m := range ncg.members {
		g.ownLocked(m)
		g.scheduleConsumerSessionLocked(m)
	}
	g.c.logger.Info("upgraded classic group to a consumer group", "group", g.id, "epoch", ncg.epoch, "classic_members", n)
	return nil
}

// maybeDowngradeLocked is Kafka's validateOnlineDowngradeWithFencedMember
// and convertToClassicGroup: leaving is the consumer group's last member
// of the consumer protocol; if only classic members remain and the policy
// allows it, the group becomes a classic group without it and rebalances.
// It reports whether the group was converted.
func (g *group) maybeDowngradeLocked(leaving *consumerMember) bool {
	cg := g.consumer
	if len(cg.members) <= 1 {
		return false
	}
	for _, m := range cg.members {
		if m != leaving && m.classic == nil {
			return false
		}
	}
	if !g.c.downgradeEnabled() {
		g.c.logger.Info("cannot downgrade consumer group to classic group: the online downgrade is disabled", "group", g.id)
		return false
	}
	if len(cg.members)-1 > int(g.c.cfg.MaxSize) {
		g.c.logger.Info("cannot downgrade consumer group to classic group: it has more members than group.max.size", "group", g.id)
		return false
	}
	if !g.downgradeLocked(leaving.id) {
		return false
	}
	g.prepareRebalanceLocked("downgrade group " + g.id + " from consumer to classic")
	return true
}

// maybeDowngradeOnReplaceLocked is Kafka's
// validateOnlineDowngradeWithReplacedMemberId: a classic static member
// took over the instance of the last consumer-protocol member, so every
// member is classic; the group becomes a classic group, Stable, each
// member keeping its assignment.
func (g *group) maybeDowngradeOnReplaceLocked() bool {
	cg := g.consumer
	for _, m := range cg.members {
		if m.classic == nil {
			return false
		}
	}
	if !g.c.downgradeEnabled() || len(cg.members) > int(g.c.cfg.MaxSize) {
		return false
	}
	return g.downgradeLocked("")
}

// downgradeLocked converts the consumer group to a Stable classic group of
// its members but leaving (none: ""), at generation = group epoch, each
// member's target assignment as its assignment; the consumer group's
// tombstones and the GroupMetadata record are one batch. It reports whether
// the group was converted (false: the write failed).
func (g *group) downgradeLocked(leaving string) bool {
	cg := g.consumer
	var nc classicGroup
	nc.init(g.c.now())
	nc.state, nc.prevState = stateStable, stateStable
	nc.generation = cg.epoch
	nc.protocolType = consumerProtocolType
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		if id != leaving {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := cg.members[id]
		cm := &classicMember{
			id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeout: m.rebalanceTimeout, sessionTimeout: m.classic.sessionTimeout,
			protocolType: consumerProtocolType, protocols: slices.Clone(m.classic.protocols),
		}
		nc.members[id] = cm
		if cm.instanceID != nil {
			nc.static[*cm.instanceID] = id
		}
		if nc.leader == "" {
			nc.leader = id
		}
	}
	nc.protocol = nc.selectProtocol()
	nc.subscribedTopics = nc.computeSubscribedTopics()
	for _, id := range ids {
		cm := nc.members[id]
		cm.assignment = g.encodeAssignmentLocked(cg.target[id], cm.metadata(nc.protocol))
	}
	old := g.classic
	g.classic = nc
	recs := append(g.consumerTombstonesLocked(), g.groupMetadataRecordLocked(nil))
	if err := g.appendRecords(recs); err != nil {
		g.classic = old
		g.c.logger.Warn("cannot downgrade consumer group to classic group: writing its records failed", "group", g.id, "err", err)
		return false
	}
	g.classic.hasRecord = true
	for _, m := range cg.members {
		g.cancelConsumerTimersLocked(m)
	}
	g.kind = kindClassic
	g.consumer = nil
	for _, id := range ids {
		m := g.classic.members[id]
		g.rescheduleHeartbeatLocked(m, m.sessionTimeoutDuration())
	}
	g.c.logger.Info("downgraded consumer group to a classic group", "group", g.id, "generation", nc.generation,
		"members", len(ids), "left", leaving)
	return true
}

// encodeAssignmentLocked serializes partitions in the consumer protocol's
// assignment, at the version of the member's subscription metadata.
func (g *group) encodeAssignmentLocked(s partitionSet, subscription []byte) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	if len(subscription) >= 2 {
		a.Version = min(max(int16(subscription[0])<<8|int16(subscription[1]), 0), 3)
	}
	var topics []kmsg.ConsumerMemberAssignmentTopic
	for _, t := range s.sortedTopics() {
		tm, ok := g.c.meta.TopicByID(t)
		if !ok {
			continue
		}
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = tm.Name, sortedPartitions(s[t])
		topics = append(topics, at)
	}
	slices.SortFunc(topics, func(a, b kmsg.ConsumerMemberAssignmentTopic) int { return strings.Compare(a.Topic, b.Topic) })
	a.Topics = topics
	return a.AppendTo(nil)
}

// supportsClassicProtocolsLocked is Kafka's
// ConsumerGroup.supportsClassicProtocols: a joining classic member must be
// of the consumer protocol type and share a protocol with every classic
// member.
func (g *group) supportsClassicProtocolsLocked(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType != consumerProtocolType || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		ok := true
		for _, m := range g.consumer.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(q protocolMeta) bool { return q.name == p.Name }) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// classicMemberLocked is Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol.
func (g *group) classicMemberLocked(memberID string, instanceID *string) (*consumerMember, int16) {
	cg := g.consumer
	var m *consumerMember
	if instanceID == nil {
		m = cg.members[memberID]
	} else {
		id, ok := cg.static[*instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID.Code
		}
		if id != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
		m = cg.members[id]
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// classicJoinConsumerLocked is Kafka's classicGroupJoinToConsumerGroup.
func (g *group) classicJoinConsumerLocked(cl Client, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) {
	cg := g.consumer
	if !g.c.upgradeEnabled() && !g.c.downgradeEnabled() {
		// The disabled policy keeps classic members out of a non-empty
		// consumer group.
		respond(joinError(req.MemberID, kerr.InconsistentGroupProtocol.Code))
		return
	}
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = newUUID()
	}
	if len(cg.members) >= int(g.c.cfg.ConsumerMaxSize) && cg.members[memberID] == nil &&
		(req.InstanceID == nil || cg.static[*req.InstanceID] == "") {
		respond(joinError(req.MemberID, kerr.GroupMaxSizeReached.Code))
		return
	}
	if !g.supportsClassicProtocolsLocked(req.ProtocolType, req.Protocols) {
		respond(joinError(req.MemberID, kerr.InconsistentGroupProtocol.Code))
		return
	}
	if unknown && req.InstanceID == nil && cl.Version >= 4 {
		// KIP-394: the member rejoins with the id it is given.
		respond(joinError(memberID, kerr.MemberIDRequired.Code))
		return
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(req.Protocols[0].Metadata); err != nil {
		respond(joinError(req.MemberID, kerr.InconsistentGroupProtocol.Code))
		return
	}

	// Get or create the member; a static member's new id takes over its
	// instance's state.
	var m *consumerMember
	isNew, replaced := false, false
	if req.InstanceID != nil {
		if existing, ok := cg.static[*req.InstanceID]; ok && existing != memberID {
			m = g.replaceConsumerMemberLocked(cg.members[existing], memberID)
			m.epoch, m.prevEpoch = 0, 0
			replaced = true
		}
	}
	if m == nil {
		m = cg.members[memberID]
	}
	if m == nil {
		isNew = true
		m = &consumerMember{id: memberID, assigned: partitionSet{}, pendingRevocation: partitionSet{}}
		cg.members[memberID] = m
		g.c.logger.Info("member joins consumer group using the classic protocol", "group", g.id, "member", memberID, "client", cl.ID)
	}
	subscriptionChanged := isNew
	if req.InstanceID != nil {
		inst := *req.InstanceID
		m.instanceID = &inst
		cg.static[inst] = m.id
	}
	if sub.Rack != nil {
		rack := *sub.Rack
		m.rackID = &rack
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = req.RebalanceTimeoutMillis
	}
	names := slices.Clone(sub.Topics)
	slices.Sort(names)
	names = slices.Compact(names)
	if names == nil {
		names = []string{}
	}
	if !slices.Equal(names, m.names) {
		m.names = names
		subscriptionChanged = true
	}
	m.clientID, m.clientHost = cl.ID, cl.Host
	m.classic = &classicMeta{sessionTimeout: req.SessionTimeoutMillis, protocols: toProtocols(req.Protocols)}

	// The joining classic member's principal filters a regex resolution it
	// triggers, as a heartbeat's does.
	g.maybeBumpAndAssignLocked(subscriptionChanged, cl.MayDescribeTopic)
	owned := partitionSet{}
	for _, op := range sub.OwnedPartitions {
		if tm, ok := g.c.meta.Topic(op.Topic); ok {
			for _, p := range op.Partitions {
				owned.add(tm.ID, p)
			}
		}
	}
	g.reconcileLocked(m, owned)

	if replaced && g.maybeDowngradeOnReplaceLocked() {
		// The group is classic now and the member keeps its assignment.
		cgc := &g.classic
		cm := cgc.members[m.id]
		var members []kmsg.JoinGroupResponseMember
		if m.id == cgc.leader {
			members = cgc.currentMembers()
		}
		g.rescheduleHeartbeatLocked(cm, cm.sessionTimeoutDuration())
		respond(cgc.joinResponse(m.id, members))
		return
	}
	if err := g.persistConsumerLocked(m); err != nil {
		respond(joinError(req.MemberID, appendErrorCode(err)))
		return
	}
	g.cancelLocked(&m.joinTimer)
	g.cancelLocked(&m.rebalanceTimer)
	g.scheduleConsumerSessionLocked(m)
	g.scheduleLocked(&m.syncTimer, time.Duration(m.rebalanceTimeout)*time.Millisecond, func() {
		g.expireConsumerMemberLocked(m, "the classic member failed to sync within its rebalance timeout")
	})
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID, r.Generation = m.id, m.epoch
	r.ProtocolType = optString(consumerProtocolType)
	r.Protocol = optString(m.classic.protocols[0].name)
	r.LeaderID = "" // nobody assigns: the coordinator does
	respond(r)
}

// scheduleClassicJoinLocked is Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent:
// a classic member told to rejoin must do so within its rebalance timeout.
func (g *group) scheduleClassicJoinLocked(m *consumerMember) {
	if m.joinTimer.t != nil {
		return
	}
	g.scheduleLocked(&m.joinTimer, time.Duration(m.rebalanceTimeout)*time.Millisecond, func() {
		g.expireConsumerMemberLocked(m, "the classic member failed to join within its rebalance timeout")
	})
}

// classicSyncConsumerLocked is Kafka's classicGroupSyncToConsumerGroup: the
// member gets the partitions it is assigned.
func (g *group) classicSyncConsumerLocked(req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) {
	m, code := g.classicMemberLocked(req.MemberID, req.InstanceID)
	if code != 0 {
		respond(syncError(code))
		return
	}
	if req.Generation != m.epoch {
		respond(syncError(kerr.IllegalGeneration.Code))
		return
	}
	protocol := m.classic.protocols[0].name
	if req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType || req.Protocol != nil && *req.Protocol != protocol {
		respond(syncError(kerr.InconsistentGroupProtocol.Code))
		return
	}
	if g.consumer.epoch > m.epoch && m.state != memberUnrevoked {
		g.scheduleClassicJoinLocked(m)
		respond(syncError(kerr.RebalanceInProgress.Code))
		return
	}
	g.cancelLocked(&m.syncTimer)
	g.scheduleConsumerSessionLocked(m)
	r := kmsg.NewPtrSyncGroupResponse()
	r.ProtocolType, r.Protocol = optString(consumerProtocolType), optString(protocol)
	r.MemberAssignment = g.encodeAssignmentLocked(m.assigned, m.classic.protocols[0].metadata)
	respond(r)
}

// classicHeartbeatConsumerLocked is Kafka's classicGroupHeartbeatToConsumerGroup.
func (g *group) classicHeartbeatConsumerLocked(req *kmsg.HeartbeatRequest) int16 {
	m, code := g.classicMemberLocked(req.MemberID, req.InstanceID)
	if code != 0 {
		return code
	}
	if req.Generation != m.epoch {
		return kerr.IllegalGeneration.Code
	}
	g.scheduleConsumerSessionLocked(m)
	// The member rejoins when the group moved past it, when it has
	// partitions to give up, or when the partitions it waits for are free.
	if m.epoch < g.consumer.epoch || m.state == memberUnrevoked ||
		m.state == memberUnreleased && !g.waitingOnUnreleasedLocked(m) {
		g.scheduleClassicJoinLocked(m)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// waitingOnUnreleasedLocked reports whether a partition of the member's
// target is still owned by another member.
func (g *group) waitingOnUnreleasedLocked(m *consumerMember) bool {
	cg := g.consumer
	for t, ps := range cg.target[m.id] {
		for p := range ps {
			if m.assigned.has(t, p) {
				continue
			}
			if o, ok := cg.owner[topicPartition{t, p}]; ok && o != m.id {
				return true
			}
		}
	}
	return false
}

// classicLeaveConsumerLocked is Kafka's classicGroupLeaveToConsumerGroup:
// classic members leave; the group epoch is bumped once.
func (g *group) classicLeaveConsumerLocked(members []kmsg.LeaveGroupRequestMember) []kmsg.LeaveGroupResponseMember {
	cg := g.consumer
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(members))
	removed := false
	for _, rm := range members {
		var m *consumerMember
		code := int16(0)
		if rm.InstanceID == nil {
			m = cg.members[rm.MemberID]
		} else if id, ok := cg.static[*rm.InstanceID]; !ok {
			code = kerr.UnknownMemberID.Code
		} else if rm.MemberID != "" && id != rm.MemberID {
			code = kerr.FencedInstanceID.Code
		} else {
			m = cg.members[id]
		}
		if code == 0 && (m == nil || m.classic == nil) {
			code = kerr.UnknownMemberID.Code
		}
		if code != 0 {
			out = append(out, leaveResult(rm, code))
			continue
		}
		g.c.logger.Info("classic member left consumer group", "group", g.id, "member", m.id)
		g.removeConsumerMemberLocked(m)
		removed = true
		res := leaveResult(rm, 0)
		res.MemberID = m.id
		out = append(out, res)
	}
	if removed {
		cg.metaValid = false
		cg.epoch++
		g.c.logger.Info("bumped consumer group epoch", "group", g.id, "epoch", cg.epoch, "members", len(cg.members))
		if err := g.persistConsumerLocked(nil); err != nil {
			code := appendErrorCode(err)
			for i := range out {
				if out[i].ErrorCode == 0 {
					out[i].ErrorCode = code
				}
			}
		}
	}
	return out
}

// isClassicMemberLocked reports whether id is a classic member of a mixed
// consumer group (one that joined with JoinGroup), which commits offsets
// by its generation.
func (g *group) isClassicMemberLocked(id string) bool {
	if g.kind != kindConsumer {
		return false
	}
	m := g.consumer.members[id]
	return m != nil && m.classic != nil
}
