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
}

func (s *Server) shareState() *shareStateService {
	s.shareStateOnce.Do(func() {
		s.shareStateSvc = &shareStateService{
			srv:    s,
			log:    internalTopicLog{srv: s, topic: shareStateTopic, loadBuffer: s.cfg.Groups.ShareState.LoadBuffer},
			shards: map[int32]*share.StateShard{},
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
		sh = share.NewStateShard()
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

// appendRecords writes recs to partition p with acks=all.
func (ss *shareStateService) appendRecords(p int32, recs []share.StateRecord) int16 {
	b := recordbatch.NewBuilder(ss.srv.clock.Now().UnixMilli())
	for _, r := range recs {
		b.Add(r.Key, r.Value)
	}
	if err := ss.log.Append(p, b.Build()); err != nil {
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
func (ss *shareStateService) write(k share.StateKey, stateEpoch, leaderEpoch int32, start int64, bs []share.StateBatch) (int16, string) {
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
	if code := ss.appendRecords(p, []share.StateRecord{rec}); code != 0 {
		return code, ""
	}
	apply()
	return 0, ""
}

// initialize is InitializeShareGroupState for one share-partition, here.
func (ss *shareStateService) initialize(k share.StateKey, stateEpoch int32, start int64) (int16, string) {
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
	if code := ss.appendRecords(p, []share.StateRecord{rec}); code != 0 {
		return code, ""
	}
	apply()
	return 0, ""
}

// read returns a share-partition's state here; found is false for a key
// never written (Kafka answers it with StartOffset -1). A read with a
// leader epoch (not -1) records it, fencing older leaders' writes.
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
func (ss *shareStateService) delete(k share.StateKey) int16 {
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
	if code := ss.appendRecords(p, recs); code != 0 {
		return code
	}
	apply()
	return 0
}

// shareStateTimeout bounds one persister call to another broker.
const shareStateTimeout = 10 * time.Second

// persistRead reads a share-partition's state from its coordinator, here
// or on another broker (the share-partition leader's side).
func (ss *shareStateService) persistRead(k share.StateKey, leaderEpoch int32) (share.SPState, bool, int16) {
	_, leader, err := ss.coordinatorFor(k)
	if err != nil || leader < 0 {
		return share.SPState{}, false, kerr.CoordinatorNotAvailable.Code
	}
	if leader == ss.srv.cfg.NodeID {
		return ss.read(k)
	}
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), shareStateTimeout)
	defer cancel()
	kresp, err := ss.srv.sendToBroker(ctx, leader, req)
	if err != nil {
		return share.SPState{}, false, kerr.CoordinatorNotAvailable.Code
	}
	resp := kresp.(*kmsg.ReadShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return share.SPState{}, false, kerr.CoordinatorNotAvailable.Code
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode == kerr.InvalidRequest.Code {
		return share.SPState{}, false, 0 // no state (Kafka's "Data not found")
	}
	if p.ErrorCode != 0 {
		return share.SPState{}, false, p.ErrorCode
	}
	if p.StartOffset < 0 {
		return share.SPState{}, false, 0
	}
	st := share.SPState{StateEpoch: p.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: p.StartOffset}
	for _, b := range p.StateBatches {
		st.Batches = append(st.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
	}
	return st, true, 0
}

// persistWrite writes a share-partition's state to its coordinator.
func (ss *shareStateService) persistWrite(k share.StateKey, stateEpoch, leaderEpoch int32, start int64, bs []share.StateBatch) int16 {
	_, leader, err := ss.coordinatorFor(k)
	if err != nil || leader < 0 {
		return kerr.CoordinatorNotAvailable.Code
	}
	if leader == ss.srv.cfg.NodeID {
		code, _ := ss.write(k, stateEpoch, leaderEpoch, start, bs)
		return code
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
	ctx, cancel := context.WithTimeout(context.Background(), shareStateTimeout)
	defer cancel()
	kresp, err := ss.srv.sendToBroker(ctx, leader, req)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	resp := kresp.(*kmsg.WriteShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kerr.CoordinatorNotAvailable.Code
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// persistInitialize sets a share-partition's state epoch and start
// offset at its coordinator (InitializeShareGroupState).
func (ss *shareStateService) persistInitialize(k share.StateKey, stateEpoch int32, start int64) int16 {
	_, leader, err := ss.coordinatorFor(k)
	if err != nil || leader < 0 {
		return kerr.CoordinatorNotAvailable.Code
	}
	if leader == ss.srv.cfg.NodeID {
		code, _ := ss.initialize(k, stateEpoch, start)
		return code
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = k.Partition, stateEpoch, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), shareStateTimeout)
	defer cancel()
	kresp, err := ss.srv.sendToBroker(ctx, leader, req)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	resp := kresp.(*kmsg.InitializeShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kerr.CoordinatorNotAvailable.Code
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// persistDelete deletes a share-partition's state at its coordinator.
func (ss *shareStateService) persistDelete(k share.StateKey) int16 {
	_, leader, err := ss.coordinatorFor(k)
	if err != nil || leader < 0 {
		return kerr.CoordinatorNotAvailable.Code
	}
	if leader == ss.srv.cfg.NodeID {
		return ss.delete(k)
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = k.Partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), shareStateTimeout)
	defer cancel()
	kresp, err := ss.srv.sendToBroker(ctx, leader, req)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	resp := kresp.(*kmsg.DeleteShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kerr.CoordinatorNotAvailable.Code
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// sharePersist writes sp's state if it changed since its last write: the
// share-partition leader's side, after an acquisition, acknowledgement,
// release, lock expiry or start offset move. Writes of one
// share-partition are ordered (WriteLock), each carrying the whole
// in-flight window (at most share.partition.max.record.locks offsets).
func (s *Server) sharePersist(group string, tp share.TopicPartition, sp *share.Partition) int16 {
	sp.WriteLock()
	defer sp.WriteUnlock()
	sp.Lock()
	start, batches, version, changed := sp.Snapshot()
	stateEpoch, leaderEpoch := sp.StateEpoch(), sp.LeaderEpoch()
	sp.Unlock()
	if !changed {
		return 0
	}
	k := share.StateKey{Group: group, Topic: tp.Topic, Partition: tp.Partition}
	code := s.shareState().persistWrite(k, stateEpoch, leaderEpoch, start, batches)
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
// state from the coordinator; with none, init starts it (from
// share.auto.offset.reset) and the start is written. Called without sp's
// lock.
func (s *Server) shareLoad(group string, tp share.TopicPartition, sp *share.Partition, leaderEpoch int32, lim share.Limits, init func() int64) int16 {
	sp.WriteLock()
	defer sp.WriteUnlock()
	sp.Lock()
	current := sp.Initialized() && sp.LeaderEpoch() == leaderEpoch
	sp.Unlock()
	if current {
		return 0
	}
	k := share.StateKey{Group: group, Topic: tp.Topic, Partition: tp.Partition}
	st, found, code := s.shareState().persistRead(k, leaderEpoch)
	if code != 0 {
		return code
	}
	sp.Lock()
	defer sp.Unlock()
	if found {
		sp.Restore(st.StartOffset, st.Batches, lim)
		sp.SetEpochs(leaderEpoch, st.StateEpoch)
		return 0
	}
	sp.Init(init())
	sp.SetEpochs(leaderEpoch, 0)
	return 0
}
