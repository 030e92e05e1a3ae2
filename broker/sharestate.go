package broker

// The share coordinator's persisted state (KIP-932): __share_group_state,
// created on first use like __consumer_offsets (compacted,
// share.coordinator.state.topic.num.partitions partitions, its replication
// factor capped at the live brokers), one share-partition's state in the
// partition its key (group:topicId:partition) hashes to. The leader of
// that partition is the share-partition's share coordinator: it loads the
// partition's records when it first serves it at a leader epoch, and
// appends a record per write with acks=all before answering
// (coordinator/share state.go has the records and the write semantics).
//
// Share-partition leaders (sharefetch.go) read the state when they first
// serve a share-partition at a leader epoch and write it after each
// acquisition, acknowledgement, release, lock expiry or SPSO move: to
// this broker's shard when it is the coordinator, else with
// ReadShareGroupState / WriteShareGroupState to the coordinator, as Kafka's
// DefaultStatePersister.

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/share"
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

const shareStateTopic = recordbatch.ShareGroupStateTopic

// shareStateService is this broker's side of __share_group_state.
type shareStateService struct {
	srv      *Server
	log      internalTopicLog
	createMu sync.Mutex
	mu       sync.Mutex
	shards   map[int32]*share.StateShard
	budget   *share.Budget // bounds what the shards hold
	// writeFault, set by tests only, answers a share-partition leader's
	// state writes in place of the coordinator when it returns an error.
	writeFault atomic.Pointer[func(share.StateKey) int16]
}

func (s *Server) shareState() *shareStateService {
	s.shareStateOnce.Do(func() {
		s.shareStateSvc = &shareStateService{
			srv:    s,
			log:    internalTopicLog{srv: s, topic: shareStateTopic, loadBuffer: s.cfg.Groups.ShareState.LoadBuffer},
			shards: map[int32]*share.StateShard{},
			budget: &share.Budget{Max: s.cfg.Groups.ShareState.MaxEntries},
		}
	})
	return s.shareStateSvc
}

// ensureTopic creates __share_group_state if it does not exist yet.
func (ss *shareStateService) ensureTopic() (controller.TopicInfo, error) {
	st := ss.srv.cfg.Groups.ShareState
	return ss.srv.ensureInternalTopic(&ss.createMu, shareStateTopic, st.Replication, func(rf int16) controller.CreateTopicRequest {
		return controller.CreateTopicRequest{
			NumPartitions: st.Partitions,
			Configs: map[string]string{
				"cleanup.policy":      "compact",
				"compression.type":    "uncompressed",
				"segment.bytes":       strconv.FormatInt(st.SegmentBytes, 10),
				"min.insync.replicas": strconv.FormatInt(min(int64(st.MinISR), int64(rf)), 10),
			},
		}
	}, func() {})
}

// coordinatorFor returns the __share_group_state partition of k and its
// leader (-1 when it has none), creating the topic if need be.
func (ss *shareStateService) coordinatorFor(k share.StateKey) (int32, int32, error) {
	t, err := ss.ensureTopic()
	if err != nil {
		return 0, -1, err
	}
	p := recordbatch.PartitionFor(k.CoordinatorKey(), int32(len(t.Partitions)))
	if cur, ok := ss.srv.ctrl.Topic(shareStateTopic); ok && int(p) < len(cur.Partitions) {
		return p, cur.Partitions[p].Leader, nil
	}
	return p, t.Partitions[p].Leader, nil
}

// shard returns the loaded shard of partition p, which this broker must
// lead, locked; the caller unlocks it. It loads the partition's records
// when the shard was loaded at another leader epoch (or never).
func (ss *shareStateService) shard(p int32) (*share.StateShard, int16) {
	part, err := ss.log.partition(p)
	if err != nil {
		return nil, kerr.NotCoordinator.Code
	}
	ss.mu.Lock()
	sh := ss.shards[p]
	if sh == nil {
		sh = share.NewStateShard(ss.budget)
		ss.shards[p] = sh
	}
	ss.mu.Unlock()
	sh.Lock()
	epoch := part.LeaderEpoch()
	if sh.Loaded() == epoch {
		return sh, 0
	}
	sh.Reset()
	err = ss.log.ReadFrom(p, 0, func(batch []byte) error {
		return recordbatch.ForEach(batch, compress.Limited(256<<20), func(h *recordbatch.Header, r *recordbatch.Record) error {
			if h.IsControl() {
				return nil
			}
			if err := sh.Replay(r.Key, r.Value); err != nil {
				ss.srv.logger.Warn("skipping an unreadable share state record", "partition", p, "err", err)
			}
			return nil
		})
	})
	if err != nil {
		sh.Reset()
		sh.Unlock()
		ss.srv.logger.Warn("loading share state failed", "partition", p, "err", err)
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	sh.SetLoaded(epoch)
	ss.srv.logger.Debug("loaded share state", "partition", p, "leader_epoch", epoch, "share_partitions", sh.Len())
	return sh, 0
}

// appendRecords writes recs to partition p with acks=all, waiting for the
// in-sync replicas until deadline at most (and internalAppendTimeout): a
// share-partition leader that must answer its client by then gains
// nothing from a longer wait for a follower that is gone.
func (ss *shareStateService) appendRecords(p int32, recs []share.StateRecord, deadline time.Time) int16 {
	b := recordbatch.NewBuilder(ss.srv.clock.Now().UnixMilli())
	for _, r := range recs {
		b.Add(r.Key, r.Value)
	}
	part, err := ss.log.partition(p)
	if err != nil {
		return kerr.NotCoordinator.Code
	}
	if part.NotEnoughReplicas() {
		return kerr.CoordinatorNotAvailable.Code
	}
	info, err := ss.srv.appendAsLeader(part, b.Build())
	if err == nil {
		err = part.WaitReplicated(info.LastOffset+1, min(internalAppendTimeout, time.Until(deadline)), ss.srv.closing)
	}
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) && ke == kerr.NotLeaderForPartition {
			return kerr.NotCoordinator.Code
		}
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

func (ss *shareStateService) snapshotEvery() int {
	return max(1, int(ss.srv.cfg.Groups.ShareState.SnapshotEvery))
}

// localPartition is the __share_group_state partition of k, which must be
// led here (NOT_COORDINATOR otherwise).
func (ss *shareStateService) localPartition(k share.StateKey) (int32, int16) {
	p, leader, err := ss.coordinatorFor(k)
	if err != nil {
		return 0, kerr.CoordinatorNotAvailable.Code
	}
	if leader != ss.srv.cfg.NodeID {
		return 0, kerr.NotCoordinator.Code
	}
	return p, 0
}

// write is WriteShareGroupState for one share-partition, here.
func (ss *shareStateService) write(k share.StateKey, stateEpoch, leaderEpoch int32, start int64, bs []share.StateBatch, deadline time.Time) (int16, string) {
	p, code := ss.localPartition(k)
	if code != 0 {
		return code, ""
	}
	sh, code := ss.shard(p)
	if code != 0 {
		return code, ""
	}
	defer sh.Unlock()
	rec, apply, code, msg := sh.Write(k, stateEpoch, leaderEpoch, start, bs, ss.snapshotEvery(), ss.srv.clock.Now().UnixMilli())
	if code != 0 {
		return code, msg
	}
	if code := ss.appendRecords(p, []share.StateRecord{rec}, deadline); code != 0 {
		return code, ""
	}
	apply()
	return 0, ""
}

// initialize is InitializeShareGroupState for one share-partition, here.
func (ss *shareStateService) initialize(k share.StateKey, stateEpoch int32, start int64, deadline time.Time) (int16, string) {
	p, code := ss.localPartition(k)
	if code != 0 {
		return code, ""
	}
	sh, code := ss.shard(p)
	if code != 0 {
		return code, ""
	}
	defer sh.Unlock()
	rec, apply, code, msg := sh.Initialize(k, stateEpoch, start, ss.srv.clock.Now().UnixMilli())
	if code != 0 {
		return code, msg
	}
	if code := ss.appendRecords(p, []share.StateRecord{rec}, deadline); code != 0 {
		return code, ""
	}
	apply()
	return 0, ""
}

// read returns a share-partition's state here; found is false for a key
// never written (Kafka answers it with StartOffset -1).
func (ss *shareStateService) read(k share.StateKey) (st share.SPState, found bool, code int16) {
	p, code := ss.localPartition(k)
	if code != 0 {
		return st, false, code
	}
	sh, code := ss.shard(p)
	if code != 0 {
		return st, false, code
	}
	defer sh.Unlock()
	cur, ok := sh.Get(k)
	if !ok {
		return st, false, 0
	}
	return cur.Clone(), true, 0
}

// delete is DeleteShareGroupState for one share-partition, here.
func (ss *shareStateService) delete(k share.StateKey, deadline time.Time) int16 {
	p, code := ss.localPartition(k)
	if code != 0 {
		return code
	}
	sh, code := ss.shard(p)
	if code != 0 {
		return code
	}
	defer sh.Unlock()
	recs, apply, ok := sh.Delete(k)
	if !ok {
		return 0
	}
	if code := ss.appendRecords(p, recs, deadline); code != 0 {
		return code
	}
	apply()
	return 0
}

// shareStateTimeout bounds a persister call with no tighter deadline.
const shareStateTimeout = 10 * time.Second

// persistCall is one persister call for one share-partition, as Kafka's
// PersisterStateManager makes it: to the coordinator of k (the leader of
// its __share_group_state partition), answered by local when that is
// this broker, else sent as req, the partition's answer taken by extract
// (ok false: the response does not hold it). A coordinator that is gone
// (not found, unreachable, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS) is looked up again after a short backoff,
// until deadline: a call never waits on a dead broker for longer than one
// failed connection.
func persistCall[R any](ss *shareStateService, k share.StateKey, deadline time.Time, local func() (R, int16), req kmsg.Request, extract func(kmsg.Response) (R, int16, bool)) (R, int16) {
	backoff := shareStateBackoff
	for {
		var r R
		code := kerr.CoordinatorNotAvailable.Code
		_, leader, err := ss.coordinatorFor(k)
		switch {
		case err != nil || leader < 0:
		case leader == ss.srv.cfg.NodeID:
			r, code = local()
		default:
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			kresp, err := ss.srv.sendToBroker(ctx, leader, req)
			cancel()
			if err == nil {
				var ok bool
				if r, code, ok = extract(kresp); !ok {
					code = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
		switch code {
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
		default:
			return r, code
		}
		if time.Until(deadline) <= backoff {
			return r, code
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ss.srv.closing:
			t.Stop()
			return r, code
		}
		backoff = min(2*backoff, shareStateMaxBackoff)
	}
}

// Backoffs between lookups of a share coordinator that is gone.
const (
	shareStateBackoff    = 50 * time.Millisecond
	shareStateMaxBackoff = 500 * time.Millisecond
)

// persistRead reads a share-partition's state from its coordinator, here
// or on another broker (the share-partition leader's side).
func (ss *shareStateService) persistRead(k share.StateKey, leaderEpoch int32, deadline time.Time) (share.SPState, bool, int16) {
	type result struct {
		st    share.SPState
		found bool
	}
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	res, code := persistCall(ss, k, deadline, func() (result, int16) {
		st, found, code := ss.read(k)
		return result{st, found}, code
	}, req, func(kr kmsg.Response) (result, int16, bool) {
		resp := kr.(*kmsg.ReadShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return result{}, 0, false
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode == kerr.InvalidRequest.Code {
			return result{}, 0, true // no state (Kafka's "Data not found")
		}
		if p.ErrorCode != 0 {
			return result{}, p.ErrorCode, true
		}
		st := share.SPState{StateEpoch: p.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: p.StartOffset}
		for _, b := range p.StateBatches {
			st.Batches = append(st.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
		}
		return result{st, true}, 0, true
	})
	return res.st, res.found, code
}

// persistWrite writes a share-partition's state to its coordinator.
func (ss *shareStateService) persistWrite(k share.StateKey, stateEpoch, leaderEpoch int32, start int64, bs []share.StateBatch, deadline time.Time) int16 {
	if f := ss.writeFault.Load(); f != nil {
		if code := (*f)(k); code != 0 {
			return code
		}
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = k.Partition, stateEpoch, leaderEpoch, start
	for _, b := range bs {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	_, code := persistCall(ss, k, deadline, func() (struct{}, int16) {
		code, _ := ss.write(k, stateEpoch, leaderEpoch, start, bs, deadline)
		return struct{}{}, code
	}, req, func(kr kmsg.Response) (struct{}, int16, bool) {
		resp := kr.(*kmsg.WriteShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return struct{}{}, 0, false
		}
		return struct{}{}, resp.Topics[0].Partitions[0].ErrorCode, true
	})
	return code
}

// persistInitialize sets a share-partition's state epoch and start
// offset at its coordinator (InitializeShareGroupState).
func (ss *shareStateService) persistInitialize(k share.StateKey, stateEpoch int32, start int64, deadline time.Time) int16 {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = k.Partition, stateEpoch, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	_, code := persistCall(ss, k, deadline, func() (struct{}, int16) {
		code, _ := ss.initialize(k, stateEpoch, start, deadline)
		return struct{}{}, code
	}, req, func(kr kmsg.Response) (struct{}, int16, bool) {
		resp := kr.(*kmsg.InitializeShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return struct{}{}, 0, false
		}
		return struct{}{}, resp.Topics[0].Partitions[0].ErrorCode, true
	})
	return code
}

// persistDelete deletes a share-partition's state at its coordinator.
func (ss *shareStateService) persistDelete(k share.StateKey, deadline time.Time) int16 {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = k.Partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	_, code := persistCall(ss, k, deadline, func() (struct{}, int16) {
		return struct{}{}, ss.delete(k, deadline)
	}, req, func(kr kmsg.Response) (struct{}, int16, bool) {
		resp := kr.(*kmsg.DeleteShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return struct{}{}, 0, false
		}
		return struct{}{}, resp.Topics[0].Partitions[0].ErrorCode, true
	})
	return code
}

// sharePersist writes sp's state if it changed since its last write: the
// share-partition leader's side, after an acquisition, acknowledgement,
// release, lock expiry or start offset move. Writes of one
// share-partition are ordered (WriteLock), each carrying the whole
// in-flight window (at most share.partition.max.record.locks offsets).
func (s *Server) sharePersist(group string, tp share.TopicPartition, sp *share.Partition) int16 {
	return s.sharePersistBy(group, tp, sp, time.Now().Add(shareStateTimeout))
}

// sharePersistBy is sharePersist giving up at deadline (waiting for an
// earlier write of sp included).
func (s *Server) sharePersistBy(group string, tp share.TopicPartition, sp *share.Partition, deadline time.Time) int16 {
	if !sp.WriteLockBy(deadline) {
		return kerr.RequestTimedOut.Code
	}
	defer sp.WriteUnlock()
	sp.Lock()
	start, batches, version, changed := sp.Snapshot()
	stateEpoch, leaderEpoch := sp.StateEpoch(), sp.LeaderEpoch()
	sp.Unlock()
	if !changed {
		return 0
	}
	k := share.StateKey{Group: group, Topic: tp.Topic, Partition: tp.Partition}
	code := s.shareState().persistWrite(k, stateEpoch, leaderEpoch, start, batches, deadline)
	switch code {
	case 0:
		sp.Lock()
		sp.Persisted(version)
		sp.Unlock()
	case kerr.FencedStateEpoch.Code, kerr.FencedLeaderEpoch.Code:
		// Another leader, or AlterShareGroupOffsets, wrote since: read
		// the state again at the next operation.
		sp.Lock()
		sp.Uninit()
		sp.Unlock()
	default:
		s.logLimited(&s.shareStateLog, slog.LevelWarn, "writing share state failed", "group", group, "partition", tp.Partition, "err", kerr.ErrorForCode(code))
	}
	return code
}

// shareLoad makes sp current for the topic partition's leaderEpoch: a
// share-partition loaded at another epoch (or never) reads its persisted
// state from the coordinator. State initialized with no start offset (by
// the group coordinator: -1) starts from init (share.auto.offset.reset),
// which the next write stores. A share-partition with no state, which its
// group's coordinator has not initialized, is not served: as Kafka's
// SharePartition, whose initialization fails then, the fetch answers it
// with shareNotInitialized. Called without sp's lock.
func (s *Server) shareLoad(group string, tp share.TopicPartition, sp *share.Partition, leaderEpoch int32, lim share.Limits, deadline time.Time, init func() int64) int16 {
	if !sp.WriteLockBy(deadline) {
		return kerr.RequestTimedOut.Code
	}
	defer sp.WriteUnlock()
	sp.Lock()
	current := sp.Initialized() && sp.LeaderEpoch() == leaderEpoch
	sp.Unlock()
	if current {
		return 0
	}
	k := share.StateKey{Group: group, Topic: tp.Topic, Partition: tp.Partition}
	st, found, code := s.shareState().persistRead(k, leaderEpoch, deadline)
	if code != 0 {
		return code
	}
	if !found {
		return shareNotInitialized
	}
	sp.Lock()
	defer sp.Unlock()
	if st.StartOffset < 0 {
		sp.Init(init())
	} else {
		sp.Restore(st.StartOffset, st.Batches, lim)
	}
	sp.SetEpochs(leaderEpoch, st.StateEpoch)
	return 0
}

// deleteGroup deletes the stored state of the share-partitions parts of
// group at their coordinators, as Kafka's group coordinator does when it
// deletes a share group or its offsets (DeleteShareGroupState: tombstones
// in __share_group_state), so that a group of that id created again starts
// from share.auto.offset.reset. parts are those the group coordinator
// recorded as initialized (coordinator/share initstate.go), in one request
// per coordinator (shareDeleteChunk partitions at most each).
func (ss *shareStateService) deleteGroup(group string, parts map[[16]byte][]int32, deadline time.Time) int16 {
	if len(parts) == 0 {
		return 0
	}
	st, ok := ss.srv.ctrl.Topic(shareStateTopic)
	if !ok || len(st.Partitions) == 0 {
		return 0 // no share state was ever written
	}
	n := int32(len(st.Partitions))
	byLeader := map[int32][]share.StateKey{}
	for id, ps := range parts {
		for _, p := range ps {
			k := share.StateKey{Group: group, Topic: id, Partition: p}
			leader := st.Partitions[recordbatch.PartitionFor(k.CoordinatorKey(), n)].Leader
			byLeader[leader] = append(byLeader[leader], k)
		}
	}
	var first int16
	fail := func(code int16) {
		if code != 0 && first == 0 {
			first = code
		}
	}
	for leader, keys := range byLeader {
		switch {
		case leader < 0:
			fail(kerr.CoordinatorNotAvailable.Code)
		case leader == ss.srv.cfg.NodeID:
			for _, k := range keys {
				fail(ss.delete(k, deadline))
			}
		default:
			for len(keys) > 0 {
				chunk := keys[:min(len(keys), shareDeleteChunk)]
				keys = keys[len(chunk):]
				fail(ss.sendDeletes(leader, group, chunk, deadline))
			}
		}
	}
	return first
}

// shareNotInitialized answers a fetch of a share-partition with no state:
// Kafka's SharePartition fails to initialize with the share coordinator's
// "Data not found" (INVALID_REQUEST), which it turns into
// UNKNOWN_SERVER_ERROR.
const shareNotInitialized int16 = -1 // UNKNOWN_SERVER_ERROR

// shareInitTimeout bounds the initialization of a group's new
// share-partitions, which a heartbeat waits for.
const shareInitTimeout = 5 * time.Second

// initializeGroup initializes the state of group's share-partitions at
// their coordinators (InitializeShareGroupState with the group epoch as
// state epoch and each topic's start offset, as Kafka's group coordinator)
// and returns those that succeeded. A share-partition that already has
// state (written before its group kept a record of it, or by an
// AlterShareGroupOffsets) keeps it and counts as initialized.
func (ss *shareStateService) initializeGroup(group string, epoch int32, topics []share.InitTopic, deadline time.Time) map[[16]byte][]int32 {
	var keys []share.StateKey
	var starts []int64
	for _, t := range topics {
		for _, p := range t.Partitions {
			keys = append(keys, share.StateKey{Group: group, Topic: t.ID, Partition: p})
			starts = append(starts, t.Start)
		}
	}
	done := make([]bool, len(keys))
	shareParallel(len(keys), func(i int) {
		k := keys[i]
		_, found, code := ss.persistRead(k, -1, deadline)
		if code == 0 && !found {
			code = ss.persistInitialize(k, epoch, starts[i], deadline)
		}
		if code != 0 {
			ss.srv.logLimited(&ss.srv.shareStateLog, slog.LevelWarn, "initializing share state failed", "group", group,
				"partition", k.Partition, "err", kerr.ErrorForCode(code))
		}
		done[i] = code == 0
	})
	out := map[[16]byte][]int32{}
	for i, k := range keys {
		if done[i] {
			out[k.Topic] = append(out[k.Topic], k.Partition)
		}
	}
	return out
}

// shareDeleteChunk bounds the partitions of one DeleteShareGroupState a
// group's deletion sends.
const shareDeleteChunk = 10000

// sendDeletes sends one DeleteShareGroupState for keys (one group) to
// broker leader and returns the first error.
func (ss *shareStateService) sendDeletes(leader int32, group string, keys []share.StateKey, deadline time.Time) int16 {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = group
	idx := map[[16]byte]int{}
	for _, k := range keys {
		i, ok := idx[k.Topic]
		if !ok {
			i = len(req.Topics)
			idx[k.Topic] = i
			rt := kmsg.NewDeleteShareGroupStateRequestTopic()
			rt.TopicID = k.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		rp.Partition = k.Partition
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	kresp, err := ss.srv.sendToBroker(ctx, leader, req)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	for _, rt := range kresp.(*kmsg.DeleteShareGroupStateResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				return rp.ErrorCode
			}
		}
	}
	return 0
}

// topicDeleted deletes the stored share-partition states of a deleted
// topic in the __share_group_state partitions this broker leads, as
// Kafka's share coordinator does when its topic is deleted: every broker
// is told of the deletion and tombstones the keys its shards hold.
func (ss *shareStateService) topicDeleted(id [16]byte) {
	st, ok := ss.srv.ctrl.Topic(shareStateTopic)
	if !ok {
		return
	}
	deadline := time.Now().Add(shareStateTimeout)
	for p := range int32(len(st.Partitions)) {
		if st.Partitions[p].Leader != ss.srv.cfg.NodeID {
			continue
		}
		sh, code := ss.shard(p)
		if code != 0 {
			continue
		}
		keys := sh.Keys(func(k share.StateKey) bool { return k.Topic == id })
		sh.Unlock()
		for _, k := range keys {
			if code := ss.delete(k, deadline); code != 0 {
				ss.srv.logger.Warn("deleting a deleted topic's share state failed", "partition", k.Partition, "err", kerr.ErrorForCode(code))
			}
		}
	}
}
