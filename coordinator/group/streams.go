package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams groups (KIP-1071): StreamsGroupHeartbeat joins, heartbeats,
// reconciles and leaves a Kafka Streams client's member (one per stream
// thread); the coordinator keeps the application's topology, configures it
// against the cluster's topics (streams_topology.go), assigns its tasks
// (streams_assignor.go) and moves each member to its target the way KIP-848
// moves consumers: an active task leaving a member is revoked first, at the
// member's epoch, and given to its new owner only once released.

// streamsMember is a member of a streams group.
type streamsMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	rebalanceTimeout int32 // ms
	topologyEpoch    int32
	processID        string
	endpoint         *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags       []kmsg.StreamsGroupHeartbeatRequestClientTag
	taskOffsets      []kmsg.TaskOffset
	taskEndOffsets   []kmsg.TaskOffset

	state            memberState
	epoch, prevEpoch int32
	assigned         tasksTuple
	pendingActive    taskSet    // active tasks revoked, not yet confirmed
	reported         tasksTuple // what the member last said it owns

	sessionTimer   groupTimer
	rebalanceTimer groupTimer
}

// streamsGroup is the state of a streams group (Kafka's StreamsGroup).
type streamsGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*streamsMember
	static          map[string]string // group.instance.id -> member id
	target          map[string]tasksTuple

	topology    *kmsg.StreamsGroupHeartbeatRequestTopology // nil until a member sends one
	configured  *configuredTopology
	metaVersion uint64
	metaValid   bool

	endpointEpoch int32
	numStandby    int32 // the standby replicas the target was computed with
	shutdown      bool  // a member asked every client to shut down

	// The topology description (KIP-1331, streams_description.go): what
	// the members pushed, the epochs the metadata record carries, and when
	// the coordinator may ask for it again.
	description *kmsg.StreamsGroupDescribeResponseGroupTopologyDescription
	descEpoch   int32 // the topology epoch description describes
	storedDesc  int32 // StoredDescriptionTopologyEpoch: -1 none, -2 uncertain
	failedDesc  int32 // FailedDescriptionTopologyEpoch: -1 none
	solicit     descBackoff

	// log is what the group's records in __consumer_offsets say; dirty
	// asks the next write to compare every member (a member id changed).
	log   *streamsLog
	dirty bool
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{members: map[string]*streamsMember{}, static: map[string]string{}, target: map[string]tasksTuple{},
		storedDesc: -1, failedDesc: -1}
}

// metadataValue is the group's StreamsGroupMetadata record.
func (sg *streamsGroup) metadataValue() sgMetadataValue {
	return sgMetadataValue{epoch: sg.epoch, storedDesc: sg.storedDesc, failedDesc: sg.failedDesc}
}

// stateName is Kafka's StreamsGroupState as a string.
func (sg *streamsGroup) stateName() string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case !sg.configured.ready():
		return "NotReady"
	case sg.epoch > sg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.state != memberStable || m.epoch != sg.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// readsTopic reports whether the group's topology reads or writes topic
// (its committed offsets then do not expire and OffsetDelete refuses them).
func (sg *streamsGroup) readsTopic(topic string) bool {
	if sg.topology == nil || len(sg.members) == 0 {
		return false
	}
	for _, st := range sg.topology.Subtopologies {
		if slices.Contains(st.SourceTopics, topic) {
			return true
		}
		for _, rt := range st.RepartitionSourceTopics {
			if rt.Topic == topic {
				return true
			}
		}
	}
	return false
}

// StreamsGroupHeartbeat (key 88), versions 0-1. Besides the response it
// returns the internal topics the group needs that do not exist yet, for
// the broker to create.
func (c *Coordinator) StreamsGroupHeartbeat(cl Client, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	fail := func(code int16, msg string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if !c.cfg.StreamsProtocol {
		return fail(kerr.UnsupportedVersion.Code, "")
	}
	if c.closed.Load() {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	if code, msg := validateStreamsHeartbeat(req); code != 0 {
		return fail(code, msg)
	}
	if c.cfg.IsShareGroup != nil && c.cfg.IsShareGroup(req.Group) {
		return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a streams group.")
	}
	leaving := req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch
	g, code := c.lockGroup(req.Group, req.MemberEpoch == joinEpoch)
	if code != 0 {
		return fail(code, "")
	}
	if g == nil {
		if leaving {
			return fail(kerr.UnknownMemberID.Code, "")
		}
		return fail(kerr.UnknownMemberID.Code, "Streams group "+req.Group+" is not known to this coordinator; rejoin.")
	}
	defer g.mu.Unlock()
	if g.kind != kindStreams {
		if req.MemberEpoch != joinEpoch || !g.isEmptyLocked() || g.kind == kindClassic && len(g.classic.pending) > 0 {
			return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a streams group.")
		}
		if err := g.convertToStreamsLocked(); err != nil {
			return fail(appendErrorCode(err), "")
		}
	}
	var missing []StreamsInternalTopic
	if leaving {
		resp = g.streamsLeaveLocked(req, resp)
	} else {
		resp, missing = g.streamsHeartbeatLocked(cl, req, resp)
	}
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	// The change is answered once its records are in the log, so a
	// coordinator taking over the partition knows what the member was told.
	if err := g.persistStreamsLocked(g.streams.members[req.MemberID]); err != nil {
		failed := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		failed.ErrorCode = appendErrorCode(err)
		return failed, nil
	}
	if !leaving {
		g.maybeRequireDescriptionLocked(req, resp)
	}
	return resp, missing
}

// validateStreamsHeartbeat is Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (int16, string) {
	invalid := kerr.InvalidRequest.Code
	switch {
	case req.MemberID == "":
		return invalid, "MemberId can't be empty."
	case req.Group == "":
		return invalid, "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return invalid, "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == joinEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid, "RebalanceTimeoutMs must be provided in first request."
		}
		if len(req.ActiveTasks) > 0 || len(req.StandbyTasks) > 0 || len(req.WarmupTasks) > 0 {
			return invalid, "ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining."
		}
		if req.Topology == nil {
			return invalid, "Topology must be non-null when (re-)joining."
		}
		if req.ProcessID == nil || *req.ProcessID == "" {
			return invalid, "ProcessId can't be empty."
		}
		if code, msg := validateTopology(req.Topology); code != 0 {
			return code, msg
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return invalid, "InstanceId can't be null."
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return invalid, "MemberEpoch is invalid."
	}
	if req.ProcessID != nil && *req.ProcessID == "" {
		return invalid, "ProcessId can't be empty."
	}
	return 0, ""
}

// Bounds on a topology, Strait's own: configuring one costs up to
// subtopologies x topic references per metadata change, so a member cannot
// make every heartbeat of its group expensive. Kafka Streams applications
// have tens of subtopologies.
const (
	maxSubtopologies       = 1000
	maxTopologyTopicRefers = 100000
)

// validateTopology is Kafka's StreamsGroupHeartbeatRequest topology check:
// unique subtopology ids, copartition indexes in range; and Strait's bounds.
func validateTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) (int16, string) {
	bad := kerr.StreamsInvalidTopology.Code
	if len(t.Subtopologies) > maxSubtopologies {
		return bad, "The topology has more than " + itoa(maxSubtopologies) + " subtopologies."
	}
	refs := 0
	for _, st := range t.Subtopologies {
		refs += len(st.SourceTopics) + len(st.SourceTopicRegex) + len(st.StateChangelogTopics) +
			len(st.RepartitionSinkTopics) + len(st.RepartitionSourceTopics)
	}
	if refs > maxTopologyTopicRefers {
		return bad, "The topology names more than " + itoa(maxTopologyTopicRefers) + " topics."
	}
	ids := map[string]bool{}
	for _, st := range t.Subtopologies {
		if ids[st.SubtopologyID] {
			return bad, "Duplicate subtopology id " + st.SubtopologyID + "."
		}
		ids[st.SubtopologyID] = true
		for _, cg := range st.CopartitionGroups {
			for _, i := range cg.SourceTopics {
				if int(i) < 0 || int(i) >= len(st.SourceTopics) {
					return bad, "Copartition group of subtopology " + st.SubtopologyID + " refers to a source topic that does not exist."
				}
			}
			for _, i := range cg.RepartitionSourceTopics {
				if int(i) < 0 || int(i) >= len(st.RepartitionSourceTopics) {
					return bad, "Copartition group of subtopology " + st.SubtopologyID + " refers to a repartition source topic that does not exist."
				}
			}
		}
	}
	return 0, ""
}

// convertToStreamsLocked turns an empty classic or consumer group into an
// empty streams group, keeping its offsets.
func (g *group) convertToStreamsLocked() error {
	var recs []record
	switch {
	case g.kind == kindConsumer:
		recs = g.consumerTombstonesLocked()
	case g.classic.hasRecord:
		recs = append(recs, groupTombstone(g.id))
	}
	if err := g.appendRecords(recs); err != nil {
		return err
	}
	g.shutdownMembersLocked(kerr.RebalanceInProgress.Code)
	g.classic.init(g.c.now())
	g.kind = kindStreams
	g.consumer = nil
	g.streams = newStreamsGroup()
	return nil
}

// streamsLeaveLocked handles member epoch -1 (leave: its tasks are
// reassigned) and -2 (a static member leaving for now: it keeps its tasks
// until its session expires or its instance rejoins).
func (g *group) streamsLeaveLocked(req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) *kmsg.StreamsGroupHeartbeatResponse {
	sg := g.streams
	resp.MemberID, resp.MemberEpoch = req.MemberID, req.MemberEpoch
	var m *streamsMember
	if req.InstanceID == nil {
		m = sg.members[req.MemberID]
	} else {
		id, ok := sg.static[*req.InstanceID]
		if ok && id != req.MemberID {
			resp.ErrorCode = kerr.FencedInstanceID.Code
			return resp
		}
		m = sg.members[id]
	}
	if m == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	if req.MemberEpoch == staticLeaveEpoch && m.instanceID != nil {
		g.c.logger.Info("static member temporarily left streams group", "group", g.id, "member", m.id, "instance", *m.instanceID)
		m.pendingActive = taskSet{}
		m.prevEpoch, m.epoch = m.epoch, staticLeaveEpoch
		g.cancelLocked(&m.rebalanceTimer)
		return resp
	}
	g.c.logger.Info("member left streams group", "group", g.id, "member", m.id)
	g.removeStreamsMemberLocked(m)
	return resp
}

// findStreamsMemberLocked is the member a heartbeat is from, after Kafka's
// static membership rules: an instance id rejoining (epoch 0) under a new
// member id takes over its departed (epoch -2) predecessor's state; one
// still in use is UNRELEASED_INSTANCE_ID; a member id that does not own
// its instance id is fenced. A nil member with no error is a new member.
func (g *group) findStreamsMemberLocked(req *kmsg.StreamsGroupHeartbeatRequest) (*streamsMember, int16, string) {
	sg := g.streams
	if req.InstanceID == nil {
		m := sg.members[req.MemberID]
		if m == nil && req.MemberEpoch != joinEpoch {
			return nil, kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + g.id + "."
		}
		return m, 0, ""
	}
	inst := *req.InstanceID
	existing, ok := sg.static[inst]
	switch {
	case req.MemberEpoch == joinEpoch && (!ok || existing == req.MemberID):
		return sg.members[req.MemberID], 0, ""
	case req.MemberEpoch == joinEpoch:
		old := sg.members[existing]
		if old.epoch != staticLeaveEpoch {
			return nil, kerr.UnreleasedInstanceID.Code, "Static member " + req.MemberID + " with instance id " + inst +
				" cannot join the group because the instance id is owned by " + existing + " member."
		}
		return g.replaceStreamsMemberLocked(old, req.MemberID), 0, ""
	case !ok:
		return nil, kerr.UnknownMemberID.Code, "Instance id " + inst + " is unknown."
	case existing != req.MemberID:
		return nil, kerr.FencedInstanceID.Code, "Static member " + req.MemberID + " with instance id " + inst +
			" was fenced by member " + existing + "."
	}
	return sg.members[existing], 0, ""
}

// replaceStreamsMemberLocked hands a departed static member's tasks to the
// new member id of its instance, at epoch 0.
func (g *group) replaceStreamsMemberLocked(old *streamsMember, newID string) *streamsMember {
	sg := g.streams
	g.cancelLocked(&old.sessionTimer)
	g.cancelLocked(&old.rebalanceTimer)
	delete(sg.members, old.id)
	m := &streamsMember{
		id: newID, instanceID: old.instanceID, rackID: old.rackID, clientID: old.clientID, clientHost: old.clientHost,
		rebalanceTimeout: old.rebalanceTimeout, topologyEpoch: old.topologyEpoch, processID: old.processID,
		endpoint: old.endpoint, clientTags: old.clientTags,
		state: old.state, assigned: old.assigned, pendingActive: taskSet{}, reported: emptyTasks(),
	}
	sg.members[newID] = m
	sg.static[*old.instanceID] = newID
	if t, ok := sg.target[old.id]; ok {
		sg.target[newID] = t
		delete(sg.target, old.id)
	}
	sg.dirty = true // the old member id's records are deleted
	g.c.logger.Info("static member rejoins streams group with a new member id", "group", g.id,
		"instance", *old.instanceID, "old_member", old.id, "member", newID)
	return m
}

// streamsHeartbeatLocked joins, heartbeats and reconciles a member.
func (g *group) streamsHeartbeatLocked(cl Client, req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
	c, sg := g.c, g.streams
	fail := func(code int16, msg string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	settings := c.streamsSettings(g.id)
	m, code, msg := g.findStreamsMemberLocked(req)
	if code != 0 {
		return fail(code, msg)
	}
	if m == nil && len(sg.members) >= int(settings.MaxSize) {
		return fail(kerr.GroupMaxSizeReached.Code, "The streams group has reached its maximum capacity of "+itoa(settings.MaxSize)+" members.")
	}
	if m != nil {
		if code := checkStreamsMemberEpoch(m, req); code != 0 {
			return fail(code, "The streams group member has a member epoch ("+itoa(req.MemberEpoch)+
				") that does not match the one known by the group coordinator ("+itoa(m.epoch)+
				"). The member must abandon all its tasks and rejoin.")
		}
	}
	bump := false
	isNew := m == nil
	if isNew {
		m = &streamsMember{id: req.MemberID, assigned: emptyTasks(), pendingActive: taskSet{}, reported: emptyTasks()}
		sg.members[m.id] = m
		bump = true
		c.logger.Info("member joins streams group", "group", g.id, "member", m.id, "client", cl.ID)
	}

	// 1. The member's (possibly changed) metadata, and the topology.
	if req.Topology != nil {
		m.topologyEpoch = req.Topology.Epoch
		if sg.topology == nil || req.Topology.Epoch > sg.topology.Epoch && onlyMember(sg, m) {
			t := *req.Topology
			sg.topology = &t
			sg.metaValid = false
			bump = true
		}
	}
	if req.InstanceID != nil {
		s := *req.InstanceID
		m.instanceID = &s
		sg.static[s] = m.id
	}
	if req.RackID != nil {
		s := *req.RackID
		m.rackID = &s
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = req.RebalanceTimeoutMillis
	}
	if req.ProcessID != nil && *req.ProcessID != m.processID {
		m.processID = *req.ProcessID
		bump = bump || !isNew
	}
	if req.UserEndpoint != nil {
		e := *req.UserEndpoint
		m.endpoint = &e
	}
	if req.ClientTags != nil {
		m.clientTags = slices.Clone(req.ClientTags)
	}
	if req.TaskOffsets != nil {
		m.taskOffsets = slices.Clone(req.TaskOffsets)
	}
	if req.TaskEndOffsets != nil {
		m.taskEndOffsets = slices.Clone(req.TaskEndOffsets)
	}
	if req.ActiveTasks != nil {
		m.reported.active = taskSetOf(req.ActiveTasks)
	}
	if req.StandbyTasks != nil {
		m.reported.standby = taskSetOf(req.StandbyTasks)
	}
	if req.WarmupTasks != nil {
		m.reported.warmup = taskSetOf(req.WarmupTasks)
	}
	if req.ShutdownApplication && !sg.shutdown {
		sg.shutdown = true
		c.logger.Info("a streams group member asked the application to shut down", "group", g.id, "member", m.id)
	}
	m.clientID, m.clientHost = cl.ID, cl.Host

	// 2. Configure the topology against the current topics; a change in
	// what it yields bumps the group epoch.
	var created []StreamsInternalTopic
	if v := c.metaVersion.Load(); sg.topology != nil && (!sg.metaValid || sg.metaVersion != v) {
		next := configureTopology(sg.topology, c.meta)
		if sg.configured == nil || !next.equal(sg.configured) {
			bump = true
		}
		sg.configured, sg.metaVersion, sg.metaValid = next, v, true
	}
	if sg.configured != nil {
		created = sg.configured.missing
	}
	if bump {
		sg.epoch++
		c.logger.Info("bumped streams group epoch", "group", g.id, "epoch", sg.epoch, "members", len(sg.members))
	}
	if sg.epoch > sg.assignmentEpoch || sg.numStandby != settings.NumStandby {
		g.computeStreamsTargetLocked(settings.NumStandby)
	}

	// 3. Reconcile the member towards its target.
	before := m.assigned.clone()
	wasUnrevoked := m.state == memberUnrevoked
	g.reconcileStreamsLocked(m)
	if !before.equal(m.assigned) {
		// Who serves which partitions changed: clients with endpoints
		// (Interactive Queries) learn it at their next heartbeat.
		sg.endpointEpoch++
	}
	g.scheduleLocked(&m.sessionTimer, settings.Session, func() { g.expireStreamsMemberLocked(m, "session timeout") })
	if m.state == memberUnrevoked {
		if !wasUnrevoked || m.rebalanceTimer.t == nil {
			epoch := m.epoch
			g.scheduleLocked(&m.rebalanceTimer, time.Duration(m.rebalanceTimeout)*time.Millisecond, func() {
				if m.epoch == epoch && m.state == memberUnrevoked {
					g.expireStreamsMemberLocked(m, "rebalance timeout")
				}
			})
		}
	} else {
		g.cancelLocked(&m.rebalanceTimer)
	}

	resp.MemberID = m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(settings.Heartbeat.Milliseconds())
	resp.AcceptableRecoveryLagLegacy = int32(min(settings.AcceptableRecoveryLag, 1<<31-1))
	resp.AcceptableRecoveryLag = settings.AcceptableRecoveryLag
	resp.TaskOffsetIntervalMillis = int32(settings.TaskOffsetInterval.Milliseconds())
	resp.Status = g.streamsStatusLocked(m)
	if req.MemberEpoch == joinEpoch || !before.equal(m.assigned) {
		resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks = m.assigned.active.wire(), m.assigned.standby.wire(), m.assigned.warmup.wire()
	}
	resp.EndpointInformationEpoch = sg.endpointEpoch
	// Not "behind" but "different": the epoch is not written to the log,
	// so after a coordinator move it starts again from 0.
	if req.EndpointInformationEpoch != sg.endpointEpoch && m.endpoint != nil {
		resp.PartitionsByUserEndpoint = g.streamsEndpointsLocked()
	}
	return resp, created
}

// onlyMember reports whether m is the group's only member, when its topology
// may replace the group's.
func onlyMember(sg *streamsGroup, m *streamsMember) bool {
	return len(sg.members) == 1 && sg.members[m.id] == m
}

// streamsStatusLocked is the status list of a heartbeat's answer.
func (g *group) streamsStatusLocked(m *streamsMember) []kmsg.StreamsGroupHeartbeatResponseStatus {
	sg := g.streams
	out := []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if sg.shutdown {
		out = append(out, streamsStatus(statusShutdownApplication,
			"A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application."))
	}
	if sg.topology != nil && m.topologyEpoch < sg.topology.Epoch {
		out = append(out, streamsStatus(statusStaleTopology,
			"The member's topology epoch "+itoa(m.topologyEpoch)+" is behind the group's topology epoch "+itoa(sg.topology.Epoch)+"."))
	}
	if sg.configured != nil {
		out = append(out, sg.configured.status...)
	}
	return out
}

// checkStreamsMemberEpoch is Kafka's throwIfStreamsGroupMemberEpochIsInvalid:
// epoch 0 rejoins; a member one epoch behind whose reported active tasks
// are a subset of its assignment lost a response and is accepted.
func checkStreamsMemberEpoch(m *streamsMember, req *kmsg.StreamsGroupHeartbeatRequest) int16 {
	epoch := req.MemberEpoch
	if epoch == joinEpoch || epoch == m.epoch {
		return 0
	}
	if epoch > m.epoch || epoch != m.prevEpoch || req.ActiveTasks == nil {
		return kerr.FencedMemberEpoch.Code
	}
	for t := range taskSetOf(req.ActiveTasks) {
		if !m.assigned.active.has(t) {
			return kerr.FencedMemberEpoch.Code
		}
	}
	return 0
}

// computeStreamsTargetLocked runs the assignor for the current epoch.
func (g *group) computeStreamsTargetLocked(numStandby int32) {
	sg := g.streams
	spec := streamsAssignSpec{numStandby: int(numStandby)}
	if sg.configured.ready() {
		spec.tasks = sg.configured.tasks
		spec.stateful = map[string]bool{}
		for _, st := range sg.topology.Subtopologies {
			spec.stateful[st.SubtopologyID] = len(st.StateChangelogTopics) > 0
		}
	}
	for _, m := range sg.members {
		prev, ok := sg.target[m.id]
		if !ok {
			prev = m.assigned
		}
		spec.members = append(spec.members, streamsAssignMember{id: m.id, process: m.processID, prev: prev})
	}
	sg.target = assignStreamsTasks(spec)
	sg.assignmentEpoch = sg.epoch
	sg.numStandby = numStandby
	g.c.logger.Debug("computed streams target assignment", "group", g.id, "epoch", sg.epoch, "members", len(sg.members))
}

// reconcileStreamsLocked moves a member towards its target (Kafka's streams
// CurrentAssignmentBuilder): active tasks leaving the member are revoked
// first, at its current epoch; only once it no longer reports them does it
// move to the target epoch. An active task still owned by another member,
// and a standby or warm-up task whose active copy a member of the same
// process still owns, is held back (unreleased) until given up.
func (g *group) reconcileStreamsLocked(m *streamsMember) {
	sg := g.streams
	switch m.state {
	case memberStable:
		if m.epoch == sg.assignmentEpoch {
			return
		}
	case memberUnrevoked:
		if ownsAnyTask(m.reported.active, m.pendingActive) {
			return
		}
	}
	target, ok := sg.target[m.id]
	if !ok {
		target = emptyTasks()
	}
	// Who owns which active task now, besides m.
	activeOwner := map[taskID]*streamsMember{}
	for _, o := range sg.members {
		if o == m {
			continue
		}
		for t := range o.assigned.active {
			activeOwner[t] = o
		}
		for t := range o.pendingActive {
			activeOwner[t] = o
		}
	}
	next := emptyTasks()
	revoked := taskSet{}
	unreleased := false
	for t := range m.assigned.active {
		if target.active.has(t) {
			next.active.add(t)
		} else {
			revoked.add(t)
		}
	}
	for t := range target.active {
		if next.active.has(t) {
			continue
		}
		if activeOwner[t] != nil {
			unreleased = true
			continue
		}
		next.active.add(t)
	}
	for _, kind := range []struct{ target, next taskSet }{{target.standby, next.standby}, {target.warmup, next.warmup}} {
		for t := range kind.target {
			o := activeOwner[t]
			if o != nil && o.processID == m.processID || revoked.has(t) {
				unreleased = true
				continue
			}
			kind.next.add(t)
		}
	}
	if len(revoked) > 0 && ownsAnyTask(m.reported.active, revoked) {
		// Keep what stays, drop the standby and warm-up tasks that go, and
		// wait for the member to give up the revoked active tasks.
		m.state = memberUnrevoked
		m.prevEpoch = m.epoch
		keep := emptyTasks()
		keep.active = next.active
		for t := range m.assigned.standby {
			if next.standby.has(t) {
				keep.standby.add(t)
			}
		}
		for t := range m.assigned.warmup {
			if next.warmup.has(t) {
				keep.warmup.add(t)
			}
		}
		for t := range next.active {
			if !m.assigned.active.has(t) {
				delete(keep.active, t) // new ones come with the target epoch
			}
		}
		m.assigned, m.pendingActive = keep, revoked
		return
	}
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleased
	}
	m.prevEpoch, m.epoch = m.epoch, sg.assignmentEpoch
	m.assigned, m.pendingActive = next, taskSet{}
}

// ownsAnyTask reports whether the reported tasks include any revoked one.
func ownsAnyTask(reported, revoked taskSet) bool {
	for t := range revoked {
		if reported.has(t) {
			return true
		}
	}
	return false
}

// expireStreamsMemberLocked fences a member whose session or rebalance
// timeout passed.
func (g *group) expireStreamsMemberLocked(m *streamsMember, why string) {
	if g.kind != kindStreams || g.streams.members[m.id] != m {
		return
	}
	g.c.logger.Info("fencing streams group member", "group", g.id, "member", m.id, "reason", why)
	g.removeStreamsMemberLocked(m)
	// A failed write is logged; the next change writes the difference.
	_ = g.persistStreamsLocked(nil)
}

// removeStreamsMemberLocked removes a member and bumps the group epoch so
// its tasks are reassigned.
func (g *group) removeStreamsMemberLocked(m *streamsMember) {
	sg := g.streams
	g.cancelLocked(&m.sessionTimer)
	g.cancelLocked(&m.rebalanceTimer)
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	if m.instanceID != nil && sg.static[*m.instanceID] == m.id {
		delete(sg.static, *m.instanceID)
	}
	sg.endpointEpoch++
	if len(sg.members) == 0 {
		sg.shutdown = false
	}
	sg.epoch++
	g.c.logger.Info("bumped streams group epoch", "group", g.id, "epoch", sg.epoch, "members", len(sg.members))
}

// streamsEndpointsLocked maps each member's user endpoint to the partitions
// of its current active and standby tasks (Kafka's EndpointToPartitionsManager).
func (g *group) streamsEndpointsLocked() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	sg := g.streams
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if !sg.configured.ready() {
		return out
	}
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	partitionsOf := func(s taskSet) map[string][]int32 {
		byTopic := map[string][]int32{}
		for _, t := range s.sorted() {
			for _, topic := range sg.configured.sources[t.sub] {
				byTopic[topic] = append(byTopic[topic], t.part)
			}
		}
		return byTopic
	}
	for _, id := range ids {
		m := sg.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.endpoint.Host, m.endpoint.Port
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		active := partitionsOf(m.assigned.active)
		for _, topic := range sortedKeys(active) {
			p := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition()
			p.Topic, p.Partitions = topic, active[topic]
			e.ActivePartitions = append(e.ActivePartitions, p)
		}
		standby := partitionsOf(m.assigned.standby)
		for _, topic := range sortedKeys(standby) {
			p := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition()
			p.Topic, p.Partitions = topic, standby[topic]
			e.StandbyPartitions = append(e.StandbyPartitions, p)
		}
		out = append(out, e)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
