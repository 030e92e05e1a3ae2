// Package share owns share groups (KIP-932, Queues for Kafka) as Apache
// Kafka 4.4 serves them: the groups' membership and assignment
// (ShareGroupHeartbeat, ShareGroupDescribe, with Kafka's simple assignor),
// the share sessions of ShareFetch and ShareAcknowledge, and the
// share-partition state machine (available, acquired, acknowledged,
// archived) with its acquisition locks, delivery count limit and in-flight
// window. The broker reads the log and calls in; this package does no I/O.
//
// The share-partitions' state (start offset, in-flight batches, delivery
// counts) is persisted in __share_group_state (state.go has its records;
// the broker appends and reads them), so it survives a leader or
// coordinator move. The groups' membership (epochs, subscriptions, target
// and current assignments) is persisted in __consumer_offsets with Kafka's
// ShareGroup* records (records.go, persist.go) through Config.Append, and
// loaded by the coordinator that takes the partition over (Load), so members
// keep their epochs and assignments across a coordinator move.
package share

import (
	"crypto/rand"
	"encoding/hex"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config holds the broker settings share groups use, under Kafka's names.
type Config struct {
	SessionTimeout    time.Duration // group.share.session.timeout.ms (45 s)
	HeartbeatInterval time.Duration // group.share.heartbeat.interval.ms (5 s)
	MaxSize           int           // group.share.max.size (200)
	LockDuration      time.Duration // group.share.record.lock.duration.ms (30 s)
	DeliveryLimit     int16         // group.share.delivery.count.limit (5)
	MaxRecordLocks    int           // group.share.partition.max.record.locks (2000)
	MaxShareSessions  int           // group.share.max.share.sessions (2000)
	MinLockDuration   time.Duration // group.share.min.record.lock.duration.ms
	MaxLockDuration   time.Duration // group.share.max.record.lock.duration.ms
	// MaxGroups bounds the share groups a broker keeps state for in memory
	// (members, sessions or share-partitions). Kafka 4.4 has no such
	// setting; without a bound any client naming new group ids would grow
	// the memory for ever (the persisted state is on disk). At the bound, groups with no member and no
	// session for EmptyGroupRetention are forgotten to make room; if none
	// is, a new group is refused with GROUP_MAX_SIZE_REACHED.
	MaxGroups int // 1000
	// EmptyGroupRetention is how long a group keeps its state here with no
	// member and no share session (default: the session timeout).
	EmptyGroupRetention time.Duration

	// PartitionExists reports whether a topic partition exists in the
	// cluster; a share session keeps only those (so a request naming
	// made-up partitions cannot grow it). Nil: every partition.
	PartitionExists func(TopicPartition) bool

	// Owns answers 0 when this broker coordinates the group, else the error
	// code (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
	Owns func(groupID string) int16
	// GroupConfigs returns the group's configs (share.* keys), or nil.
	GroupConfigs func(groupID string) map[string]string
	// Topic returns a topic's ID and partition count by name.
	Topic func(name string) (id [16]byte, partitions int32, ok bool)

	// Released is told of a share-partition whose records a member's
	// leaving released (called with the coordinator's lock held, so it
	// must not block: the broker writes the state on a goroutine).
	Released func(groupID string, tp TopicPartition, p *Partition)

	// Append writes a group's ShareGroup* records to its __consumer_offsets
	// partition and returns once they are durable; an error unwrapping to a
	// *kerr.Error is the code the request answers. Nil keeps membership in
	// memory only.
	Append func(groupID string, recs []Record) error
	// Expired is told of a group whose members' sessions expired outside
	// a heartbeat of it (called with the coordinator's lock held, so it
	// must not block): the broker calls Flush on a goroutine, which writes
	// the expired members' tombstones as Kafka writes them at expiry.
	Expired func(groupID string)
	// TopicName resolves a topic id, for loading assignments.
	TopicName func(id [16]byte) (string, bool)
	// PartitionOf is a group's __consumer_offsets partition: Load replaces
	// the groups of the partition it loads.
	PartitionOf func(groupID string) int32
	// InitializeState initializes the state of a group's new
	// share-partitions at their share coordinators
	// (InitializeShareGroupState, state epoch the group epoch) and returns
	// those that succeeded. Nil: every partition succeeds at once.
	InitializeState func(groupID string, groupEpoch int32, topics []InitTopic) map[[16]byte][]int32

	Logger *slog.Logger
	Now    func() time.Time
}

// DefaultConfig returns Kafka 4.4's defaults.
func DefaultConfig() Config {
	return Config{
		SessionTimeout:    45 * time.Second,
		HeartbeatInterval: 5 * time.Second,
		MaxSize:           200,
		LockDuration:      30 * time.Second,
		DeliveryLimit:     5,
		MaxRecordLocks:    2000,
		MaxShareSessions:  2000,
		MinLockDuration:   15 * time.Second,
		MaxLockDuration:   60 * time.Second,
		MaxGroups:         1000,
	}
}

// Client is what a request says of its sender.
type Client struct {
	ID, Host string
}

type member struct {
	id, clientID, host string
	rack               *string
	epoch, prevEpoch   int32
	topics             []string
	assigned           map[string][]int32 // topic -> partitions, at epoch
	target             map[string][]int32 // at the group's assignment epoch
	lastSeen           time.Time
}

type group struct {
	id    string
	epoch int32
	// assignEpoch is the group epoch the members' targets were computed at.
	assignEpoch int32
	members     map[string]*member
	// metaHash is the subscribed topics' partition counts when the group
	// epoch last moved; a change bumps the epoch (new assignment).
	metaHash uint64
	// log is what the group's records in __consumer_offsets say (persist.go).
	log *groupLog
	// spm is the share-partitions the group initialized (initstate.go);
	// nil until the first.
	spm *spMeta
}

type partKey struct {
	group string
	topic [16]byte
	part  int32
}

// Coordinator is the broker's share groups, sessions and share-partitions.
type Coordinator struct {
	cfg Config

	mu       sync.Mutex
	groups   map[string]*group
	sessions map[sessionKey]*Session
	parts    map[partKey]*Partition
	// known is every group with state here (c.groups, c.sessions or
	// c.parts) and when it was last used: at most cfg.MaxGroups.
	known map[string]time.Time
	// wlocks serializes each group's record writes (persist.go).
	wlocks writeLocks
}

// New returns a coordinator with cfg.
func New(cfg Config) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Owns == nil {
		cfg.Owns = func(string) int16 { return 0 }
	}
	if cfg.GroupConfigs == nil {
		cfg.GroupConfigs = func(string) map[string]string { return nil }
	}
	if cfg.MaxGroups <= 0 {
		cfg.MaxGroups = DefaultConfig().MaxGroups
	}
	if cfg.EmptyGroupRetention <= 0 {
		cfg.EmptyGroupRetention = cfg.SessionTimeout
	}
	if cfg.PartitionExists == nil {
		cfg.PartitionExists = func(TopicPartition) bool { return true }
	}
	return &Coordinator{cfg: cfg, groups: map[string]*group{}, sessions: map[sessionKey]*Session{}, parts: map[partKey]*Partition{}, known: map[string]time.Time{}}
}

func newMemberID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func errMsg(e *kerr.Error, msg string) (int16, *string) {
	if msg == "" {
		return e.Code, nil
	}
	return e.Code, &msg
}

// expireLocked removes members whose session timed out, bumping the
// group epoch and releasing their records. c.mu held.
func (c *Coordinator) expireLocked(g *group, now time.Time) {
	timeout := c.groupDuration(g.id, "share.session.timeout.ms", c.cfg.SessionTimeout)
	expired := false
	for id, m := range g.members {
		if now.Sub(m.lastSeen) > timeout {
			delete(g.members, id)
			g.epoch++
			c.releaseMemberLocked(g.id, id)
			expired = true
		}
	}
	if expired && c.cfg.Expired != nil && c.cfg.Append != nil {
		c.cfg.Expired(g.id)
	}
}

// IsShareGroup reports whether groupID is a share group here.
func (c *Coordinator) IsShareGroup(groupID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.groups[groupID]
	return ok
}

// Heartbeat answers ShareGroupHeartbeat (key 76) as Kafka's
// GroupMetadataManager.shareGroupHeartbeat: epoch 0 joins (the client
// names its member id), -1 leaves, anything else must be the member's
// current epoch. A member whose epoch is behind the group's gets the new
// assignment and epoch at once (share groups revoke nothing).
// otherGroup reports a consumer or classic group of that id.
// The group's changed records are written before the answer, as Kafka
// answers once they are committed; a failed write answers its error.
func (c *Coordinator) Heartbeat(cl Client, req *kmsg.ShareGroupHeartbeatRequest, otherGroup bool) *kmsg.ShareGroupHeartbeatResponse {
	if c.cfg.Append != nil {
		wl := c.wlocks.of(req.GroupID)
		wl.Lock()
		defer wl.Unlock()
	}
	resp, write := c.heartbeat(cl, req, otherGroup)
	if write != nil {
		if err := write(); err != nil {
			failed := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			failed.ErrorCode = appendErrorCode(err)
			return failed
		}
	}
	if resp.ErrorCode == 0 && req.MemberEpoch != -1 {
		c.initializeNew(req.GroupID)
	}
	return resp
}

func (c *Coordinator) heartbeat(cl Client, req *kmsg.ShareGroupHeartbeatRequest, otherGroup bool) (*kmsg.ShareGroupHeartbeatResponse, func() error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(e *kerr.Error, msg string) (*kmsg.ShareGroupHeartbeatResponse, func() error) {
		resp.ErrorCode, resp.ErrorMessage = errMsg(e, msg)
		return resp, nil
	}
	switch {
	case req.GroupID == "":
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.MemberID == "":
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	case req.MemberEpoch < -1:
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
	case req.RackID != nil && strings.TrimSpace(*req.RackID) == "":
		return fail(kerr.InvalidRequest, "RackId can't be empty.")
	}
	if code := c.cfg.Owns(req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if otherGroup {
		return fail(kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
	}
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.GroupID]
	if req.MemberEpoch == -1 {
		// Kafka's shareGroupLeave: the group and the member must exist.
		if g == nil {
			return fail(kerr.GroupIDNotFound, "Group "+req.GroupID+" not found.")
		}
		if _, ok := g.members[req.MemberID]; !ok {
			return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
		}
		delete(g.members, req.MemberID)
		g.epoch++
		c.releaseMemberLocked(g.id, req.MemberID)
		resp.MemberID, resp.MemberEpoch = &req.MemberID, -1
		return resp, c.changesLocked(g)
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
		}
		if !c.admitLocked(req.GroupID, now) {
			return fail(kerr.GroupMaxSizeReached, "The maximum number of share groups ("+itoa(c.cfg.MaxGroups)+") has been reached.")
		}
		g = &group{id: req.GroupID, members: map[string]*member{}}
		c.groups[req.GroupID] = g
	}
	c.known[req.GroupID] = now
	c.expireLocked(g, now)
	m := g.members[req.MemberID]
	changed := false // the group epoch moves once per heartbeat that changes it
	switch {
	case m == nil && req.MemberEpoch != 0:
		return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
	case m == nil:
		if len(g.members) >= c.cfg.MaxSize {
			return fail(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of "+itoa(c.cfg.MaxSize)+" members.")
		}
		m = &member{id: req.MemberID}
		g.members[req.MemberID] = m
		changed = true
	case req.MemberEpoch != 0 && req.MemberEpoch != m.epoch:
		return fail(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch ("+itoa(int(req.MemberEpoch))+") than the one known by the group coordinator ("+itoa(int(m.epoch))+"). The member must abandon all its partitions and rejoin.")
	}
	m.lastSeen, m.clientID, m.host = now, cl.ID, cl.Host
	if req.RackID != nil {
		m.rack = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		subs := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.topics) {
			m.topics = subs
			changed = true
		}
	}
	if h := c.metaHashLocked(g); h != g.metaHash {
		g.metaHash = h
		changed = true
	}
	if changed {
		g.epoch++
	}
	if g.assignEpoch != g.epoch {
		c.assignLocked(g)
	}
	sendAssignment := req.MemberEpoch == 0
	if m.epoch != g.assignEpoch {
		// Share groups revoke nothing: the member moves at once.
		m.assigned, m.prevEpoch, m.epoch = m.target, m.epoch, g.assignEpoch
		sendAssignment = true
	}
	resp.MemberID, resp.MemberEpoch = &req.MemberID, m.epoch
	resp.HeartbeatIntervalMillis = int32(c.groupDuration(g.id, "share.heartbeat.interval.ms", c.cfg.HeartbeatInterval) / time.Millisecond)
	if sendAssignment {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, t := range slices.Sorted(maps.Keys(m.assigned)) {
			id, _, ok := c.cfg.Topic(t)
			if !ok {
				continue
			}
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, slices.Clone(m.assigned[t])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	c.markNewLocked(g)
	return resp, c.changesLocked(g)
}

func itoa(n int) string { return strconv.Itoa(n) }

// metaHashLocked hashes the partition counts of every subscribed topic.
func (c *Coordinator) metaHashLocked(g *group) uint64 {
	topics := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.topics {
			topics[t] = true
		}
	}
	h := fnv.New64a()
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		_, n, ok := c.cfg.Topic(t)
		if !ok {
			n = -1
		}
		h.Write([]byte(t))
		h.Write([]byte{0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
	return h.Sum64()
}

// assignLocked computes every member's target assignment with the simple
// assignor at the group epoch; each member takes it at its next heartbeat. As Kafka's
// SimpleAssignor, per topic: with at least as many subscribers as
// partitions, every subscriber gets one partition (a partition shared by
// several members); with fewer, the partitions are spread round-robin, so
// every partition has exactly one member.
func (c *Coordinator) assignLocked(g *group) {
	subscribers := map[string][]string{}
	for _, m := range g.members {
		m.target = map[string][]int32{}
		for _, t := range m.topics {
			subscribers[t] = append(subscribers[t], m.id)
		}
	}
	for t, ms := range subscribers {
		_, n, ok := c.cfg.Topic(t)
		if !ok || n <= 0 {
			continue
		}
		sort.Strings(ms)
		if len(ms) >= int(n) {
			for i, id := range ms {
				m := g.members[id]
				m.target[t] = append(m.target[t], int32(i%int(n)))
			}
			continue
		}
		for p := int32(0); p < n; p++ {
			m := g.members[ms[int(p)%len(ms)]]
			m.target[t] = append(m.target[t], p)
		}
	}
	g.assignEpoch = g.epoch
}

func (g *group) state() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// Describe answers ShareGroupDescribe (key 77).
func (c *Coordinator) Describe(req *kmsg.ShareGroupDescribeRequest, authorizedOps func(groupID string) int32) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	now := c.cfg.Now()
	for _, id := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = id
		if code := c.cfg.Owns(id); code != 0 {
			dg.ErrorCode = code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		c.mu.Lock()
		g := c.groups[id]
		if g == nil {
			c.mu.Unlock()
			dg.ErrorCode, dg.ErrorMessage = errMsg(kerr.GroupIDNotFound, "Group "+id+" not found.")
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		c.expireLocked(g, now)
		dg.GroupState, dg.GroupEpoch, dg.AssignmentEpoch, dg.Assignor = g.state(), g.epoch, g.assignEpoch, "simple"
		for _, mid := range slices.Sorted(maps.Keys(g.members)) {
			m := g.members[mid]
			dm := kmsg.NewShareGroupDescribeResponseGroupMember()
			dm.MemberID, dm.RackID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.rack, m.epoch, m.clientID, m.host
			dm.SubscribedTopicNames = slices.Clone(m.topics)
			for _, t := range slices.Sorted(maps.Keys(m.assigned)) {
				tid, _, ok := c.cfg.Topic(t)
				if !ok {
					continue
				}
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID, tp.Topic, tp.Partitions = tid, t, slices.Clone(m.assigned[t])
				dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
			}
			dg.Members = append(dg.Members, dm)
		}
		c.mu.Unlock()
		dg.AuthorizedOperations = -2147483648
		if req.IncludeAuthorizedOperations && authorizedOps != nil {
			dg.AuthorizedOperations = authorizedOps(id)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// Listed is a share group as ListGroups shows it.
type Listed struct{ ID, State string }

// List returns the share groups this broker coordinates.
func (c *Coordinator) List() []Listed {
	now := c.cfg.Now()
	c.mu.Lock()
	ids := slices.Sorted(maps.Keys(c.groups))
	c.mu.Unlock()
	// Owns asks the group coordinator, which may take its own locks: not
	// under c.mu.
	ids = slices.DeleteFunc(ids, func(id string) bool { return c.cfg.Owns(id) != 0 })
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Listed
	for _, id := range ids {
		g := c.groups[id]
		if g == nil {
			continue
		}
		c.expireLocked(g, now)
		out = append(out, Listed{ID: id, State: g.state()})
	}
	return out
}

// Delete deletes a share group and its share-partitions' state, as
// DeleteGroups does: NON_EMPTY_GROUP while it has members. ok is false when
// groupID is no share group here (the caller answers for other groups).
// Its records in __consumer_offsets are deleted (tombstones) first.
func (c *Coordinator) Delete(groupID string) (code int16, ok bool) {
	if c.cfg.Append != nil {
		wl := c.wlocks.of(groupID)
		wl.Lock()
		defer wl.Unlock()
	}
	now := c.cfg.Now()
	c.mu.Lock()
	g := c.groups[groupID]
	if g == nil {
		c.mu.Unlock()
		return 0, false
	}
	c.expireLocked(g, now)
	if len(g.members) > 0 {
		c.mu.Unlock()
		return kerr.NonEmptyGroup.Code, true
	}
	var tombs []Record
	if c.cfg.Append != nil {
		tombs = g.tombstonesLocked()
	}
	c.mu.Unlock()
	if len(tombs) > 0 {
		if err := c.cfg.Append(groupID, tombs); err != nil {
			c.cfg.Logger.Warn("deleting share group records failed", "group", groupID, "err", err)
			return appendErrorCode(err), true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[groupID] == g {
		c.forgetLocked(groupID)
	}
	return 0, true
}

// admitLocked registers groupID as having state here, true if it already
// has or there is room under cfg.MaxGroups (after forgetting groups empty
// for EmptyGroupRetention, least recently used first). c.mu held.
func (c *Coordinator) admitLocked(groupID string, now time.Time) bool {
	if _, ok := c.known[groupID]; ok {
		c.known[groupID] = now
		return true
	}
	if len(c.known) >= c.cfg.MaxGroups {
		c.sweepLocked(now)
	}
	if len(c.known) >= c.cfg.MaxGroups {
		return false
	}
	c.known[groupID] = now
	return true
}

// sweepLocked forgets every group with no live member and no share session
// here that has not been used for EmptyGroupRetention: its membership
// record and its share-partitions' copies here go; their persisted state
// in __share_group_state stays, so a consumer of it that comes back
// resumes from it. c.mu held.
func (c *Coordinator) sweepLocked(now time.Time) {
	c.evictIdleLocked(now)
	inSession := map[string]bool{}
	for k := range c.sessions {
		inSession[k.group] = true
	}
	for id, last := range c.known {
		if inSession[id] || now.Sub(last) < c.cfg.EmptyGroupRetention {
			continue
		}
		if g := c.groups[id]; g != nil {
			c.expireLocked(g, now)
			if len(g.members) > 0 {
				continue
			}
		}
		c.forgetLocked(id)
	}
}

// forgetLocked drops every piece of a group's state. c.mu held.
func (c *Coordinator) forgetLocked(groupID string) {
	delete(c.groups, groupID)
	delete(c.known, groupID)
	for k, p := range c.parts {
		if k.group == groupID {
			p.stopExpiry()
			delete(c.parts, k)
		}
	}
	for k := range c.sessions {
		if k.group == groupID {
			delete(c.sessions, k)
		}
	}
}

// Groups returns how many groups have state here, and the share-partitions
// they hold (for tests and metrics).
func (c *Coordinator) Groups() (groups, partitions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.known), len(c.parts)
}

// GroupEmpty reports whether groupID has no live member (a missing group is
// empty); admin offset changes need it.
func (c *Coordinator) GroupEmpty(groupID string) bool {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil {
		return true
	}
	c.expireLocked(g, now)
	return len(g.members) == 0
}

// Limits returns a group's share-partition limits: its group configs over
// the broker's settings.
func (c *Coordinator) Limits(groupID string) Limits {
	lim := Limits{LockDuration: c.cfg.LockDuration, DeliveryLimit: c.cfg.DeliveryLimit, MaxLocks: c.cfg.MaxRecordLocks}
	cfgs := c.cfg.GroupConfigs(groupID)
	if v, ok := parseInt(cfgs["share.record.lock.duration.ms"]); ok && v > 0 {
		lim.LockDuration = time.Duration(v) * time.Millisecond
	}
	if v, ok := parseInt(cfgs["share.delivery.count.limit"]); ok && v > 0 {
		lim.DeliveryLimit = int16(min(v, 32767))
	}
	if v, ok := parseInt(cfgs["share.partition.max.record.locks"]); ok && v > 0 {
		lim.MaxLocks = int(v)
	}
	return lim
}

// groupDuration is a group config in milliseconds, or def.
func (c *Coordinator) groupDuration(groupID, key string, def time.Duration) time.Duration {
	if v, ok := parseInt(c.cfg.GroupConfigs(groupID)[key]); ok && v > 0 {
		return time.Duration(v) * time.Millisecond
	}
	return def
}

// GroupConfig returns one of a group's configs, or def.
func (c *Coordinator) GroupConfig(groupID, key, def string) string {
	if v, ok := c.cfg.GroupConfigs(groupID)[key]; ok && v != "" {
		return v
	}
	return def
}

func parseInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

// Partition returns the share-partition of group on (topic, partition),
// creating it uninitialized.
func (c *Coordinator) Partition(groupID string, topic [16]byte, part int32) *Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := partKey{groupID, topic, part}
	p := c.parts[k]
	if p == nil {
		p = NewPartition()
		c.parts[k] = p
	}
	// Callers have admitted the group (a share session, an admin call); a
	// fetch parked across the group's eviction may bring it back, which
	// the next admission's sweep forgets again.
	c.known[groupID] = c.cfg.Now()
	return p
}

// LookupPartition returns an existing share-partition, or nil.
func (c *Coordinator) LookupPartition(groupID string, topic [16]byte, part int32) *Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parts[partKey{groupID, topic, part}]
}

// DeletePartition forgets a share-partition (DeleteShareGroupOffsets).
func (c *Coordinator) DeletePartition(groupID string, topic [16]byte, part int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.parts, partKey{groupID, topic, part})
}

// GroupPartitions lists a group's initialized share-partitions.
func (c *Coordinator) GroupPartitions(groupID string) map[[16]byte][]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[[16]byte][]int32{}
	for k := range c.parts {
		if k.group == groupID {
			out[k.topic] = append(out[k.topic], k.part)
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// releaseMemberLocked releases the records member holds in every
// share-partition of group. c.mu held; partition locks are taken after it
// (never the other way round).
func (c *Coordinator) releaseMemberLocked(groupID, memberID string) {
	lim := c.Limits(groupID)
	for k, p := range c.parts {
		if k.group != groupID {
			continue
		}
		p.Lock()
		p.ReleaseMember(memberID, lim)
		p.Unlock()
		if c.cfg.Released != nil {
			c.cfg.Released(groupID, TopicPartition{Topic: k.topic, Partition: k.part}, p)
		}
	}
}

// TopicDeleted forgets the share-partitions of a deleted topic and drops
// the topic from the groups' record of initialized partitions, as Kafka's
// maybeCleanupShareGroupState. It returns the groups whose record changed:
// the caller writes it (Flush), not on its own goroutine if that must not
// block.
func (c *Coordinator) TopicDeleted(id [16]byte) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.parts {
		if k.topic == id {
			p.stopExpiry()
			delete(c.parts, k)
		}
	}
	var changed []string
	for gid, g := range c.groups {
		m := g.spm
		if m == nil {
			continue
		}
		_, initialized := m.initialized[id]
		_, initializing := m.initializing[id]
		if initialized || initializing || m.deleting[id] {
			delete(m.initialized, id)
			delete(m.initializing, id)
			delete(m.deleting, id)
			changed = append(changed, gid)
		}
	}
	return changed
}

// EnsureGroup creates an empty share group of that id if there is none
// (AlterShareGroupOffsets on a new group, as Kafka's). It answers false,
// creating nothing, when the group is new and MaxGroups are here.
// A new group's ShareGroupMetadata record is written, as Kafka creates it
// (a failed write is logged; the group's next change writes it).
func (c *Coordinator) EnsureGroup(groupID string) bool {
	if c.cfg.Append != nil {
		wl := c.wlocks.of(groupID)
		wl.Lock()
		defer wl.Unlock()
	}
	c.mu.Lock()
	if !c.admitLocked(groupID, c.cfg.Now()) {
		c.mu.Unlock()
		return false
	}
	var write func() error
	if c.groups[groupID] == nil {
		g := &group{id: groupID, members: map[string]*member{}}
		c.groups[groupID] = g
		write = c.changesLocked(g)
	}
	c.mu.Unlock()
	if write != nil {
		_ = write()
	}
	return true
}

// Owns answers 0 when this broker coordinates groupID, else the error code.
func (c *Coordinator) Owns(groupID string) int16 { return c.cfg.Owns(groupID) }
