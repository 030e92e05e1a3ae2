package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit (key 8), versions 2-9. Partitions of unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka's request handler answers before the
// coordinator sees them; the rest are validated against the group (a commit
// with generation -1 to an unknown group creates a "simple" group) and
// written in one batch.
func (c *Coordinator) OffsetCommit(cl Client, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	type target struct {
		t, p int
		tp   kmsg.OffsetCommitRequestTopicPartition
	}
	var targets []target
	for ti, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		meta, known := c.meta.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			if !known || rp.Partition < 0 || rp.Partition >= meta.Partitions {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				targets = append(targets, target{ti, len(st.Partitions), rp})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	setAll := func(code int16) *kmsg.OffsetCommitResponse {
		for _, tg := range targets {
			resp.Topics[tg.t].Partitions[tg.p].ErrorCode = code
		}
		return resp
	}
	if len(targets) == 0 {
		return resp
	}
	if c.closed.Load() {
		return setAll(kerr.CoordinatorNotAvailable.Code)
	}
	g, code := c.lockGroup(req.Group, false)
	if code == 0 && g == nil {
		if req.Generation >= 0 {
			if cl.Version >= 9 {
				return setAll(kerr.GroupIDNotFound.Code)
			}
			return setAll(kerr.IllegalGeneration.Code)
		}
		// A consumer that commits without group management (or an admin
		// client): a simple group is created.
		g, code = c.lockGroup(req.Group, true)
	}
	if code != 0 {
		return setAll(code)
	}
	defer g.mu.Unlock()
	if code := g.validateOffsetCommitLocked(cl, req); code != 0 {
		return setAll(code)
	}

	now := g.c.now().UnixMilli()
	expire := int64(-1)
	if cl.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = now + req.RetentionTimeMillis
	}
	var recs []record
	type applied struct {
		topic string
		part  int32
		entry offsetEntry
	}
	var apply []applied
	var written []target
	for _, tg := range targets {
		md := ""
		if tg.tp.Metadata != nil {
			md = *tg.tp.Metadata
		}
		if len(md) > int(c.cfg.OffsetMetadataMaxBytes) {
			resp.Topics[tg.t].Partitions[tg.p].ErrorCode = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		e := offsetEntry{offset: tg.tp.Offset, leaderEpoch: tg.tp.LeaderEpoch, metadata: md, commitTime: now, expireTime: expire}
		if cl.Version < 6 {
			e.leaderEpoch = -1
		}
		if e.leaderEpoch < 0 {
			e.leaderEpoch = -1
		}
		topic := req.Topics[tg.t].Topic
		recs = append(recs, offsetCommitRecord(g.id, topic, tg.tp.Partition, e))
		apply = append(apply, applied{topic, tg.tp.Partition, e})
		written = append(written, tg)
	}
	if err := g.appendRecords(recs); err != nil {
		code := appendErrorCode(err)
		if code == kerr.UnknownServerError.Code {
			code = kerr.InvalidCommitOffsetSize.Code
		}
		for _, tg := range written {
			resp.Topics[tg.t].Partitions[tg.p].ErrorCode = code
		}
		c.logger.Warn("offset commit failed", "group", g.id, "err", err)
		return resp
	}
	for _, a := range apply {
		g.setOffsetLocked(a.topic, a.part, a.entry)
	}
	return resp
}

// validateOffsetCommitLocked is Kafka's Group.validateOffsetCommit.
func (g *group) validateOffsetCommitLocked(cl Client, req *kmsg.OffsetCommitRequest) int16 {
	if g.kind != kindClassic {
		if req.Generation < 0 && g.isEmptyLocked() {
			return 0
		}
		m, ok := g.memberEpochLocked(req.MemberID)
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if g.isClassicMemberLocked(req.MemberID) {
			// A classic member of a mixed group commits by its generation.
			if req.Generation != m {
				return kerr.IllegalGeneration.Code
			}
			return 0
		}
		if cl.Version < 9 {
			// A consumer-protocol member must use OffsetCommit v9+.
			return kerr.UnsupportedVersion.Code
		}
		switch {
		case req.Generation > m:
			return kerr.FencedMemberEpoch.Code
		case req.Generation < m:
			return kerr.StaleMemberEpoch.Code
		}
		return 0
	}
	cg := &g.classic
	if cg.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if req.Generation < 0 && cg.state == stateEmpty {
		return 0
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != cg.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if cg.state != stateEmpty {
		return kerr.UnknownMemberID.Code
	}
	if cg.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// fetchTopic is one topic of an OffsetFetch.
type fetchTopic struct {
	name       string
	partitions []int32
}

// OffsetFetch (key 9), versions 1-9: one group (v1-7) or several (v8+);
// a null topic list (v2+) asks for every committed offset of the group.
func (c *Coordinator) OffsetFetch(cl Client, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if cl.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = make([]fetchTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{t.Topic, t.Partitions})
				}
			}
			resp.Groups = append(resp.Groups, c.fetchGroup(rg.Group, rg.MemberID, rg.MemberEpoch, topics, req.RequireStable))
		}
		return resp
	}
	var topics []fetchTopic
	if req.Topics != nil || cl.Version < 2 {
		topics = make([]fetchTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
	}
	rg := c.fetchGroup(req.Group, nil, -1, topics, req.RequireStable)
	resp.ErrorCode = rg.ErrorCode
	if rg.ErrorCode != 0 {
		// v1 has no top-level error: each requested partition carries it.
		for _, t := range topics {
			st := kmsg.NewOffsetFetchResponseTopic()
			st.Topic = t.name
			for _, p := range t.partitions {
				sp := kmsg.NewOffsetFetchResponseTopicPartition()
				sp.Partition, sp.Offset, sp.LeaderEpoch, sp.ErrorCode = p, -1, -1, rg.ErrorCode
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	for _, t := range rg.Topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata, sp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// fetchGroup answers one group of an OffsetFetch; topics nil means all.
// With requireStable, a partition an open transaction committed to is
// UNSTABLE_OFFSET_COMMIT (the client retries).
func (c *Coordinator) fetchGroup(groupID string, memberID *string, memberEpoch int32, topics []fetchTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = groupID
	if c.closed.Load() {
		rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return rg
	}
	g, code := c.lockGroup(groupID, false)
	if code != 0 {
		rg.ErrorCode = code
		return rg
	}
	var offsets map[string]map[int32]offsetEntry
	unstable := func(string, int32) bool { return false }
	if g != nil {
		defer g.mu.Unlock()
		if code := g.validateOffsetFetchLocked(memberID, memberEpoch); code != 0 {
			rg.ErrorCode = code
			return rg
		}
		offsets = g.offsets
		if requireStable {
			unstable = g.hasPendingTxnLocked
		}
	}
	if topics == nil {
		names := make([]string, 0, len(offsets))
		for t := range offsets {
			names = append(names, t)
		}
		slices.Sort(names)
		for _, t := range names {
			ps := make([]int32, 0, len(offsets[t]))
			for p := range offsets[t] {
				ps = append(ps, p)
			}
			slices.Sort(ps)
			topics = append(topics, fetchTopic{t, ps})
		}
	}
	for _, t := range topics {
		st := kmsg.NewOffsetFetchResponseGroupTopic()
		st.Topic = t.name
		for _, p := range t.partitions {
			sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch = p, -1, -1
			md := ""
			if unstable(t.name, p) {
				sp.ErrorCode = kerr.UnstableOffsetCommit.Code
			} else if e, ok := offsets[t.name][p]; ok {
				sp.Offset, sp.LeaderEpoch, md = e.offset, e.leaderEpoch, e.metadata
			}
			sp.Metadata = &md
			st.Partitions = append(st.Partitions, sp)
		}
		rg.Topics = append(rg.Topics, st)
	}
	return rg
}

// validateOffsetFetchLocked checks a KIP-848 member's epoch (OffsetFetch
// v9); classic groups accept any fetch.
func (g *group) validateOffsetFetchLocked(memberID *string, memberEpoch int32) int16 {
	if g.kind == kindClassic || memberID == nil && memberEpoch < 0 {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	epoch, ok := g.memberEpochLocked(id)
	if !ok {
		return kerr.UnknownMemberID.Code
	}
	if memberEpoch != epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// OffsetDelete (key 47): deletes committed offsets of topics the group does
// not consume.
func (c *Coordinator) OffsetDelete(cl Client, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if c.closed.Load() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	type target struct {
		topic string
		parts []int32
	}
	var targets []target
	var unknown []kmsg.OffsetDeleteResponseTopic
	for _, rt := range req.Topics {
		meta, known := c.meta.Topic(rt.Topic)
		var valid []int32
		bad := kmsg.NewOffsetDeleteResponseTopic()
		bad.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			if !known || rp.Partition < 0 || rp.Partition >= meta.Partitions {
				sp := kmsg.NewOffsetDeleteResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
				bad.Partitions = append(bad.Partitions, sp)
				continue
			}
			valid = append(valid, rp.Partition)
		}
		if len(bad.Partitions) > 0 {
			unknown = append(unknown, bad)
		}
		if len(valid) > 0 {
			targets = append(targets, target{rt.Topic, valid})
		}
	}
	g, code := c.lockGroup(req.Group, false)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if g == nil {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	defer g.mu.Unlock()
	if g.kind == kindClassic {
		switch g.classic.state {
		case stateDead:
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return resp
		case stateStable, statePreparingRebalance, stateCompletingRebalance:
			if g.classic.protocolType != consumerProtocolType {
				resp.ErrorCode = kerr.NonEmptyGroup.Code
				return resp
			}
		}
	}
	var recs []record
	type del struct {
		topic string
		part  int32
	}
	var dels []del
	for _, tg := range targets {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = tg.topic
		subscribed := g.isSubscribedLocked(tg.topic)
		for _, p := range tg.parts {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = p
			if subscribed {
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[tg.topic][p]; ok {
				recs = append(recs, offsetTombstone(g.id, tg.topic, p))
				dels = append(dels, del{tg.topic, p})
			} // else nothing to delete, but Kafka 4.4 lists the partition all the same
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if err := g.appendRecords(recs); err != nil {
		resp.Topics = nil
		resp.ErrorCode = appendErrorCode(err)
		return resp
	}
	for _, d := range dels {
		g.deleteOffsetLocked(d.topic, d.part)
	}
	if len(dels) > 0 {
		c.logger.Info("deleted committed offsets", "group", g.id, "offsets", len(dels))
	}
	resp.Topics = append(resp.Topics, unknown...)
	return resp
}

// TopicDeleted deletes (with tombstones) every committed offset of a topic
// that was deleted, as Kafka's coordinator does when partitions go away. It
// works in the background: the caller may be the metadata applier.
func (c *Coordinator) TopicDeleted(topic string) {
	c.bg.Go(func() {
		n := 0
		for _, g := range c.allGroups() {
			g.mu.Lock()
			ps := g.offsets[topic]
			if g.removed || len(ps) == 0 {
				g.mu.Unlock()
				continue
			}
			var recs []record
			for _, p := range sortedPartitionList(ps) {
				recs = append(recs, offsetTombstone(g.id, topic, p))
			}
			if err := g.appendRecords(recs); err != nil {
				c.logger.Warn("deleting offsets of a deleted topic failed", "group", g.id, "topic", topic, "err", err)
			} else {
				delete(g.offsets, topic)
				n += len(recs)
			}
			g.mu.Unlock()
		}
		if n > 0 {
			c.logger.Info("deleted committed offsets of a deleted topic", "topic", topic, "offsets", n)
		}
	})
}

// expireLocked removes the offsets that expired by now (Kafka's
// OffsetExpirationCondition), and the group itself when it is empty and has
// no offsets left. It returns how many offsets expired and whether the
// group was deleted.
func (g *group) expireLocked(now time.Time) (int, bool) {
	nowMs := now.UnixMilli()
	retention := g.c.cfg.OffsetsRetention.Milliseconds()
	// base picks the timestamp retention counts from; nil: no expiration.
	var base func(offsetEntry) int64
	onlyUnsubscribed := false
	if g.kind != kindClassic {
		base = func(e offsetEntry) int64 { return e.commitTime }
		onlyUnsubscribed = true
	} else {
		cg := &g.classic
		switch {
		case cg.protocolType == "":
			base = func(e offsetEntry) int64 { return e.commitTime }
		case cg.state == stateEmpty:
			base = func(e offsetEntry) int64 {
				if cg.stateTime >= 0 {
					return cg.stateTime
				}
				return e.commitTime
			}
		case cg.protocolType == consumerProtocolType && cg.subscribedTopics != nil && cg.state == stateStable:
			base = func(e offsetEntry) int64 { return e.commitTime }
			onlyUnsubscribed = true
		}
	}
	var recs []record
	type del struct {
		topic string
		part  int32
	}
	var dels []del
	if base != nil {
		for topic, ps := range g.offsets {
			if onlyUnsubscribed && g.isSubscribedLocked(topic) {
				continue
			}
			for p, e := range ps {
				if g.hasPendingTxnLocked(topic, p) {
					continue // Kafka keeps offsets an open transaction may replace
				}
				expired := e.expireTime >= 0 && nowMs >= e.expireTime ||
					e.expireTime < 0 && nowMs-base(e) >= retention
				if expired {
					recs = append(recs, offsetTombstone(g.id, topic, p))
					dels = append(dels, del{topic, p})
				}
			}
		}
	}
	deleteGroup := len(dels) == g.numOffsetsLocked() && g.isEmptyLocked() && len(g.classic.pending) == 0 &&
		len(g.pendingTxn) == 0
	if deleteGroup {
		recs = append(recs, g.groupTombstonesLocked()...)
	}
	if err := g.appendRecords(recs); err != nil {
		g.c.logger.Warn("writing expired offsets failed", "group", g.id, "err", err)
		return 0, false
	}
	for _, d := range dels {
		g.deleteOffsetLocked(d.topic, d.part)
	}
	if deleteGroup {
		g.shutdownMembersLocked(kerr.CoordinatorNotAvailable.Code)
		g.classic.state = stateDead
		g.removeLocked()
		g.c.logger.Info("deleted empty group without offsets", "group", g.id)
	}
	return len(dels), deleteGroup
}
