package group

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicState is a classic group's state (Kafka's ClassicGroupState).
type classicState int8

const (
	stateEmpty classicState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s classicState) String() string {
	switch s {
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	case stateDead:
		return "Dead"
	}
	return "Empty"
}

// consumerProtocolType is the protocol type of Kafka consumers, whose
// subscriptions the coordinator can read.
const consumerProtocolType = "consumer"

// protocolMeta is one protocol a member supports, in its preference order.
type protocolMeta struct {
	name     string
	metadata []byte
}

// classicMember is a member of a classic group.
type classicMember struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout int32 // ms
	sessionTimeout   int32 // ms
	protocolType     string
	protocols        []protocolMeta
	assignment       []byte

	joinCB func(*kmsg.JoinGroupResponse) // parked JoinGroup
	syncCB func(*kmsg.SyncGroupResponse) // parked SyncGroup
	isNew  bool                          // joined in the current rebalance, not yet answered

	heartbeat groupTimer // session expiration
}

func (m *classicMember) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether the member sends the same protocols, in order.
func (m *classicMember) matches(ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i, p := range ps {
		if p.Name != m.protocols[i].name || !bytes.Equal(p.Metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// hasSatisfiedHeartbeat is Kafka's: a parked member counts as alive unless
// it is new.
func (m *classicMember) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.joinCB != nil || m.syncCB != nil
}

func toProtocols(ps []kmsg.JoinGroupRequestProtocol) []protocolMeta {
	out := make([]protocolMeta, len(ps))
	for i, p := range ps {
		out[i] = protocolMeta{name: p.Name, metadata: slices.Clone(p.Metadata)}
	}
	return out
}

// classicGroup is the classic-protocol state of a group (Kafka's
// ClassicGroup).
type classicGroup struct {
	state, prevState classicState
	stateTime        int64  // ms of the last transition
	protocolType     string // "": none
	protocol         string // selected protocol, "": none
	generation       int32
	leader           string
	members          map[string]*classicMember
	static           map[string]string      // group.instance.id -> member id
	pending          map[string]*groupTimer // KIP-394 member ids awaiting their second JoinGroup
	pendingSync      map[string]bool        // members yet to send SyncGroup this generation
	newMemberAdded   bool                   // extends the initial rebalance delay
	joinTimer        groupTimer
	syncTimer        groupTimer
	subscribedTopics map[string]bool // nil: unknown
	hasRecord        bool            // a GroupMetadata record exists in the log
}

func (cg *classicGroup) init(now time.Time) {
	*cg = classicGroup{
		state:       stateEmpty,
		prevState:   stateEmpty,
		stateTime:   now.UnixMilli(),
		members:     map[string]*classicMember{},
		static:      map[string]string{},
		pending:     map[string]*groupTimer{},
		pendingSync: map[string]bool{},
	}
}

func (g *group) transitionLocked(s classicState) {
	cg := &g.classic
	cg.prevState, cg.state = cg.state, s
	cg.stateTime = g.c.now().UnixMilli()
}

// canRebalance: a rebalance may start from Stable, CompletingRebalance or Empty.
func (cg *classicGroup) canRebalance() bool {
	return cg.state == stateStable || cg.state == stateCompletingRebalance || cg.state == stateEmpty
}

func (cg *classicGroup) numAwaitingJoin() int {
	n := 0
	for _, m := range cg.members {
		if m.joinCB != nil {
			n++
		}
	}
	return n
}

func (cg *classicGroup) hasAllMembersJoined() bool {
	return len(cg.members) == cg.numAwaitingJoin() && len(cg.pending) == 0
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (cg *classicGroup) rebalanceTimeout() time.Duration {
	var ms int32
	for _, m := range cg.members {
		ms = max(ms, m.rebalanceTimeout)
	}
	return time.Duration(ms) * time.Millisecond
}

// sortedMemberIDs gives a stable iteration order.
func (cg *classicGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// candidateProtocols are the protocols every member supports.
func (cg *classicGroup) candidateProtocols() map[string]bool {
	counts := map[string]int{}
	for _, m := range cg.members {
		for _, p := range m.protocols {
			counts[p.name]++
		}
	}
	out := map[string]bool{}
	for name, n := range counts {
		if n == len(cg.members) {
			out[name] = true
		}
	}
	return out
}

// supportsProtocols is Kafka's: an empty group takes any non-empty protocol
// list; otherwise the type must match and one protocol must be supported by
// every member.
func (cg *classicGroup) supportsProtocols(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if cg.state == stateEmpty {
		return protocolType != "" && len(ps) > 0
	}
	if cg.protocolType != protocolType {
		return false
	}
	candidates := cg.candidateProtocols()
	for _, p := range ps {
		if candidates[p.Name] {
			return true
		}
	}
	return false
}

// selectProtocol lets each member vote for its most preferred candidate
// and picks the most voted; ties go to the one the leader prefers.
func (cg *classicGroup) selectProtocol() string {
	candidates := cg.candidateProtocols()
	votes := map[string]int{}
	for _, m := range cg.members {
		for _, p := range m.protocols {
			if candidates[p.name] {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	order := cg.sortedMemberIDs()
	if l := cg.members[cg.leader]; l != nil {
		order = append([]string{cg.leader}, order...)
	}
	for _, id := range order {
		for _, p := range cg.members[id].protocols {
			if n, ok := votes[p.name]; ok && n > bestVotes {
				best, bestVotes = p.name, n
			}
		}
	}
	return best
}

// computeSubscribedTopics reads the members' consumer-protocol
// subscriptions; nil means unknown (another protocol type, or unparsable).
func (cg *classicGroup) computeSubscribedTopics() map[string]bool {
	if cg.protocolType != consumerProtocolType {
		return nil
	}
	topics := map[string]bool{}
	if len(cg.members) == 0 {
		return topics
	}
	if cg.protocol == "" {
		return nil
	}
	for _, m := range cg.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(cg.protocol)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

// validateMember is Kafka's ClassicGroup.validateMember.
func (cg *classicGroup) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		existing, ok := cg.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if existing != memberID {
			return kerr.FencedInstanceID.Code
		}
		return 0
	}
	if cg.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// generateMemberID is Kafka's: instance id (or client id), "-", a UUID.
func generateMemberID(clientID string, instanceID *string) string {
	if instanceID != nil {
		return *instanceID + "-" + newUUID()
	}
	return clientID + "-" + newUUID()
}

// currentMembers is what the leader's JoinGroup response lists.
func (cg *classicGroup) currentMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(cg.members))
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.id, m.instanceID, m.metadata(cg.protocol)
		out = append(out, rm)
	}
	return out
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// joinResponse is a successful JoinGroup answer for the current generation.
func (cg *classicGroup) joinResponse(memberID string, members []kmsg.JoinGroupResponseMember) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID, r.Generation, r.LeaderID = memberID, cg.generation, cg.leader
	r.Protocol, r.ProtocolType = optString(cg.protocol), optString(cg.protocolType)
	r.Members = members
	return r
}

func joinError(memberID string, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID, r.ErrorCode, r.Generation = memberID, code, -1
	return r
}

func (m *classicMember) completeJoin(r *kmsg.JoinGroupResponse) bool {
	if m.joinCB == nil {
		return false
	}
	cb := m.joinCB
	m.joinCB = nil
	cb(r)
	return true
}

func (m *classicMember) completeSync(r *kmsg.SyncGroupResponse) bool {
	if m.syncCB == nil {
		return false
	}
	cb := m.syncCB
	m.syncCB = nil
	cb(r)
	return true
}

func syncError(code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = code
	return r
}

// addMemberLocked adds a member parked on cb.
func (g *group) addMemberLocked(m *classicMember, cb func(*kmsg.JoinGroupResponse)) {
	cg := &g.classic
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	if len(cg.members) == 0 {
		cg.protocolType = m.protocolType
	}
	if cg.leader == "" {
		cg.leader = m.id
	}
	cg.members[m.id] = m
	m.joinCB = cb
}

// removeMemberLocked takes a member out of the group; a request it still
// has parked is answered UNKNOWN_MEMBER_ID so no exchange is left hanging.
func (g *group) removeMemberLocked(id string) {
	cg := &g.classic
	if m := cg.members[id]; m != nil {
		delete(cg.members, id)
		if m.instanceID != nil && cg.static[*m.instanceID] == id {
			delete(cg.static, *m.instanceID)
		}
		g.cancelLocked(&m.heartbeat)
		m.completeJoin(joinError("", kerr.UnknownMemberID.Code))
		m.completeSync(syncError(kerr.UnknownMemberID.Code))
	}
	if cg.leader == id {
		cg.leader = ""
		if ids := cg.sortedMemberIDs(); len(ids) > 0 {
			cg.leader = ids[0]
		}
	}
	if t := cg.pending[id]; t != nil {
		g.cancelLocked(t)
		delete(cg.pending, id)
	}
	delete(cg.pendingSync, id)
}

// updateMemberLocked takes a rejoining member's new protocols and timeouts
// and parks it on cb (a request already parked is answered
// REBALANCE_IN_PROGRESS, the client having given up on it).
func (g *group) updateMemberLocked(m *classicMember, req *kmsg.JoinGroupRequest, cb func(*kmsg.JoinGroupResponse)) {
	m.protocols = toProtocols(req.Protocols)
	m.rebalanceTimeout = req.RebalanceTimeoutMillis
	m.sessionTimeout = req.SessionTimeoutMillis
	if cb != nil {
		m.completeJoin(joinError(m.id, kerr.RebalanceInProgress.Code))
		m.joinCB = cb
	}
}

// rescheduleHeartbeatLocked restarts a member's session expiration.
func (g *group) rescheduleHeartbeatLocked(m *classicMember, d time.Duration) {
	id := m.id
	g.scheduleLocked(&m.heartbeat, d, func() { g.expireHeartbeatLocked(id) })
}

func (m *classicMember) sessionTimeoutDuration() time.Duration {
	return time.Duration(m.sessionTimeout) * time.Millisecond
}

// expireHeartbeatLocked runs when a member's (or pending member's) session
// timer fires.
func (g *group) expireHeartbeatLocked(memberID string) {
	cg := &g.classic
	if g.kind != kindClassic || cg.state == stateDead {
		return
	}
	if _, ok := cg.pending[memberID]; ok {
		g.c.logger.Info("pending member removed after session timeout", "group", g.id, "member", memberID)
		g.removeMemberLocked(memberID)
		if cg.state == statePreparingRebalance && cg.hasAllMembersJoined() {
			g.completeJoinLocked()
		}
		return
	}
	m := cg.members[memberID]
	if m == nil || m.hasSatisfiedHeartbeat() {
		return
	}
	g.c.logger.Info("member failed its session timeout, removing it", "group", g.id, "member", memberID,
		"session_timeout_ms", m.sessionTimeout)
	g.removeMemberAndUpdateLocked(m, "removing member "+memberID+" on heartbeat expiration")
}

// removeMemberAndUpdateLocked removes a member (expired or leaving) and
// rebalances or completes the join phase.
func (g *group) removeMemberAndUpdateLocked(m *classicMember, reason string) {
	cg := &g.classic
	m.completeJoin(joinError("", kerr.UnknownMemberID.Code))
	g.removeMemberLocked(m.id)
	switch {
	case cg.state == stateStable || cg.state == stateCompletingRebalance:
		g.maybePrepareRebalanceOrCompleteJoinLocked(reason)
	case cg.state == statePreparingRebalance && cg.hasAllMembersJoined():
		g.completeJoinLocked()
	}
}

func (g *group) maybePrepareRebalanceOrCompleteJoinLocked(reason string) {
	if g.classic.canRebalance() {
		g.prepareRebalanceLocked(reason)
	} else {
		g.maybeCompleteJoinPhaseLocked()
	}
}

// prepareRebalanceLocked moves the group to PreparingRebalance: members
// waiting for their assignment are told to rejoin, and the join phase ends
// when everyone rejoined or the rebalance timeout passes (a new group waits
// group.initial.rebalance.delay.ms first, extended while members keep
// joining).
func (g *group) prepareRebalanceLocked(reason string) {
	cg := &g.classic
	if cg.state == stateCompletingRebalance {
		g.resetAndPropagateAssignmentLocked(kerr.RebalanceInProgress.Code)
	}
	clear(cg.pendingSync)
	g.cancelLocked(&cg.syncTimer)

	initial := cg.state == stateEmpty
	if initial {
		delay := g.c.cfg.InitialRebalanceDelay
		remaining := max(cg.rebalanceTimeout()-delay, 0)
		g.scheduleLocked(&cg.joinTimer, delay, func() { g.tryCompleteInitialRebalanceLocked(delay, remaining) })
	}
	g.transitionLocked(statePreparingRebalance)
	g.c.logger.Info("preparing to rebalance group", "group", g.id, "generation", cg.generation,
		"members", len(cg.members), "reason", reason)
	if !initial {
		if cg.hasAllMembersJoined() {
			g.completeJoinLocked()
		} else {
			g.scheduleLocked(&cg.joinTimer, cg.rebalanceTimeout(), g.completeJoinLocked)
		}
	}
}

func (g *group) tryCompleteInitialRebalanceLocked(delay, remaining time.Duration) {
	cg := &g.classic
	if g.kind != kindClassic || cg.state != statePreparingRebalance {
		return
	}
	if cg.newMemberAdded && remaining > 0 {
		cg.newMemberAdded = false
		newDelay := min(g.c.cfg.InitialRebalanceDelay, remaining)
		newRemaining := max(remaining-delay, 0)
		g.scheduleLocked(&cg.joinTimer, newDelay, func() { g.tryCompleteInitialRebalanceLocked(newDelay, newRemaining) })
		return
	}
	g.completeJoinLocked()
}

// maybeCompleteJoinPhaseLocked ends the join phase once every member
// rejoined, except during the initial (delayed) rebalance.
func (g *group) maybeCompleteJoinPhaseLocked() {
	cg := &g.classic
	if cg.state != statePreparingRebalance || cg.prevState == stateEmpty || !cg.hasAllMembersJoined() {
		return
	}
	g.completeJoinLocked()
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else picks a
// member that did; false if none did.
func (cg *classicGroup) maybeElectNewJoinedLeader() bool {
	l := cg.members[cg.leader]
	if l == nil {
		return false
	}
	if l.joinCB != nil {
		return true
	}
	for _, id := range cg.sortedMemberIDs() {
		if cg.members[id].joinCB != nil {
			cg.leader = id
			return true
		}
	}
	return false
}

// completeJoinLocked ends the join phase: dynamic members that did not
// rejoin are removed, the generation advances, and every waiting member gets
// its JoinGroup answer (the leader with the member list), or the group
// becomes Empty.
func (g *group) completeJoinLocked() {
	cg := &g.classic
	if g.kind != kindClassic {
		return
	}
	g.cancelLocked(&cg.joinTimer)
	for _, id := range cg.sortedMemberIDs() {
		if m := cg.members[id]; m.joinCB == nil && m.instanceID == nil {
			g.c.logger.Info("removing member that did not rejoin", "group", g.id, "member", id)
			g.removeMemberLocked(id)
		}
	}
	if cg.state == stateDead {
		return
	}
	if !cg.maybeElectNewJoinedLeader() && len(cg.members) > 0 {
		g.c.logger.Warn("group could not complete rebalance because no members rejoined", "group", g.id)
		g.scheduleLocked(&cg.joinTimer, cg.rebalanceTimeout(), g.completeJoinLocked)
		return
	}
	g.initNextGenerationLocked()
	if cg.state == stateEmpty {
		g.c.logger.Info("group is now empty", "group", g.id, "generation", cg.generation)
		if err := g.storeGroupLocked(nil); err != nil {
			g.c.logger.Warn("failed to write empty group metadata", "group", g.id, "err", err)
		}
		return
	}
	g.c.logger.Info("stabilized group", "group", g.id, "generation", cg.generation,
		"protocol", cg.protocol, "members", len(cg.members), "leader", cg.leader)
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		var members []kmsg.JoinGroupResponseMember
		if id == cg.leader {
			members = cg.currentMembers()
		}
		m.completeJoin(cg.joinResponse(id, members))
		g.rescheduleHeartbeatLocked(m, m.sessionTimeoutDuration())
		m.isNew = false
		cg.pendingSync[id] = true
	}
	gen := cg.generation
	g.scheduleLocked(&cg.syncTimer, cg.rebalanceTimeout(), func() { g.expirePendingSyncLocked(gen) })
}

func (g *group) initNextGenerationLocked() {
	cg := &g.classic
	cg.generation++
	if len(cg.members) > 0 {
		cg.protocol = cg.selectProtocol()
		cg.subscribedTopics = cg.computeSubscribedTopics()
		g.transitionLocked(stateCompletingRebalance)
	} else {
		cg.protocol = ""
		cg.subscribedTopics = cg.computeSubscribedTopics()
		g.transitionLocked(stateEmpty)
	}
	clear(cg.pendingSync)
}

// expirePendingSyncLocked removes the members that did not send SyncGroup
// within the rebalance timeout and rebalances.
func (g *group) expirePendingSyncLocked(generation int32) {
	cg := &g.classic
	if g.kind != kindClassic || generation != cg.generation {
		return
	}
	if cg.state != stateCompletingRebalance && cg.state != stateStable || len(cg.pendingSync) == 0 {
		return
	}
	var gone []string
	for id := range cg.pendingSync {
		gone = append(gone, id)
	}
	slices.Sort(gone)
	for _, id := range gone {
		g.removeMemberLocked(id)
	}
	g.c.logger.Info("removed members that did not send SyncGroup", "group", g.id, "members", gone)
	g.prepareRebalanceLocked("removing members on pending sync request expiration")
}

func (g *group) removePendingSyncLocked(id string) {
	cg := &g.classic
	delete(cg.pendingSync, id)
	switch cg.state {
	case stateCompletingRebalance, stateStable:
		if len(cg.pendingSync) == 0 {
			g.cancelLocked(&cg.syncTimer)
		}
	default:
		g.cancelLocked(&cg.syncTimer)
	}
}

// resetAndPropagateAssignmentLocked clears every assignment and answers the
// parked SyncGroup requests with code.
func (g *group) resetAndPropagateAssignmentLocked(code int16) {
	for _, m := range g.classic.members {
		m.assignment = nil
	}
	g.propagateAssignmentLocked(code)
}

func (g *group) propagateAssignmentLocked(code int16) {
	cg := &g.classic
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		r := kmsg.NewPtrSyncGroupResponse()
		r.ErrorCode = code
		r.MemberAssignment = m.assignment
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		if code == 0 {
			r.Protocol, r.ProtocolType = optString(cg.protocol), optString(cg.protocolType)
		}
		if m.completeSync(r) {
			// Any expiration that fired while the member waited was ignored;
			// expect heartbeats again from now.
			g.rescheduleHeartbeatLocked(m, m.sessionTimeoutDuration())
		}
	}
}

// storeGroupLocked writes the group's GroupMetadata record with the given
// assignments (nil: the members' current ones).
func (g *group) storeGroupLocked(assignment map[string][]byte) error {
	if err := g.appendRecords([]record{g.groupMetadataRecordLocked(assignment)}); err != nil {
		return err
	}
	g.classic.hasRecord = true
	return nil
}

// groupMetadataRecordLocked is the group's GroupMetadata record.
func (g *group) groupMetadataRecordLocked(assignment map[string][]byte) record {
	cg := &g.classic
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = cg.protocolType
	v.Generation = cg.generation
	v.Protocol, v.Leader = optString(cg.protocol), optString(cg.leader)
	v.CurrentStateTimestamp = cg.stateTime
	v.Members = []kmsg.GroupMetadataValueMember{}
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		mv := kmsg.NewGroupMetadataValueMember()
		mv.MemberID, mv.InstanceID, mv.ClientID, mv.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		mv.RebalanceTimeoutMillis, mv.SessionTimeoutMillis = m.rebalanceTimeout, m.sessionTimeout
		mv.Subscription = m.metadata(cg.protocol)
		if assignment != nil {
			mv.Assignment = assignment[id]
		} else {
			mv.Assignment = m.assignment
		}
		if mv.Subscription == nil {
			mv.Subscription = []byte{}
		}
		if mv.Assignment == nil {
			mv.Assignment = []byte{}
		}
		v.Members = append(v.Members, mv)
	}
	return record{key: groupMetadataKey(g.id), value: v.AppendTo(nil)}
}

// replaceStaticMemberLocked gives a static member a new member id (a
// restarted instance): whatever the old id has parked is answered
// FENCED_INSTANCE_ID, and everything else carries over.
func (g *group) replaceStaticMemberLocked(instanceID, oldID, newID string) *classicMember {
	cg := &g.classic
	old := cg.members[oldID]
	fenced := joinError(oldID, kerr.FencedInstanceID.Code)
	old.completeJoin(fenced)
	old.completeSync(syncError(kerr.FencedInstanceID.Code))
	g.cancelLocked(&old.heartbeat)
	delete(cg.members, oldID)
	delete(cg.pendingSync, oldID)
	m := &classicMember{
		id: newID, instanceID: old.instanceID, clientID: old.clientID, clientHost: old.clientHost,
		rebalanceTimeout: old.rebalanceTimeout, sessionTimeout: old.sessionTimeout,
		protocolType: old.protocolType, protocols: old.protocols, assignment: old.assignment,
	}
	cg.members[newID] = m
	if cg.leader == oldID {
		cg.leader = newID
	}
	cg.static[instanceID] = newID
	return m
}
