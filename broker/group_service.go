package broker

// The group coordinator's side of the broker: its configuration (mapped
// from config.Groups), the __consumer_offsets topic (created on first use,
// compacted, internal), and the adapter through which the coordinator
// appends to and replays that topic's partitions. The coordinator starts
// with the broker (Start), before clients come, and Close closes it.

import (
	"slices"
	"strconv"
	"sync"

	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/coordinator/share"
)

// groupSettings is what the broker needs beyond the coordinator's Config.
type groupSettings struct {
	coord             group.Config
	replicationFactor int16 // offsets.topic.replication.factor (3, clamped to live brokers)
	segmentBytes      int64 // offsets.topic.segment.bytes (100 MiB)
	loadBufferBytes   int64 // offsets.load.buffer.size (5 MiB)
}

// groupSettingsFrom maps the typed group settings (config.Groups) onto the
// coordinator's Config and the broker's own.
func (s *Server) groupSettingsFrom(g config.Groups) groupSettings {
	cfg := group.DefaultConfig()
	cfg.Logger = s.logger
	cfg.Now = s.clock.Now
	cfg.NumPartitions = g.OffsetsTopicPartitions
	cfg.OffsetMetadataMaxBytes = g.OffsetMetadataMaxBytes
	cfg.OffsetsRetention = g.OffsetsRetention
	cfg.RetentionCheckInterval = g.OffsetsRetentionCheck
	cfg.InitialRebalanceDelay = g.InitialRebalanceDelay
	cfg.MinSessionTimeout = g.MinSessionTimeout
	cfg.MaxSessionTimeout = g.MaxSessionTimeout
	cfg.MaxSize = g.MaxSize
	cfg.ConsumerSessionTimeout = g.ConsumerSessionTimeout
	cfg.ConsumerHeartbeatInterval = g.ConsumerHeartbeatInterval
	cfg.ConsumerTimeouts = s.groupConsumerTimeouts(g.ConsumerSessionTimeout, g.ConsumerHeartbeatInterval)
	cfg.ConsumerMaxSize = g.ConsumerMaxSize
	if len(g.ConsumerAssignors) > 0 {
		cfg.ConsumerAssignors = slices.Clone(g.ConsumerAssignors)
	}
	cfg.ConsumerProtocol = g.ConsumerProtocol
	cfg.StreamsProtocol = g.StreamsProtocol
	cfg.TopologyDescriptions = g.StreamsTopologyDescriptions
	cfg.IsShareGroup = func(id string) bool { return s.shares() != nil && s.shares().IsShareGroup(id) }
	cfg.ShareLoaded = func(p int32, recs []group.ShareRecord) {
		// The share coordinator starts before the group coordinator.
		sc := s.shares()
		if sc == nil {
			return
		}
		rs := make([]share.Record, len(recs))
		for i, r := range recs {
			rs[i] = share.Record{Key: r.Key, Value: r.Value}
		}
		sc.Load(p, rs)
	}
	cfg.Streams.Session, cfg.Streams.Heartbeat = g.StreamsSessionTimeout, g.StreamsHeartbeatInterval
	cfg.Streams.NumStandby, cfg.Streams.MaxSize = g.StreamsNumStandby, g.StreamsMaxSize
	cfg.StreamsSettings = s.groupStreamsSettings(cfg.Streams)
	cfg.MigrationPolicy = g.ConsumerMigrationPolicy
	return groupSettings{
		coord:             cfg,
		replicationFactor: g.OffsetsTopicReplication,
		segmentBytes:      g.OffsetsTopicSegmentBytes,
		loadBufferBytes:   g.OffsetsLoadBufferSize,
	}
}

// groupService is the broker's group coordinator and the state around it.
type groupService struct {
	srv      *Server
	settings groupSettings
	coord    *group.Coordinator
	createMu sync.Mutex // one creation of __consumer_offsets at a time
}

// groups returns the server's group service (started in Start).
func (s *Server) groups() *groupService { return s.groupSvc }

func (s *Server) startGroupService() *groupService {
	settings := s.groupSettingsFrom(s.cfg.Groups)
	adapter := &offsetsTopic{internalTopicLog{srv: s, topic: group.TopicName, loadBuffer: settings.loadBufferBytes}}
	svc := &groupService{srv: s, settings: settings}
	svc.coord = group.New(settings.coord, adapter, adapter)
	s.ctrl.Listen(func(ch controller.TopicChange) {
		svc.coord.TopicsChanged()
		if ch.Deleted {
			svc.coord.TopicDeleted(ch.Topic.Name)
		}
		if ch.Topic.Name == group.TopicName {
			// New topic or new leaders: load what this broker now leads.
			svc.coord.LoadOwned()
		}
	})
	s.logger.Info("group coordinator started", "offsets.topic.num.partitions", settings.coord.NumPartitions,
		"consumer_protocol", settings.coord.ConsumerProtocol)
	return svc
}

// ensureOffsetsTopic creates __consumer_offsets if it does not exist yet, as
// Kafka does on the first FindCoordinator for a group: compacted, internal,
// offsets.topic.num.partitions partitions, offsets.topic.replication.factor
// replicas (at most the live brokers).
func (g *groupService) ensureOffsetsTopic() (controller.TopicInfo, error) {
	return g.srv.ensureInternalTopic(&g.createMu, group.TopicName, g.settings.replicationFactor, func(int16) controller.CreateTopicRequest {
		return controller.CreateTopicRequest{
			NumPartitions: g.settings.coord.NumPartitions,
			Configs: map[string]string{
				"cleanup.policy":   "compact",
				"segment.bytes":    strconv.FormatInt(g.settings.segmentBytes, 10),
				"compression.type": "producer",
			},
		}
	}, g.coord.LoadOwned)
}

// offsetsTopic implements group.Log and group.Metadata over the broker's
// partitions and metadata.
type offsetsTopic struct{ internalTopicLog }

func (o *offsetsTopic) LeaderEpoch(p int32) (int32, bool) {
	part, err := o.partition(p)
	if err != nil {
		return 0, false
	}
	return part.LeaderEpoch(), true
}

func (o *offsetsTopic) Topic(name string) (group.TopicMeta, bool) {
	t, ok := o.srv.ctrl.Topic(name)
	if !ok {
		return group.TopicMeta{}, false
	}
	return group.TopicMeta{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))}, true
}

func (o *offsetsTopic) TopicByID(id [16]byte) (group.TopicMeta, bool) {
	t, ok := o.srv.ctrl.TopicByID(id)
	if !ok {
		return group.TopicMeta{}, false
	}
	return group.TopicMeta{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))}, true
}

func (o *offsetsTopic) Topics() []group.TopicMeta {
	ts := o.srv.ctrl.Topics()
	out := make([]group.TopicMeta, 0, len(ts))
	for _, t := range ts {
		out = append(out, group.TopicMeta{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))})
	}
	return out
}
