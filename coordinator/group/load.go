package group

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

// replayer rebuilds a shard's groups from its partition, record by record,
// as Kafka's coordinator replays __consumer_offsets when it becomes leader.
type replayer struct {
	c       *Coordinator
	s       *shard
	groups  map[string]*group
	records int
	skipped int // share and other record types Strait does not keep
	// txn holds offsets committed inside a still-open transaction, by
	// producer id, until its commit or abort marker.
	txn map[int64][]txnOffset
	// consumer gathers KIP-848 groups' records, by group id.
	consumer map[string]*replayedConsumer
	// streams gathers streams groups' records, by group id.
	streams map[string]*replayedStreams
	// share holds the latest value of each share-group record key
	// (tombstones delete), for Config.ShareLoaded.
	share map[string][]byte
}

type txnOffset struct {
	group, topic string
	partition    int32
	entry        offsetEntry
}

func (r *replayer) group(id string) *group {
	g := r.groups[id]
	if g == nil {
		g = newGroup(r.c, r.s, id)
		r.groups[id] = g
	}
	return g
}

func (r *replayer) batch(b []byte) error {
	return readBatch(b, r.record)
}

func (r *replayer) record(h *recordbatch.Header, key, value []byte) error {
	r.records++
	if h.IsControl() {
		var k kmsg.ControlRecordKey
		if err := k.ReadFrom(key); err != nil {
			return nil
		}
		pending := r.txn[h.ProducerID]
		delete(r.txn, h.ProducerID)
		if k.Type == kmsg.ControlRecordKeyTypeCommit {
			for _, o := range pending {
				r.group(o.group).applyTxnOffsetLocked(o.topic, o.partition, o.entry)
			}
		}
		return nil
	}
	version, ok := decodeKeyVersion(key)
	if !ok {
		r.skipped++
		return nil
	}
	switch version {
	case keyOffsetCommitV0, keyOffsetCommit:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			r.c.logger.Warn("skipping unreadable offset commit key", "partition", r.s.index, "offset", h.BaseOffset, "err", err)
			return nil
		}
		if value == nil {
			if g := r.groups[k.Group]; g != nil {
				g.deleteOffsetLocked(k.Topic, k.Partition)
			}
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			r.c.logger.Warn("skipping unreadable offset commit value", "partition", r.s.index, "offset", h.BaseOffset, "err", err)
			return nil
		}
		e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1}
		if v.Version >= 3 {
			e.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			e.expireTime = v.ExpireTimestamp
		}
		if h.IsTransactional() {
			e.seq = r.c.seq.Add(1)
			r.txn[h.ProducerID] = append(r.txn[h.ProducerID], txnOffset{k.Group, k.Topic, k.Partition, e})
			return nil
		}
		r.group(k.Group).setOffsetLocked(k.Topic, k.Partition, e)
	case keyGroupMetadata:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			r.c.logger.Warn("skipping unreadable group metadata key", "partition", r.s.index, "offset", h.BaseOffset, "err", err)
			return nil
		}
		if value == nil {
			// The group was deleted; offsets written after stay.
			if g := r.groups[k.Group]; g != nil {
				g.classic.init(r.c.now())
			}
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			r.c.logger.Warn("skipping unreadable group metadata value", "partition", r.s.index, "offset", h.BaseOffset, "err", err)
			return nil
		}
		r.group(k.Group).replayGroupMetadata(&v)
	case keyConsumerGroupMetadata, keyConsumerGroupPartitionMetadata, keyConsumerGroupMember,
		keyConsumerGroupTargetMetadata, keyConsumerGroupTargetMember, keyConsumerGroupCurrentMember:
		k, err := decodeCGKey(key)
		if err != nil {
			r.c.logger.Warn("skipping unreadable consumer group key", "partition", r.s.index, "offset", h.BaseOffset, "err", err)
			return nil
		}
		rc := r.consumer[k.group]
		if rc == nil {
			if value == nil {
				return nil // a tombstone of a group already gone
			}
			rc = newReplayedConsumer()
			r.consumer[k.group] = rc
		}
		if err := rc.replay(k, value); err != nil {
			r.c.logger.Warn("skipping unreadable consumer group value", "partition", r.s.index, "offset", h.BaseOffset,
				"key_version", k.version, "err", err)
		}
	case keyStreamsGroupMetadata, keyStreamsGroupMember, keyStreamsGroupTargetMetadata,
		keyStreamsGroupTargetMember, keyStreamsGroupCurrentMember, keyStreamsGroupTopology:
		k, err := decodeCGKey(key)
		if err != nil {
			r.c.logger.Warn("skipping unreadable streams group key", "partition", r.s.index, "offset", h.BaseOffset, "err", err)
			return nil
		}
		rs := r.streams[k.group]
		if rs == nil {
			if value == nil {
				return nil // a tombstone of a group already gone
			}
			rs = newReplayedStreams()
			r.streams[k.group] = rs
		}
		if err := rs.replay(k, value); err != nil {
			r.c.logger.Warn("skipping unreadable streams group value", "partition", r.s.index, "offset", h.BaseOffset,
				"key_version", k.version, "err", err)
		}
	default:
		if version >= keyShareFirst && version <= keyShareLast && r.c.cfg.ShareLoaded != nil {
			if value == nil {
				delete(r.share, string(key))
			} else {
				r.share[string(key)] = slices.Clone(value) // the load buffer is reused
			}
			return nil
		}
		r.skipped++
	}
	return nil
}

// The share groups' record types (ShareGroupPartitionMetadata to
// ShareGroupStatePartitionMetadata), kept by coordinator/share.
const (
	keyShareFirst = 9
	keyShareLast  = 15
)

// replayGroupMetadata sets the classic state from a GroupMetadata record:
// Stable with its members, or Empty.
func (g *group) replayGroupMetadata(v *kmsg.GroupMetadataValue) {
	cg := &g.classic
	cg.init(g.c.now())
	cg.hasRecord = true
	cg.generation = v.Generation
	cg.protocolType = v.ProtocolType
	if v.Protocol != nil {
		cg.protocol = *v.Protocol
	}
	if v.Leader != nil {
		cg.leader = *v.Leader
	}
	cg.stateTime = -1
	if v.Version >= 2 {
		cg.stateTime = v.CurrentStateTimestamp
	}
	for _, mv := range v.Members {
		m := &classicMember{
			id: mv.MemberID, instanceID: mv.InstanceID, clientID: mv.ClientID, clientHost: mv.ClientHost,
			rebalanceTimeout: mv.RebalanceTimeoutMillis, sessionTimeout: mv.SessionTimeoutMillis,
			protocolType: v.ProtocolType,
			// The record's bytes alias the load buffer, which is reused.
			protocols:  []protocolMeta{{name: cg.protocol, metadata: slices.Clone(mv.Subscription)}},
			assignment: slices.Clone(mv.Assignment),
		}
		if v.Version < 1 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		cg.members[m.id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
	}
	if len(cg.members) > 0 {
		cg.state, cg.prevState = stateStable, stateStable
	}
	cg.subscribedTopics = cg.computeSubscribedTopics()
}

// load replays a shard's partition and makes its groups available, unless
// the shard was unloaded or loaded again meanwhile (gen is this load's).
func (c *Coordinator) load(s *shard, gen uint64) {
	start := time.Now()
	r := &replayer{c: c, s: s, groups: map[string]*group{}, txn: map[int64][]txnOffset{},
		consumer: map[string]*replayedConsumer{}, streams: map[string]*replayedStreams{}, share: map[string][]byte{}}
	if err := c.log.ReadFrom(s.index, 0, r.batch); err != nil {
		c.logger.Error("loading group coordinator partition failed", "partition", s.index, "err", err)
		s.mu.Lock()
		if s.state == shardLoading && s.gen == gen {
			s.state, s.completed = shardUnloaded, nil
		}
		s.mu.Unlock()
		return
	}
	// Transactions still open at the end of the log stay pending until
	// their markers arrive.
	for pid, pending := range r.txn {
		for _, o := range pending {
			r.group(o.group).addPendingTxnLocked(pid, o.topic, o.partition, o.entry)
		}
	}
	consumerGroups := 0
	for id, rc := range r.consumer {
		if rc.exists {
			r.group(id).restoreConsumer(rc)
			consumerGroups++
		}
	}
	streamsGroups := 0
	for id, rs := range r.streams {
		if rs.exists {
			r.group(id).restoreStreams(rs)
			streamsGroups++
		}
	}
	offsets := 0
	for id, g := range r.groups {
		if !g.classic.hasRecord && g.kind == kindClassic && len(g.offsets) == 0 && len(g.pendingTxn) == 0 {
			delete(r.groups, id) // deleted, and nothing committed since
			continue
		}
		offsets += g.numOffsetsLocked()
	}
	// Share groups are handed over before the shard answers as loaded, so
	// their members find them at once (not under s.mu: the share
	// coordinator asks about shards with its own lock held).
	s.mu.Lock()
	superseded := s.state != shardLoading || s.gen != gen
	s.mu.Unlock()
	if superseded {
		return
	}
	if c.cfg.ShareLoaded != nil {
		recs := make([]ShareRecord, 0, len(r.share))
		for k, v := range r.share {
			recs = append(recs, ShareRecord{Key: []byte(k), Value: v})
		}
		c.cfg.ShareLoaded(s.index, recs)
	}
	s.mu.Lock()
	completed := s.completed
	s.completed = nil
	if s.state != shardLoading || s.gen != gen || c.closed.Load() {
		s.mu.Unlock()
		return // unloaded (or loaded again) meanwhile
	}
	loaded := make([]*group, 0, len(r.groups))
	for _, g := range r.groups {
		loaded = append(loaded, g)
	}
	s.groups, s.state = r.groups, shardLoaded
	s.mu.Unlock()
	for _, g := range loaded {
		g.mu.Lock()
		g.onLoadedLocked()
		g.mu.Unlock()
	}
	// Markers reported during the load: the load may have read them
	// already (their offsets are settled, and settling finds nothing
	// pending), or they came after the log's end it read.
	for _, tc := range completed {
		settleTxn(c, s.index, loaded, tc.producerID, tc.commit)
	}
	level := slog.LevelInfo
	if r.records == 0 {
		level = slog.LevelDebug // an empty partition is not worth a line each
	}
	c.logger.Log(context.Background(), level, "loaded group coordinator partition", "partition", s.index,
		"groups", len(loaded), "consumer_groups", consumerGroups, "streams_groups", streamsGroups, "offsets", offsets, "records", r.records, "skipped_records", r.skipped,
		"took", time.Since(start))
}

// onLoadedLocked starts the session timers of a loaded group's members,
// who keep their generation across the restart.
func (g *group) onLoadedLocked() {
	if g.removed {
		return
	}
	switch g.kind {
	case kindConsumer:
		g.onLoadedConsumerLocked()
		return
	case kindStreams:
		g.onLoadedStreamsLocked()
		return
	}
	cg := &g.classic
	for _, m := range cg.members {
		g.rescheduleHeartbeatLocked(m, m.sessionTimeoutDuration())
	}
	if len(cg.members) > int(g.c.cfg.MaxSize) {
		g.prepareRebalanceLocked("freshly-loaded group is over capacity")
	}
}
