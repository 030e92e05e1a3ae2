package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup (key 11) for the classic protocol. respond is called exactly
// once, now or later (when the join phase completes) from another goroutine.
func (c *Coordinator) JoinGroup(cl Client, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) {
	fail := func(code int16) { respond(joinError(req.MemberID, code)) }
	if c.closed.Load() {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if req.Group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout.Code)
		return
	}
	if req.RebalanceTimeoutMillis <= 0 {
		req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	}
	// Kafka's classicGroupJoin: a share group, or a streams group with
	// members, is not joined with the classic protocol (an empty streams
	// group is converted below).
	if c.cfg.IsShareGroup != nil && c.cfg.IsShareGroup(req.Group) {
		respond(joinError("", kerr.InconsistentGroupProtocol.Code))
		return
	}
	// A group is created only for a member without an id; a known member id
	// of an unknown group is rejected.
	g, code := c.lockGroup(req.Group, req.MemberID == "")
	if code != 0 {
		fail(code)
		return
	}
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	defer g.mu.Unlock()
	if g.kind != kindClassic {
		if g.kind == kindStreams && !g.isEmptyLocked() {
			respond(joinError("", kerr.InconsistentGroupProtocol.Code))
			return
		}
		if !g.isEmptyLocked() {
			// A classic member of a consumer group (mixed.go).
			g.classicJoinConsumerLocked(cl, req, respond)
			return
		}
		if err := g.convertToClassicLocked(); err != nil {
			fail(appendErrorCode(err))
			return
		}
	}
	g.joinLocked(cl, req, respond)
}

func (g *group) joinLocked(cl Client, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) {
	cg := &g.classic
	if !g.acceptJoiningMemberLocked(req.MemberID) {
		if req.MemberID != "" {
			g.removeMemberLocked(req.MemberID)
		}
		respond(joinError("", kerr.GroupMaxSizeReached.Code))
		return
	}
	if req.MemberID == "" {
		g.joinNewMemberLocked(cl, req, respond)
		return
	}
	// A known member.
	if cg.state == stateDead {
		respond(joinError(req.MemberID, kerr.CoordinatorNotAvailable.Code))
		return
	}
	if !cg.supportsProtocols(req.ProtocolType, req.Protocols) {
		respond(joinError(req.MemberID, kerr.InconsistentGroupProtocol.Code))
		return
	}
	if t, ok := cg.pending[req.MemberID]; ok {
		// The second JoinGroup of KIP-394's round trip.
		g.cancelLocked(t)
		delete(cg.pending, req.MemberID)
		g.c.logger.Info("pending member joins group", "group", g.id, "member", req.MemberID, "state", cg.state)
		g.addMemberAndRebalanceLocked(cl, req, req.MemberID, respond)
		return
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		respond(joinError(req.MemberID, code))
		return
	}
	m := cg.members[req.MemberID]
	switch cg.state {
	case statePreparingRebalance:
		g.updateMemberLocked(m, req, respond)
		g.maybePrepareRebalanceOrCompleteJoinLocked("member " + m.id + " is joining group during PreparingRebalance" + joinReason(req))
	case stateCompletingRebalance:
		if m.matches(req.Protocols) {
			// The member lost its JoinGroup answer: send it again.
			var members []kmsg.JoinGroupResponseMember
			if m.id == cg.leader {
				members = cg.currentMembers()
			}
			respond(cg.joinResponse(m.id, members))
			return
		}
		g.updateMemberLocked(m, req, respond)
		g.maybePrepareRebalanceOrCompleteJoinLocked("updating metadata for member " + m.id + " during CompletingRebalance" + joinReason(req))
	case stateStable:
		if m.id == cg.leader || !m.matches(req.Protocols) {
			// A rejoining leader forces a rebalance: it lets the leader
			// react to changes the member metadata does not show (topic
			// metadata of a consumer).
			g.updateMemberLocked(m, req, respond)
			g.maybePrepareRebalanceOrCompleteJoinLocked("member " + m.id + " rejoins group in Stable state" + joinReason(req))
			return
		}
		respond(cg.joinResponse(m.id, nil))
	default:
		respond(joinError(req.MemberID, kerr.UnknownMemberID.Code))
	}
}

func joinReason(req *kmsg.JoinGroupRequest) string {
	if req.Reason != nil && *req.Reason != "" {
		return "; client reason: " + *req.Reason
	}
	return ""
}

// acceptJoiningMemberLocked enforces group.max.size as Kafka does.
func (g *group) acceptJoiningMemberLocked(memberID string) bool {
	cg := &g.classic
	max := int(g.c.cfg.MaxSize)
	m := cg.members[memberID]
	switch cg.state {
	case statePreparingRebalance:
		return m != nil && m.joinCB != nil || cg.numAwaitingJoin() < max
	case stateCompletingRebalance, stateStable:
		return m != nil || len(cg.members) < max
	}
	return true
}

func (g *group) joinNewMemberLocked(cl Client, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) {
	cg := &g.classic
	if cg.state == stateDead {
		respond(joinError("", kerr.CoordinatorNotAvailable.Code))
		return
	}
	if !cg.supportsProtocols(req.ProtocolType, req.Protocols) {
		respond(joinError("", kerr.InconsistentGroupProtocol.Code))
		return
	}
	newID := generateMemberID(cl.ID, req.InstanceID)
	if req.InstanceID != nil {
		if oldID, ok := cg.static[*req.InstanceID]; ok {
			g.c.logger.Info("static member rejoins with a new member id", "group", g.id,
				"instance", *req.InstanceID, "old_member", oldID, "member", newID, "state", cg.state)
			g.updateStaticMemberLocked(cl, req, oldID, newID, respond)
			return
		}
		g.addMemberAndRebalanceLocked(cl, req, newID, respond)
		return
	}
	if cl.Version >= 4 {
		// KIP-394: hand out the id and wait for the member to come back
		// with it, so a client that times out cannot pile up members.
		t := &groupTimer{}
		cg.pending[newID] = t
		g.scheduleLocked(t, time.Duration(req.SessionTimeoutMillis)*time.Millisecond, func() { g.expireHeartbeatLocked(newID) })
		respond(joinError(newID, kerr.MemberIDRequired.Code))
		return
	}
	g.addMemberAndRebalanceLocked(cl, req, newID, respond)
}

func (g *group) addMemberAndRebalanceLocked(cl Client, req *kmsg.JoinGroupRequest, memberID string, respond func(*kmsg.JoinGroupResponse)) {
	cg := &g.classic
	m := &classicMember{
		id: memberID, instanceID: req.InstanceID, clientID: cl.ID, clientHost: cl.Host,
		rebalanceTimeout: req.RebalanceTimeoutMillis, sessionTimeout: req.SessionTimeoutMillis,
		protocolType: req.ProtocolType, protocols: toProtocols(req.Protocols), isNew: true,
	}
	if cg.state == statePreparingRebalance && cg.prevState == stateEmpty {
		cg.newMemberAdded = true
	}
	g.addMemberLocked(m, respond)
	// A parked new member cannot heartbeat; bound its wait so a client that
	// gave up does not stay a member forever.
	g.rescheduleHeartbeatLocked(m, g.c.cfg.NewMemberJoinTimeout)
	g.maybePrepareRebalanceOrCompleteJoinLocked("adding new member " + memberID + joinReason(req))
}

// updateStaticMemberLocked is Kafka's updateStaticMemberThenRebalanceOrCompleteJoin:
// a known group.instance.id joins without a member id (a restarted
// instance). In a Stable group whose selected protocol does not change,
// the member takes its new id without a rebalance.
func (g *group) updateStaticMemberLocked(cl Client, req *kmsg.JoinGroupRequest, oldID, newID string, respond func(*kmsg.JoinGroupResponse)) {
	cg := &g.classic
	currentLeader := cg.leader
	m := g.replaceStaticMemberLocked(*req.InstanceID, oldID, newID)
	g.rescheduleHeartbeatLocked(m, m.sessionTimeoutDuration())
	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeout, m.sessionTimeout
	g.updateMemberLocked(m, req, respond)

	switch cg.state {
	case stateStable:
		if cg.protocol != cg.selectProtocol() {
			g.maybePrepareRebalanceOrCompleteJoinLocked("static member " + newID + " joined with a protocol change" + joinReason(req))
			return
		}
		cb := m.joinCB
		m.joinCB = nil
		if err := g.storeGroupLocked(nil); err != nil {
			g.c.logger.Warn("failed to persist static member replacement, reverting", "group", g.id,
				"instance", *req.InstanceID, "member", newID, "err", err)
			m.protocols, m.rebalanceTimeout, m.sessionTimeout = oldProtocols, oldRebalance, oldSession
			old := g.replaceStaticMemberLocked(*req.InstanceID, newID, oldID)
			g.rescheduleHeartbeatLocked(old, old.sessionTimeoutDuration())
			r := cg.joinResponse("", nil)
			r.LeaderID, r.ErrorCode = currentLeader, appendErrorCode(err)
			cb(r)
			return
		}
		if cl.Version >= 9 {
			// KIP-814: a returning leader gets the members but is told to
			// skip the assignment, which stays as it was.
			isLeader := cg.leader == newID
			var members []kmsg.JoinGroupResponseMember
			if isLeader {
				members = cg.currentMembers()
			}
			r := cg.joinResponse(newID, members)
			r.SkipAssignment = isLeader
			cb(r)
			return
		}
		// Older clients: name the old leader id so a returning leader does
		// not compute a new assignment.
		r := cg.joinResponse(newID, nil)
		r.LeaderID = currentLeader
		cb(r)
	case stateCompletingRebalance:
		// The leader may already be assigning with the old id: rebalance so
		// the new id gets an assignment.
		g.prepareRebalanceLocked("updating metadata for static member " + newID + joinReason(req))
	default:
		g.maybeCompleteJoinPhaseLocked()
	}
}

// SyncGroup (key 14). respond is called exactly once, now or when the
// leader's assignment arrives.
func (c *Coordinator) SyncGroup(cl Client, req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) {
	if c.closed.Load() {
		respond(syncError(kerr.CoordinatorNotAvailable.Code))
		return
	}
	if req.Group == "" {
		respond(syncError(kerr.InvalidGroupID.Code))
		return
	}
	g, code := c.lockGroup(req.Group, false)
	if code != 0 {
		respond(syncError(code))
		return
	}
	if g == nil {
		respond(syncError(kerr.UnknownMemberID.Code))
		return
	}
	defer g.mu.Unlock()
	if g.isEmptyLocked() {
		respond(syncError(kerr.UnknownMemberID.Code))
		return
	}
	if g.kind == kindConsumer {
		g.classicSyncConsumerLocked(req, respond)
		return
	}
	g.syncLocked(req, respond)
}

func (g *group) syncLocked(req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) {
	cg := &g.classic
	if cg.state == stateDead {
		respond(syncError(kerr.CoordinatorNotAvailable.Code))
		return
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		respond(syncError(code))
		return
	}
	if req.Generation != cg.generation {
		respond(syncError(kerr.IllegalGeneration.Code))
		return
	}
	if inconsistent(req.ProtocolType, cg.protocolType) || inconsistent(req.Protocol, cg.protocol) {
		respond(syncError(kerr.InconsistentGroupProtocol.Code))
		return
	}
	m := cg.members[req.MemberID]
	switch cg.state {
	case statePreparingRebalance:
		respond(syncError(kerr.RebalanceInProgress.Code))
	case stateCompletingRebalance:
		m.completeSync(syncError(kerr.RebalanceInProgress.Code))
		m.syncCB = respond
		g.removePendingSyncLocked(m.id)
		if m.id != cg.leader {
			return
		}
		assignment := make(map[string][]byte, len(cg.members))
		for _, a := range req.GroupAssignment {
			assignment[a.MemberID] = a.MemberAssignment
		}
		var missing []string
		for id := range cg.members {
			if _, ok := assignment[id]; !ok {
				assignment[id] = []byte{}
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			g.c.logger.Warn("leader sent no assignment for some members, giving them an empty one",
				"group", g.id, "generation", cg.generation, "members", missing)
		}
		g.c.logger.Info("assignment received from leader", "group", g.id, "leader", m.id,
			"generation", cg.generation, "members", len(cg.members), "static_members", len(cg.static))
		if err := g.storeGroupLocked(assignment); err != nil {
			code := appendErrorCode(err)
			g.c.logger.Warn("failed to store group assignment", "group", g.id, "err", err)
			g.resetAndPropagateAssignmentLocked(code)
			g.maybePrepareRebalanceOrCompleteJoinLocked("error storing group assignment during SyncGroup")
			return
		}
		for id, mm := range cg.members {
			mm.assignment = assignment[id]
		}
		g.propagateAssignmentLocked(0)
		g.transitionLocked(stateStable)
	case stateStable:
		g.removePendingSyncLocked(m.id)
		r := kmsg.NewPtrSyncGroupResponse()
		r.Protocol, r.ProtocolType = optString(cg.protocol), optString(cg.protocolType)
		r.MemberAssignment = m.assignment
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		respond(r)
	default:
		respond(syncError(kerr.UnknownMemberID.Code))
	}
}

// inconsistent is Kafka's isProtocolInconsistent: both set and different.
func inconsistent(req *string, group string) bool {
	return req != nil && group != "" && *req != group
}
