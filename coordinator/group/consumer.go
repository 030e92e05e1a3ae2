package group

import (
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberState is a KIP-848 member's reconciliation state (Kafka's
// MemberState).
type memberState int8

const (
	memberStable     memberState = iota // owns its target (at the target epoch)
	memberUnrevoked                     // must first give up partitionsPendingRevocation
	memberUnreleased                    // waits for partitions other members still own
)

// Member epochs a ConsumerGroupHeartbeat may carry besides the current one.
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	staticLeaveEpoch = -2 // a static member leaves for now and keeps its assignment
)

// consumerMember is a member of a KIP-848 consumer group.
type consumerMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	rebalanceTimeout int32 // ms
	serverAssignor   string
	names            []string // subscribed topic names, sorted
	regex            string   // subscribed topic regex, "": none

	state             memberState
	epoch, prevEpoch  int32
	assigned          partitionSet
	pendingRevocation partitionSet

	// classic is set for a member that speaks the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat) in a mixed group (mixed.go).
	classic *classicMeta

	sessionTimer   groupTimer
	rebalanceTimer groupTimer
	joinTimer      groupTimer // a classic member must rejoin within its rebalance timeout
	syncTimer      groupTimer // a classic member must sync within its rebalance timeout
}

// consumerGroup is the KIP-848 state of a group (Kafka's ConsumerGroup).
type consumerGroup struct {
	epoch           int32 // group epoch: bumped by membership and subscription changes
	assignmentEpoch int32 // epoch of the target assignment
	members         map[string]*consumerMember
	static          map[string]string       // group.instance.id -> member id
	target          map[string]partitionSet // member id -> target assignment
	owner           map[topicPartition]string

	// Subscription metadata: every subscribed topic that exists, by name,
	// and the topics each regex resolves to, as of metaVersion.
	subscribed  map[string]TopicMeta
	regexTopics map[string][]string
	metaVersion uint64
	metaValid   bool
	assignor    string // the assignor of the current target

	// log is what the group's records in __consumer_offsets say; dirty
	// asks the next write to compare every member (a member id changed).
	log   *consumerLog
	dirty bool
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members:     map[string]*consumerMember{},
		static:      map[string]string{},
		target:      map[string]partitionSet{},
		owner:       map[topicPartition]string{},
		subscribed:  map[string]TopicMeta{},
		regexTopics: map[string][]string{},
	}
}

// stateName is Kafka's ConsumerGroupState as a string.
func (cg *consumerGroup) stateName() string {
	if len(cg.members) == 0 {
		return "Empty"
	}
	if cg.epoch > cg.assignmentEpoch {
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.state != memberStable || m.epoch != cg.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// subscribedTo reports whether any member consumes topic.
func (cg *consumerGroup) subscribedTo(topic string) bool {
	for _, m := range cg.members {
		if slices.Contains(m.names, topic) || m.regex != "" && slices.Contains(cg.regexTopics[m.regex], topic) {
			return true
		}
	}
	return false
}

// compileRegex compiles a subscription regex; Kafka matches it (RE2J)
// against whole topic names.
func compileRegex(re string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + re + ")$")
}

// ConsumerGroupHeartbeat (key 68), versions 0-1: KIP-848's join, heartbeat,
// reconciliation and leave in one API.
func (c *Coordinator) ConsumerGroupHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if !c.cfg.ConsumerProtocol {
		return fail(kerr.UnsupportedVersion.Code, "")
	}
	if c.closed.Load() {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	if code, msg := c.validateHeartbeat(cl, req); code != 0 {
		return fail(code, msg)
	}
	leaving := req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch
	g, code := c.lockGroup(req.Group, req.MemberEpoch == joinEpoch)
	if code != 0 {
		return fail(code, "")
	}
	if g == nil {
		if req.MemberEpoch > 0 {
			// Kafka answers GROUP_ID_NOT_FOUND. The group's state is in
			// the log, so this is a group deleted meanwhile (or whose
			// records never made it): the member is told to rejoin with
			// epoch 0 (UNKNOWN_MEMBER_ID), which clients do on their own,
			// where GROUP_ID_NOT_FOUND is fatal to them
			// (compat-tests/DIFFERENCES.md).
			return fail(kerr.UnknownMemberID.Code, "Consumer group "+req.Group+" is not known to this coordinator; rejoin.")
		}
		return fail(kerr.GroupIDNotFound.Code, "Consumer group "+req.Group+" not found.")
	}
	defer g.mu.Unlock()
	if g.kind != kindConsumer {
		cg := &g.classic
		switch {
		case req.MemberEpoch != joinEpoch:
			return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a consumer group.")
		case g.isEmptyLocked() && len(cg.pending) == 0:
			if err := g.convertToConsumerLocked(); err != nil {
				return fail(appendErrorCode(err), "")
			}
		case g.canUpgradeLocked():
			// Kafka's online upgrade: the classic members carry on in the
			// consumer group and are asked to rejoin.
			if err := g.upgradeLocked(); err != nil {
				if err == errNotConvertible {
					return fail(kerr.GroupIDNotFound.Code, "Cannot upgrade the classic group "+req.Group+
						" to consumer group because the embedded consumer protocol is malformed.")
				}
				return fail(appendErrorCode(err), "")
			}
		default:
			return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a consumer group.")
		}
	}
	if leaving {
		resp = g.consumerLeaveLocked(req, resp)
	} else {
		resp = g.consumerHeartbeatLocked(cl, req, resp)
	}
	if resp.ErrorCode != 0 || g.kind != kindConsumer {
		// An error, or the leave downgraded the group (its records are
		// written).
		return resp
	}
	// The change is answered once its records are in the log, so a
	// coordinator taking over the partition knows what the member was told.
	var only *consumerMember
	if resp.MemberID != nil {
		only = g.consumer.members[*resp.MemberID]
	}
	if err := g.persistConsumerLocked(only); err != nil {
		failed := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		failed.ErrorCode = appendErrorCode(err)
		return failed
	}
	return resp
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *Coordinator) validateHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	invalid := kerr.InvalidRequest.Code
	if (cl.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveEpoch) && req.MemberID == "" {
		return invalid, "MemberId can't be empty."
	}
	if req.Group == "" {
		return invalid, "GroupId can't be empty."
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		return invalid, "InstanceId can't be empty."
	}
	if req.RackID != nil && *req.RackID == "" {
		return invalid, "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == joinEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid, "RebalanceTimeoutMs must be provided in first request."
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid, "TopicPartitions must be empty when (re-)joining."
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return invalid, "InstanceId can't be null."
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return invalid, "MemberEpoch is invalid."
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor.Code, "ServerAssignor " + *req.ServerAssignor + " is not supported."
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex `" + *req.SubscribedTopicRegex + "` is not a valid regular expression: " + err.Error() + "."
		}
	}
	return 0, ""
}

// consumerLeaveLocked handles member epoch -1 (leave) and -2 (a static
// member leaving for now: it keeps its assignment until its session
// expires or its instance rejoins).
func (g *group) consumerLeaveLocked(req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	cg := g.consumer
	resp.MemberID, resp.MemberEpoch = &req.MemberID, req.MemberEpoch
	var m *consumerMember
	if req.InstanceID == nil {
		m = cg.members[req.MemberID]
		if m == nil {
			resp.ErrorCode = kerr.UnknownMemberID.Code
			return resp
		}
	} else {
		id, ok := cg.static[*req.InstanceID]
		if !ok {
			resp.ErrorCode = kerr.UnknownMemberID.Code
			return resp
		}
		if id != req.MemberID {
			resp.ErrorCode = kerr.FencedInstanceID.Code
			return resp
		}
		m = cg.members[id]
	}
	if req.MemberEpoch == staticLeaveEpoch && m.instanceID != nil {
		g.c.logger.Info("static member temporarily left consumer group", "group", g.id, "member", m.id, "instance", *m.instanceID)
		g.releaseLocked(m)
		m.pendingRevocation = partitionSet{}
		m.prevEpoch, m.epoch = m.epoch, staticLeaveEpoch
		g.ownLocked(m)
		g.cancelLocked(&m.rebalanceTimer)
		return resp
	}
	g.c.logger.Info("member left consumer group", "group", g.id, "member", m.id)
	if g.maybeDowngradeLocked(m) {
		return resp
	}
	g.fenceConsumerMemberLocked(m)
	return resp
}

// consumerHeartbeatLocked joins, heartbeats and reconciles a member.
func (g *group) consumerHeartbeatLocked(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	c, cg := g.c, g.consumer
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = newUUID() // v0: the coordinator names the member
	}
	if len(cg.members) >= int(c.cfg.ConsumerMaxSize) && (req.MemberID == "" || cg.members[req.MemberID] == nil) {
		return fail(kerr.GroupMaxSizeReached.Code, "The consumer group has reached its maximum capacity.")
	}
	owned := ownedSet(req.Topics)

	// Find or create the member.
	var m, replaced *consumerMember
	isNew := false
	if req.InstanceID == nil {
		m = cg.members[memberID]
		if m == nil && req.MemberEpoch != joinEpoch {
			return fail(kerr.UnknownMemberID.Code, "Member "+memberID+" is not a member of group "+g.id+".")
		}
	} else {
		existing, ok := cg.static[*req.InstanceID]
		switch {
		case req.MemberEpoch == joinEpoch && (!ok || existing == memberID):
			m = cg.members[memberID]
		case req.MemberEpoch == joinEpoch:
			old := cg.members[existing]
			// A classic member's instance is taken over at once (a
			// rolling upgrade restarts it with the consumer protocol).
			if old.epoch != staticLeaveEpoch && old.classic == nil {
				return fail(kerr.UnreleasedInstanceID.Code, "Static member "+memberID+" with instance id "+*req.InstanceID+
					" cannot join the group because the instance id is owned by "+existing+" member.")
			}
			replaced = old
		case !ok:
			return fail(kerr.UnknownMemberID.Code, "Instance id "+*req.InstanceID+" is unknown.")
		case existing != memberID:
			return fail(kerr.FencedInstanceID.Code, "Static member "+memberID+" with instance id "+*req.InstanceID+
				" was fenced by member "+existing+".")
		default:
			m = cg.members[existing]
		}
	}
	if m != nil && replaced == nil {
		if code := checkMemberEpoch(m, req.MemberEpoch, owned); code != 0 {
			return fail(code, "The consumer group member has a member epoch ("+itoa(req.MemberEpoch)+
				") that does not match the one known by the group coordinator ("+itoa(m.epoch)+
				"). The member must abandon all its partitions and rejoin.")
		}
	}
	switch {
	case replaced != nil:
		m = g.replaceConsumerMemberLocked(replaced, memberID)
	case m == nil:
		isNew = true
		m = &consumerMember{id: memberID, assigned: partitionSet{}, pendingRevocation: partitionSet{}}
		cg.members[memberID] = m
		c.logger.Info("member joins consumer group", "group", g.id, "member", memberID, "client", cl.ID)
	}

	// 1. Take the member's (possibly changed) subscription.
	subscriptionChanged := isNew
	if req.InstanceID != nil {
		inst := *req.InstanceID
		m.instanceID = &inst
		cg.static[inst] = m.id
	}
	if req.RackID != nil {
		rack := *req.RackID
		m.rackID = &rack
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.names) {
			m.names = names
			subscriptionChanged = true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex = *req.SubscribedTopicRegex
		subscriptionChanged = true
	}
	m.clientID, m.clientHost = cl.ID, cl.Host
	if m.classic != nil {
		// It speaks the consumer protocol now (Kafka clears its classic
		// metadata).
		m.classic = nil
		g.cancelLocked(&m.joinTimer)
		g.cancelLocked(&m.syncTimer)
	}

	// 2. Bump the group epoch on subscription or topic metadata changes,
	// and compute a new target assignment for the new epoch.
	g.maybeBumpAndAssignLocked(subscriptionChanged, cl.MayDescribeTopic)

	// 3. Reconcile the member towards its target.
	before := m.assigned
	wasUnrevoked := m.state == memberUnrevoked
	prevPending := m.pendingRevocation
	g.reconcileLocked(m, owned)
	sessionTimeout, heartbeatInterval := c.consumerTimeouts(g.id)
	g.scheduleLocked(&m.sessionTimer, sessionTimeout, func() { g.expireConsumerMemberLocked(m, "session timeout") })
	if m.state == memberUnrevoked {
		if !wasUnrevoked || !prevPending.equal(m.pendingRevocation) || m.rebalanceTimer.t == nil {
			epoch := m.epoch
			g.scheduleLocked(&m.rebalanceTimer, time.Duration(m.rebalanceTimeout)*time.Millisecond, func() {
				if m.epoch == epoch && m.state == memberUnrevoked {
					g.expireConsumerMemberLocked(m, "rebalance timeout")
				}
			})
		}
	} else {
		g.cancelLocked(&m.rebalanceTimer)
	}

	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(heartbeatInterval.Milliseconds())
	full := req.MemberEpoch == joinEpoch || req.RebalanceTimeoutMillis != -1 &&
		(req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if full || !before.equal(m.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, t := range m.assigned.sortedTopics() {
			rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			rt.TopicID, rt.Partitions = t, sortedPartitions(m.assigned[t])
			a.Topics = append(a.Topics, rt)
		}
		resp.Assignment = &a
	}
	return resp
}

// maybeBumpAndAssignLocked bumps the group epoch on subscription or topic
// metadata changes and computes the target assignment of a new epoch.
func (g *group) maybeBumpAndAssignLocked(subscriptionChanged bool, mayDescribe func(string) bool) {
	c, cg := g.c, g.consumer
	bump := subscriptionChanged
	if v := c.metaVersion.Load(); bump || !cg.metaValid || cg.metaVersion != v {
		if g.refreshSubscriptionLocked(v, mayDescribe) {
			bump = true
		}
	}
	if bump {
		cg.epoch++
		c.logger.Info("bumped consumer group epoch", "group", g.id, "epoch", cg.epoch, "members", len(cg.members))
	}
	if cg.epoch > cg.assignmentEpoch {
		g.computeTargetLocked()
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// ownedSet converts the partitions a member reports; nil stays nil
// (unknown: the member did not say).
func ownedSet(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) partitionSet {
	if ts == nil {
		return nil
	}
	s := partitionSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			s.add(t.TopicID, p)
		}
	}
	return s
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid, with
// KAFKA-19233: epoch 0 always rejoins. A member one epoch behind whose
// owned partitions are a subset of its assignment lost a response and is
// accepted.
func checkMemberEpoch(m *consumerMember, epoch int32, owned partitionSet) int16 {
	if epoch == joinEpoch || epoch == m.epoch {
		return 0
	}
	if epoch > m.epoch {
		return kerr.FencedMemberEpoch.Code
	}
	if epoch != m.prevEpoch || owned == nil {
		return kerr.FencedMemberEpoch.Code
	}
	for t, ps := range owned {
		for p := range ps {
			if !m.assigned.has(t, p) {
				return kerr.FencedMemberEpoch.Code
			}
		}
	}
	return 0
}

// replaceConsumerMemberLocked hands a departed static member's state to the
// new member id of its instance, at epoch 0.
func (g *group) replaceConsumerMemberLocked(old *consumerMember, newID string) *consumerMember {
	cg := g.consumer
	g.releaseLocked(old)
	g.cancelConsumerTimersLocked(old)
	delete(cg.members, old.id)
	m := &consumerMember{
		id: newID, instanceID: old.instanceID, rackID: old.rackID, clientID: old.clientID, clientHost: old.clientHost,
		rebalanceTimeout: old.rebalanceTimeout, serverAssignor: old.serverAssignor, names: old.names, regex: old.regex,
		state: old.state, assigned: old.assigned, pendingRevocation: partitionSet{},
	}
	cg.members[newID] = m
	cg.static[*old.instanceID] = newID
	if t, ok := cg.target[old.id]; ok {
		cg.target[newID] = t
		delete(cg.target, old.id)
	}
	g.ownLocked(m)
	cg.dirty = true // the old member id's records are deleted
	g.c.logger.Info("static member rejoins consumer group with a new member id", "group", g.id,
		"instance", *old.instanceID, "old_member", old.id, "member", newID)
	return m
}

// releaseLocked drops the member's claim on its partitions.
func (g *group) releaseLocked(m *consumerMember) {
	cg := g.consumer
	for _, s := range []partitionSet{m.assigned, m.pendingRevocation} {
		for t, ps := range s {
			for p := range ps {
				tp := topicPartition{t, p}
				if cg.owner[tp] == m.id {
					delete(cg.owner, tp)
				}
			}
		}
	}
}

// ownLocked records the member as the owner of its partitions.
func (g *group) ownLocked(m *consumerMember) {
	cg := g.consumer
	for _, s := range []partitionSet{m.assigned, m.pendingRevocation} {
		for t, ps := range s {
			for p := range ps {
				cg.owner[topicPartition{t, p}] = m.id
			}
		}
	}
}

// expireConsumerMemberLocked fences a member whose session or rebalance
// timeout passed.
func (g *group) expireConsumerMemberLocked(m *consumerMember, why string) {
	if g.kind != kindConsumer || g.consumer.members[m.id] != m {
		return
	}
	g.c.logger.Info("fencing consumer group member", "group", g.id, "member", m.id, "reason", why)
	if g.maybeDowngradeLocked(m) {
		return
	}
	g.fenceConsumerMemberLocked(m)
	// A failed write is logged; the next change writes the difference.
	_ = g.persistConsumerLocked(nil)
}

// fenceConsumerMemberLocked removes a member and bumps the group epoch so
// its partitions are reassigned.
func (g *group) fenceConsumerMemberLocked(m *consumerMember) {
	cg := g.consumer
	g.removeConsumerMemberLocked(m)
	cg.metaValid = false // recompute the subscribed topics without this member
	cg.epoch++
	g.c.logger.Info("bumped consumer group epoch", "group", g.id, "epoch", cg.epoch, "members", len(cg.members))
}

// removeConsumerMemberLocked takes a member out of the group, its claims
// and timers with it.
func (g *group) removeConsumerMemberLocked(m *consumerMember) {
	cg := g.consumer
	g.releaseLocked(m)
	g.cancelConsumerTimersLocked(m)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
}

func (g *group) cancelConsumerTimersLocked(m *consumerMember) {
	g.cancelLocked(&m.sessionTimer)
	g.cancelLocked(&m.rebalanceTimer)
	g.cancelLocked(&m.joinTimer)
	g.cancelLocked(&m.syncTimer)
}

// refreshSubscriptionLocked recomputes the subscribed topics (names and
// regex matches that exist) and reports whether they changed. As Kafka's
// refreshRegularExpressions, every regex of the group is resolved with the
// authorization of the heartbeat that asks for the refresh: a matched topic
// that mayDescribe refuses is left out (nil: no authorizer, none is). The
// member is not told: it is simply not assigned that topic.
func (g *group) refreshSubscriptionLocked(version uint64, mayDescribe func(string) bool) bool {
	c, cg := g.c, g.consumer
	names := map[string]bool{}
	regexes := map[string]bool{}
	for _, m := range cg.members {
		for _, n := range m.names {
			names[n] = true
		}
		if m.regex != "" {
			regexes[m.regex] = true
		}
	}
	regexTopics := map[string][]string{}
	if len(regexes) > 0 {
		all := c.meta.Topics()
		for re := range regexes {
			rx, err := compileRegex(re)
			if err != nil {
				continue
			}
			var matched []string
			for _, t := range all {
				if rx.MatchString(t.Name) && (mayDescribe == nil || mayDescribe(t.Name)) {
					matched = append(matched, t.Name)
					names[t.Name] = true
				}
			}
			regexTopics[re] = matched
		}
	}
	subscribed := make(map[string]TopicMeta, len(names))
	for n := range names {
		if t, ok := c.meta.Topic(n); ok {
			subscribed[n] = t
		}
	}
	changed := len(subscribed) != len(cg.subscribed)
	if !changed {
		for n, t := range subscribed {
			if old, ok := cg.subscribed[n]; !ok || old != t {
				changed = true
				break
			}
		}
	}
	cg.subscribed, cg.regexTopics = subscribed, regexTopics
	cg.metaVersion, cg.metaValid = version, true
	return changed
}

// memberTopics is the set of topic ids a member's subscription resolves to.
func (cg *consumerGroup) memberTopics(m *consumerMember) map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, n := range m.names {
		if t, ok := cg.subscribed[n]; ok {
			out[t.ID] = true
		}
	}
	if m.regex != "" {
		for _, n := range cg.regexTopics[m.regex] {
			if t, ok := cg.subscribed[n]; ok {
				out[t.ID] = true
			}
		}
	}
	return out
}

// preferredAssignor is the assignor most members ask for, else the
// configured default (Kafka's computePreferredServerAssignor).
func (g *group) preferredAssignorLocked() string {
	votes := map[string]int{}
	for _, m := range g.consumer.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := g.c.cfg.ConsumerAssignors[0]
	bestVotes := 0
	for _, name := range g.c.cfg.ConsumerAssignors {
		if votes[name] > bestVotes {
			best, bestVotes = name, votes[name]
		}
	}
	return best
}

// computeTargetLocked runs the group's assignor for the current epoch.
func (g *group) computeTargetLocked() {
	cg := g.consumer
	spec := assignSpec{topics: map[[16]byte]int32{}, prev: cg.target}
	for _, t := range cg.subscribed {
		spec.topics[t.ID] = t.Partitions
	}
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		spec.members = append(spec.members, assignMember{id: id, topics: cg.memberTopics(cg.members[id])})
	}
	name := g.preferredAssignorLocked()
	assign := assignorByName(name)
	if assign == nil {
		name, assign = "uniform", assignUniform
	}
	cg.target = assign(spec)
	cg.assignor = name
	cg.assignmentEpoch = cg.epoch
	g.c.logger.Debug("computed target assignment", "group", g.id, "epoch", cg.epoch, "assignor", name, "members", len(ids))
}

// reconcileLocked moves a member towards its target assignment (Kafka's
// CurrentAssignmentBuilder): partitions leaving the member are revoked
// first, at the member's current epoch; only once the member no longer
// reports them does it move to the target epoch and get the partitions
// other members have released.
func (g *group) reconcileLocked(m *consumerMember, owned partitionSet) {
	cg := g.consumer
	switch m.state {
	case memberStable:
		if m.epoch == cg.assignmentEpoch {
			return
		}
	case memberUnrevoked:
		if ownsAny(owned, m.pendingRevocation) {
			return
		}
	}
	target := cg.target[m.id]
	assigned, pending, toAssign := partitionSet{}, partitionSet{}, partitionSet{}
	unreleased := false
	topics := map[[16]byte]bool{}
	for t := range target {
		topics[t] = true
	}
	for t := range m.assigned {
		topics[t] = true
	}
	for t := range topics {
		for p := range m.assigned[t] {
			if target.has(t, p) {
				assigned.add(t, p)
			} else {
				pending.add(t, p)
			}
		}
		for p := range target[t] {
			if assigned.has(t, p) {
				continue
			}
			if o, ok := cg.owner[topicPartition{t, p}]; ok && o != m.id {
				unreleased = true
				continue
			}
			toAssign.add(t, p)
		}
	}
	g.releaseLocked(m)
	switch {
	case len(pending) > 0 && ownsAny(owned, pending):
		m.state = memberUnrevoked
		m.prevEpoch = m.epoch
		m.assigned, m.pendingRevocation = assigned, pending
	default:
		for t, ps := range toAssign {
			for p := range ps {
				assigned.add(t, p)
			}
		}
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleased
		}
		m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
		m.assigned, m.pendingRevocation = assigned, partitionSet{}
	}
	g.ownLocked(m)
}

// ownsAny reports whether the member still reports any of the revoked
// partitions; not reporting at all (nil) counts as still owning them.
func ownsAny(owned, revoked partitionSet) bool {
	if owned == nil {
		return true
	}
	for t, ps := range owned {
		for p := range ps {
			if revoked.has(t, p) {
				return true
			}
		}
	}
	return false
}
