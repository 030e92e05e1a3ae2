package broker

// The group coordinator's side of the broker: its configuration (read from
// the server properties under Kafka's keys), the __consumer_offsets topic
// (created on first use, compacted, internal), and the adapter through which
// the coordinator appends to and replays that topic's partitions.
//
// The coordinator is started on the first group request and stopped when
// the broker closes. It is kept in groupServices, keyed by server, because
// Server has no field for it yet: see groupService.

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
)

// transactionStateTopic is the transaction coordinator's topic (issue 5).
const transactionStateTopic = "__transaction_state"

// groupSettings is what the broker needs beyond the coordinator's Config.
type groupSettings struct {
	coord             group.Config
	replicationFactor int16 // offsets.topic.replication.factor (3, clamped to live brokers)
	segmentBytes      int64 // offsets.topic.segment.bytes (100 MiB)
	loadBufferBytes   int64 // offsets.load.buffer.size (5 MiB)
}

// coordinatorSetting reads an integer setting of the group or transaction
// coordinator from the broker properties; a missing key gives def, and an
// unreadable or too small value (config.go has already checked the types)
// gives def with a warning.
func (s *Server) coordinatorSetting(props map[string]string, key string, def, min int64) int64 {
	raw, ok := props[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || n < min {
		s.logger.Warn("invalid coordinator setting, using the default", "key", key, "value", raw, "default", def)
		return def
	}
	return n
}

// groupSettingsFrom reads the group coordinator's settings from the broker
// properties, with Kafka's defaults; an unreadable value (config.go has
// already checked the types) falls back to the default.
func (s *Server) groupSettingsFrom(props map[string]string) groupSettings {
	num := func(key string, def, min int64) int64 { return s.coordinatorSetting(props, key, def, min) }
	ms := func(key string, def int64) time.Duration {
		return time.Duration(num(key, def, 0)) * time.Millisecond
	}
	cfg := group.DefaultConfig()
	cfg.Logger = s.logger
	cfg.NumPartitions = int32(num("offsets.topic.num.partitions", 50, 1))
	cfg.OffsetMetadataMaxBytes = int32(num("offset.metadata.max.bytes", 4096, 0))
	cfg.OffsetsRetention = time.Duration(num("offsets.retention.minutes", 7*24*60, 1)) * time.Minute
	cfg.RetentionCheckInterval = time.Duration(num("offsets.retention.check.interval.ms", 600000, 1)) * time.Millisecond
	cfg.InitialRebalanceDelay = ms("group.initial.rebalance.delay.ms", 3000)
	cfg.MinSessionTimeout = ms("group.min.session.timeout.ms", 6000)
	cfg.MaxSessionTimeout = ms("group.max.session.timeout.ms", 1800000)
	cfg.MaxSize = int32(num("group.max.size", math.MaxInt32, 1))
	cfg.ConsumerSessionTimeout = ms("group.consumer.session.timeout.ms", 45000)
	cfg.ConsumerHeartbeatInterval = ms("group.consumer.heartbeat.interval.ms", 5000)
	cfg.ConsumerMaxSize = int32(num("group.consumer.max.size", math.MaxInt32, 1))
	if raw, ok := props["group.consumer.assignors"]; ok {
		var names []string
		for _, a := range strings.Split(raw, ",") {
			a = strings.TrimSpace(a)
			switch {
			case a == "uniform" || strings.HasSuffix(a, ".UniformAssignor"):
				names = append(names, "uniform")
			case a == "range" || strings.HasSuffix(a, ".RangeAssignor"):
				names = append(names, "range")
			case a != "":
				s.logger.Warn("unsupported consumer group assignor ignored", "key", "group.consumer.assignors", "assignor", a)
			}
		}
		if len(names) > 0 {
			cfg.ConsumerAssignors = names
		}
	}
	if raw, ok := props["group.coordinator.rebalance.protocols"]; ok {
		cfg.ConsumerProtocol = false
		for _, p := range strings.Split(raw, ",") {
			if strings.TrimSpace(p) == "consumer" {
				cfg.ConsumerProtocol = true
			}
		}
	}
	return groupSettings{
		coord:             cfg,
		replicationFactor: int16(num("offsets.topic.replication.factor", 3, 1)),
		segmentBytes:      num("offsets.topic.segment.bytes", 100<<20, 1),
		loadBufferBytes:   num("offsets.load.buffer.size", 5<<20, 1),
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
	settings := s.groupSettingsFrom(s.cfg.Props)
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

func (o *offsetsTopic) Leads(p int32) bool {
	_, err := o.partition(p)
	return err == nil
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
