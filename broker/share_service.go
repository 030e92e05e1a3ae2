package broker

// The share coordinator's side of the broker (coordinator/share): its
// configuration from the broker's group.share.* settings, whether this
// broker coordinates a group (the leader of its __consumer_offsets
// partition, as for every group), the group configs (share.* keys) from
// the controller's cache, and topic lookups. The share-partitions live on
// the broker leading each topic partition; their state is persisted in
// __share_group_state (sharestate.go); the groups' membership is in
// __consumer_offsets, written and loaded through the group coordinator.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/coordinator/share"
)

// shares returns the server's share coordinator (built in Start).
func (s *Server) shares() *share.Coordinator { return s.shareCoord }

func (s *Server) startShareCoordinator() *share.Coordinator {
	cfg := share.DefaultConfig()
	g := s.cfg.Groups
	cfg.SessionTimeout = g.ShareSessionTimeout
	cfg.HeartbeatInterval = g.ShareHeartbeatInterval
	cfg.MaxSize = int(g.ShareMaxSize)
	cfg.LockDuration = g.ShareRecordLockDuration
	cfg.DeliveryLimit = int16(min(g.ShareDeliveryCountLimit, 32767))
	cfg.MaxRecordLocks = int(g.SharePartitionMaxLocks)
	cfg.MaxShareSessions = int(g.ShareMaxSessions)
	cfg.Logger = s.logger
	cfg.Now = s.clock.Now
	cfg.Owns = func(id string) int16 {
		gs := s.groups()
		if gs == nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		// The leader of the group's partition, once it has loaded it (and
		// with it the share groups' records).
		return gs.coord.Coordinates(id)
	}
	cfg.Append = func(id string, recs []share.Record) error {
		gs := s.groups()
		if gs == nil {
			return kerr.CoordinatorNotAvailable
		}
		rs := make([]group.ShareRecord, len(recs))
		for i, r := range recs {
			rs[i] = group.ShareRecord{Key: r.Key, Value: r.Value}
		}
		return gs.coord.AppendShare(id, rs)
	}
	cfg.Expired = func(id string) {
		s.bg.Go(func() {
			if sc := s.shares(); sc != nil {
				_ = sc.Flush(id) // a failure is logged; the next change writes it
			}
		})
	}
	cfg.TopicName = func(id [16]byte) (string, bool) {
		t, ok := s.ctrl.TopicByID(id)
		return t.Name, ok
	}
	cfg.PartitionOf = func(id string) int32 {
		if gs := s.groups(); gs != nil {
			return gs.coord.PartitionFor(id)
		}
		return group.PartitionFor(id, s.cfg.Groups.OffsetsTopicPartitions)
	}
	cfg.GroupConfigs = s.ctrl.GroupConfigs
	cfg.Topic = func(name string) ([16]byte, int32, bool) {
		t, ok := s.ctrl.Topic(name)
		if !ok {
			return [16]byte{}, 0, false
		}
		return t.ID, int32(len(t.Partitions)), true
	}
	cfg.PartitionExists = func(tp share.TopicPartition) bool {
		t, ok := s.ctrl.TopicByID(tp.Topic)
		return ok && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions)
	}
	cfg.InitializeState = func(group string, epoch int32, topics []share.InitTopic) map[[16]byte][]int32 {
		return s.shareState().initializeGroup(group, epoch, topics, time.Now().Add(shareInitTimeout))
	}
	cfg.Released = func(groupID string, tp share.TopicPartition, p *share.Partition) {
		s.bg.Go(func() { s.sharePersist(groupID, tp, p) })
	}
	sc := share.New(cfg)
	s.ctrl.Listen(func(ch controller.TopicChange) {
		if ch.Deleted {
			groups := sc.TopicDeleted(ch.Topic.ID) // its share-partitions go with it
			id := ch.Topic.ID
			s.bg.Go(func() { s.shareState().topicDeleted(id) }) // and their stored state
			if len(groups) > 0 {
				// The groups' records of their initialized partitions
				// (a failed write is logged; the next change writes it).
				s.bg.Go(func() {
					for _, g := range groups {
						_ = sc.Flush(g)
					}
				})
			}
		}
	})
	return sc
}
