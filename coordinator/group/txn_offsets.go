package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsetCommit (key 28) commits offsets inside a producer's transaction:
// they are written to the group's __consumer_offsets partition as a
// transactional batch (the producer's id and epoch, no sequence) and stay
// pending, invisible to OffsetFetch, until the transaction's marker lands on
// that partition and the broker calls CompleteTransaction.
//
// Checking that the transaction holds the partition (AddOffsetsToTxn) is
// the transaction coordinator's part, done by the broker before it calls
// this; write appends the batch the way that check allows (Kafka's
// AppendOrigin.COORDINATOR with the verification guard). A nil write uses
// Log.Append.
func (c *Coordinator) TxnOffsetCommit(cl Client, req *kmsg.TxnOffsetCommitRequest, write func(partition int32, batch []byte) error) *kmsg.TxnOffsetCommitResponse {
	if write == nil {
		write = c.log.Append
	}
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	type target struct {
		t, p int
		tp   kmsg.TxnOffsetCommitRequestTopicPartition
	}
	var targets []target
	for ti, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		meta, known := c.meta.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
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
	setAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		for _, tg := range targets {
			resp.Topics[tg.t].Partitions[tg.p].ErrorCode = code
		}
		return resp
	}
	switch {
	case len(targets) == 0:
		return resp
	case c.closed.Load():
		return setAll(kerr.CoordinatorNotAvailable.Code)
	case req.Group == "":
		return setAll(kerr.InvalidGroupID.Code)
	}
	generation := req.Generation
	if cl.Version < 3 {
		generation = -1 // no member information before v3
	}
	g, code := c.lockGroup(req.Group, false)
	if code == 0 && g == nil {
		if generation >= 0 {
			return setAll(kerr.IllegalGeneration.Code)
		}
		g, code = c.lockGroup(req.Group, true)
	}
	if code != 0 {
		return setAll(code)
	}
	defer g.mu.Unlock()
	if code := g.validateTxnOffsetCommitLocked(req, generation); code != 0 {
		return setAll(code)
	}

	now := c.now().UnixMilli()
	var recs []record
	var written []target
	var entries []offsetEntry
	for _, tg := range targets {
		md := ""
		if tg.tp.Metadata != nil {
			md = *tg.tp.Metadata
		}
		if len(md) > int(c.cfg.OffsetMetadataMaxBytes) {
			resp.Topics[tg.t].Partitions[tg.p].ErrorCode = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		e := offsetEntry{offset: tg.tp.Offset, leaderEpoch: tg.tp.LeaderEpoch, metadata: md, commitTime: now, expireTime: -1}
		if cl.Version < 2 || e.leaderEpoch < 0 {
			e.leaderEpoch = -1
		}
		recs = append(recs, offsetCommitRecord(g.id, req.Topics[tg.t].Topic, tg.tp.Partition, e))
		written = append(written, tg)
		entries = append(entries, e)
	}
	if len(recs) == 0 {
		return resp
	}
	batch := buildProducerBatch(recs, c.now(), req.ProducerID, req.ProducerEpoch)
	err := errStaleShard
	if c.current(g.shard) {
		err = write(g.shard.index, batch)
	}
	if err != nil {
		code := appendErrorCode(err)
		for _, tg := range written {
			resp.Topics[tg.t].Partitions[tg.p].ErrorCode = code
		}
		c.logger.Warn("transactional offset commit failed", "group", g.id, "transactional_id", req.TransactionalID, "err", err)
		return resp
	}
	for i, tg := range written {
		e := entries[i]
		e.seq = c.seq.Add(1)
		g.addPendingTxnLocked(req.ProducerID, req.Topics[tg.t].Topic, tg.tp.Partition, e)
	}
	return resp
}

// validateTxnOffsetCommitLocked is Kafka's validateOffsetCommit for a
// transactional commit: member information, when given, must match; without
// it the commit is accepted even while the group has members.
func (g *group) validateTxnOffsetCommitLocked(req *kmsg.TxnOffsetCommitRequest, generation int32) int16 {
	if g.kind != kindClassic {
		if generation < 0 && req.MemberID == "" {
			return 0
		}
		m, ok := g.memberEpochLocked(req.MemberID)
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if g.isClassicMemberLocked(req.MemberID) && generation != m {
			return kerr.IllegalGeneration.Code
		}
		switch {
		case generation > m:
			return kerr.FencedMemberEpoch.Code
		case generation < m:
			return kerr.StaleMemberEpoch.Code
		}
		return 0
	}
	cg := &g.classic
	if cg.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && cg.state == stateEmpty {
		return 0
	}
	if generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if generation != cg.generation {
			return kerr.IllegalGeneration.Code
		}
	}
	if cg.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

func (g *group) addPendingTxnLocked(producerID int64, topic string, partition int32, e offsetEntry) {
	byTopic := g.pendingTxn[producerID]
	if byTopic == nil {
		byTopic = map[string]map[int32]offsetEntry{}
		g.pendingTxn[producerID] = byTopic
	}
	ps := byTopic[topic]
	if ps == nil {
		ps = map[int32]offsetEntry{}
		byTopic[topic] = ps
	}
	ps[partition] = e
}

// applyTxnOffsetLocked makes a committed transaction's offset visible,
// unless a plain commit written after it already replaced it.
func (g *group) applyTxnOffsetLocked(topic string, partition int32, e offsetEntry) {
	if cur, ok := g.offsets[topic][partition]; ok && cur.seq > e.seq {
		return
	}
	g.setOffsetLocked(topic, partition, e)
}

// hasPendingTxnLocked reports whether an open transaction committed an
// offset for the partition (OffsetFetch's require_stable).
func (g *group) hasPendingTxnLocked(topic string, partition int32) bool {
	for _, byTopic := range g.pendingTxn {
		if _, ok := byTopic[topic][partition]; ok {
			return true
		}
	}
	return false
}

// CompleteTransaction settles the offsets a producer committed in its
// transaction on one __consumer_offsets partition, once the transaction's
// marker is written there: a commit makes them the group's committed
// offsets, an abort drops them (Kafka's onTransactionCompleted).
func (c *Coordinator) CompleteTransaction(partition int32, producerID int64, commit bool) {
	v, ok := c.shards.Load(partition)
	if !ok {
		return
	}
	s := v.(*shard)
	s.mu.Lock()
	if s.state == shardLoading {
		// Settled once the load is done (load applies them).
		s.completed = append(s.completed, txnCompletion{producerID, commit})
		s.mu.Unlock()
		return
	}
	groups := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		groups = append(groups, g)
	}
	s.mu.Unlock()
	settleTxn(c, partition, groups, producerID, commit)
}

// settleTxn commits or drops a producer's pending offsets in groups.
func settleTxn(c *Coordinator, partition int32, groups []*group, producerID int64, commit bool) {
	n := 0
	for _, g := range groups {
		g.mu.Lock()
		pending, ok := g.pendingTxn[producerID]
		if ok && !g.removed {
			delete(g.pendingTxn, producerID)
			for topic, ps := range pending {
				for p, e := range ps {
					if commit {
						g.applyTxnOffsetLocked(topic, p, e)
					}
					n++
				}
			}
		}
		g.mu.Unlock()
	}
	if n > 0 {
		c.logger.Debug("settled transactional offset commits", "partition", partition, "producer_id", producerID,
			"commit", commit, "offsets", n)
	}
}
