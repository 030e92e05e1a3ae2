package config

// The settings of one concern each: replication, the group and transaction
// coordinators, fetch sessions and shutdown, read from Kafka's keys with the
// catalog's defaults and Kafka's validators (ReplicationConfigs,
// GroupCoordinatorConfig, TransactionStateManagerConfigs,
// TransactionLogConfig, ServerConfigs). Where Kafka has no validator but a
// value would break Strait (a zero ticker period, a negative size), Strait
// refuses it at start with the same "Value must be at least" message.

import (
	"math"
	"strings"
	"time"
)

// Replication is how followers fetch and how leaders judge them
// (ReplicaManager's settings), and the broker's registration lease.
type Replication struct {
	LagTimeMax        time.Duration // replica.lag.time.max.ms (30 s)
	FetchBackoff      time.Duration // replica.fetch.backoff.ms (1 s)
	FetchWaitMax      time.Duration // replica.fetch.wait.max.ms (500 ms)
	FetchMinBytes     int32         // replica.fetch.min.bytes (1)
	FetchResponseMax  int32         // replica.fetch.response.max.bytes (10 MiB)
	FetchMaxBytes     int32         // replica.fetch.max.bytes (1 MiB), per partition
	HighWatermarkSync time.Duration // replica.high.watermark.checkpoint.interval.ms (5 s)
	// RecoveryThreadsPerDataDir is num.recovery.threads.per.data.dir (2):
	// logs opened or closed at a time per log directory.
	RecoveryThreadsPerDataDir int
	// SessionTimeout is broker.session.timeout.ms (9 s): how long the
	// broker's registration lease outlives its last heartbeat.
	SessionTimeout time.Duration
	// QuotaWindowNum and QuotaWindowSizeSeconds are the replication
	// throttles' rate windows: replication.quota.window.num (11) samples of
	// replication.quota.window.size.seconds (1).
	QuotaWindowNum         int32
	QuotaWindowSizeSeconds int32
	// The replication throttles in bytes a second, math.MaxInt64 when not
	// set: leader.replication.throttled.rate and
	// follower.replication.throttled.rate (ThrottledRates). They are
	// dynamic only, as in Kafka: this broker's value, else the cluster
	// default's (WithDynamic); the static properties never set them.
	LeaderThrottledRate   int64
	FollowerThrottledRate int64
	// AlterLogDirsIORate is replica.alter.log.dirs.io.max.bytes.per.second
	// (dynamic only, as the two above): the bound on copying into future logs.
	AlterLogDirsIORate int64
	// RackAwareSelector is replica.selector.class set to Kafka's
	// RackAwareReplicaSelector (KIP-392): a consumer giving its rack is sent
	// to an in-sync replica in that rack. Unset, or LeaderSelector: the
	// leader serves consumers.
	RackAwareSelector bool
}

// LeaseTTLSeconds is SessionTimeout in whole seconds, rounded up (etcd
// leases count seconds).
func (r Replication) LeaseTTLSeconds() int64 {
	return int64((r.SessionTimeout + time.Second - 1) / time.Second)
}

func parseReplication(p *props) Replication {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	return Replication{
		LagTimeMax:                ms(p.longAtLeast("replica.lag.time.max.ms", 1)),
		FetchBackoff:              ms(int64(p.intAtLeast("replica.fetch.backoff.ms", 0))),
		FetchWaitMax:              ms(int64(p.intAtLeast("replica.fetch.wait.max.ms", 0))),
		FetchMinBytes:             p.intAtLeast("replica.fetch.min.bytes", 0),
		FetchResponseMax:          p.intAtLeast("replica.fetch.response.max.bytes", 0),
		FetchMaxBytes:             p.intAtLeast("replica.fetch.max.bytes", 0),
		HighWatermarkSync:         ms(p.longAtLeast("replica.high.watermark.checkpoint.interval.ms", 1)),
		RecoveryThreadsPerDataDir: int(p.intAtLeast("num.recovery.threads.per.data.dir", 1)),
		SessionTimeout:            ms(int64(p.intAtLeast("broker.session.timeout.ms", 1))),
		QuotaWindowNum:            p.intAtLeast("replication.quota.window.num", 1),
		QuotaWindowSizeSeconds:    p.intAtLeast("replication.quota.window.size.seconds", 1),
		LeaderThrottledRate:       math.MaxInt64,
		FollowerThrottledRate:     math.MaxInt64,
		AlterLogDirsIORate:        math.MaxInt64,
		RackAwareSelector:         strings.TrimSpace(p.raw("replica.selector.class")) == RackAwareReplicaSelector,
	}
}

// Groups is the group coordinator's configuration (GroupCoordinatorConfig)
// and its topic's, __consumer_offsets.
type Groups struct {
	OffsetsTopicPartitions    int32         // offsets.topic.num.partitions (50)
	OffsetsTopicReplication   int16         // offsets.topic.replication.factor (3, clamped to the live brokers)
	OffsetsTopicSegmentBytes  int64         // offsets.topic.segment.bytes (100 MiB)
	OffsetsLoadBufferSize     int64         // offsets.load.buffer.size (5 MiB)
	OffsetMetadataMaxBytes    int32         // offset.metadata.max.bytes (4096)
	OffsetsRetention          time.Duration // offsets.retention.minutes (7 days)
	OffsetsRetentionCheck     time.Duration // offsets.retention.check.interval.ms (10 min)
	InitialRebalanceDelay     time.Duration // group.initial.rebalance.delay.ms (3 s)
	MinSessionTimeout         time.Duration // group.min.session.timeout.ms (6 s)
	MaxSessionTimeout         time.Duration // group.max.session.timeout.ms (30 min)
	MaxSize                   int32         // group.max.size (unbounded)
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms (45 s)
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms (5 s)
	ConsumerMaxSize           int32         // group.consumer.max.size (unbounded)
	// ConsumerAssignors are group.consumer.assignors as Strait names them
	// ("uniform", "range"), the default first; others are dropped with a
	// warning.
	ConsumerAssignors []string
	// ConsumerProtocol is whether group.coordinator.rebalance.protocols
	// enables the consumer protocol (KIP-848).
	ConsumerProtocol bool

	// Share groups (KIP-932).
	ShareSessionTimeout     time.Duration // group.share.session.timeout.ms (45 s)
	ShareHeartbeatInterval  time.Duration // group.share.heartbeat.interval.ms (5 s)
	ShareMaxSize            int32         // group.share.max.size (200)
	ShareRecordLockDuration time.Duration // group.share.record.lock.duration.ms (30 s)
	ShareDeliveryCountLimit int32         // group.share.delivery.count.limit (5)
	SharePartitionMaxLocks  int32         // group.share.partition.max.record.locks (2000)
	ShareMaxSessions        int32         // group.share.max.share.sessions (2000)
	// ShareState is the share coordinator's __share_group_state (share.coordinator.*).
	ShareState ShareStateTopic
	// StreamsProtocol is whether group.coordinator.rebalance.protocols
	// enables the streams protocol (KIP-1071).
	StreamsProtocol          bool
	StreamsSessionTimeout    time.Duration // group.streams.session.timeout.ms (45 s)
	StreamsHeartbeatInterval time.Duration // group.streams.heartbeat.interval.ms (5 s)
	StreamsNumStandby        int32         // group.streams.num.standby.replicas (0)
	StreamsMaxSize           int32         // group.streams.max.size (unbounded)
	// StreamsTopologyDescriptions: group.streams.topology.description.plugin.class
	// is Kafka's InMemoryTopologyDescriptionPlugin (KIP-1331).
	StreamsTopologyDescriptions bool
	// ConsumerMigrationPolicy is group.consumer.migration.policy in lower
	// case: bidirectional, upgrade, downgrade or disabled.
	ConsumerMigrationPolicy string
}

// ShareStateTopic is the shape of __share_group_state and how the share
// coordinator writes it (Kafka's share.coordinator.* keys).
type ShareStateTopic struct {
	Partitions    int32 // share.coordinator.state.topic.num.partitions (50)
	Replication   int16 // share.coordinator.state.topic.replication.factor (3, clamped to the live brokers)
	MinISR        int32 // share.coordinator.state.topic.min.isr (2)
	SegmentBytes  int64 // share.coordinator.state.topic.segment.bytes (100 MiB)
	LoadBuffer    int64 // share.coordinator.load.buffer.size (5 MiB)
	SnapshotEvery int32 // share.coordinator.snapshot.update.records.per.snapshot (500)
	MaxEntries    int64 // strait.share.coordinator.max.state.entries (2,000,000): states plus their batches held
}

func parseGroups(p *props) (Groups, []string) {
	ms := func(key string, min int64) time.Duration {
		return time.Duration(p.intAtLeast(key, min)) * time.Millisecond
	}
	g := Groups{
		OffsetsTopicPartitions:    p.intAtLeast("offsets.topic.num.partitions", 1),
		OffsetMetadataMaxBytes:    p.intAtLeast("offset.metadata.max.bytes", 0),
		OffsetsRetention:          time.Duration(p.intAtLeast("offsets.retention.minutes", 1)) * time.Minute,
		OffsetsRetentionCheck:     time.Duration(p.longAtLeast("offsets.retention.check.interval.ms", 1)) * time.Millisecond,
		InitialRebalanceDelay:     ms("group.initial.rebalance.delay.ms", 0),
		MinSessionTimeout:         ms("group.min.session.timeout.ms", 0),
		MaxSessionTimeout:         ms("group.max.session.timeout.ms", 0),
		MaxSize:                   p.intAtLeast("group.max.size", 1),
		ConsumerSessionTimeout:    ms("group.consumer.session.timeout.ms", 1),
		ConsumerHeartbeatInterval: ms("group.consumer.heartbeat.interval.ms", 1),
		ConsumerMaxSize:           p.intAtLeast("group.consumer.max.size", 1),
		OffsetsTopicReplication:   int16(p.intAtLeast("offsets.topic.replication.factor", 1)),
		OffsetsTopicSegmentBytes:  int64(p.intAtLeast("offsets.topic.segment.bytes", 1)),
		OffsetsLoadBufferSize:     int64(p.intAtLeast("offsets.load.buffer.size", 1)),
		ShareSessionTimeout:       ms("group.share.session.timeout.ms", 1),
		ShareHeartbeatInterval:    ms("group.share.heartbeat.interval.ms", 1),
		ShareMaxSize:              p.intAtLeast("group.share.max.size", 1),
		ShareRecordLockDuration:   ms("group.share.record.lock.duration.ms", 1000),
		ShareDeliveryCountLimit:   p.intAtLeast("group.share.delivery.count.limit", 2),
		SharePartitionMaxLocks:    p.intAtLeast("group.share.partition.max.record.locks", 100),
		ShareMaxSessions:          p.intAtLeast("group.share.max.share.sessions", 1),
		ShareState: ShareStateTopic{
			Partitions:    p.intAtLeast("share.coordinator.state.topic.num.partitions", 1),
			Replication:   int16(p.intAtLeast("share.coordinator.state.topic.replication.factor", 1)),
			MinISR:        p.intAtLeast("share.coordinator.state.topic.min.isr", 1),
			SegmentBytes:  int64(p.intAtLeast("share.coordinator.state.topic.segment.bytes", 1)),
			LoadBuffer:    int64(p.intAtLeast("share.coordinator.load.buffer.size", 1)),
			SnapshotEvery: p.intAtLeast("share.coordinator.snapshot.update.records.per.snapshot", 0),
			MaxEntries:    p.longAtLeast("strait.share.coordinator.max.state.entries", 1),
		},
		StreamsSessionTimeout:    ms("group.streams.session.timeout.ms", 1),
		StreamsHeartbeatInterval: ms("group.streams.heartbeat.interval.ms", 1),
		StreamsNumStandby:        p.intAtLeast("group.streams.num.standby.replicas", 0),
		StreamsMaxSize:           p.intAtLeast("group.streams.max.size", 1),
		StreamsTopologyDescriptions: strings.TrimSpace(p.raw("group.streams.topology.description.plugin.class")) ==
			InMemoryTopologyDescriptionPlugin,
	}
	switch v := strings.ToLower(p.str("group.consumer.migration.policy")); v {
	case "bidirectional", "upgrade", "downgrade", "disabled":
		g.ConsumerMigrationPolicy = v
	default:
		p.fail(invalidValue("group.consumer.migration.policy", p.raw("group.consumer.migration.policy"),
			"String must be one of (case insensitive): BIDIRECTIONAL, UPGRADE, DOWNGRADE, DISABLED"))
	}
	var warnings []string
	for _, a := range parseCsvList(p.str("group.consumer.assignors")) {
		switch {
		case a == "uniform" || strings.HasSuffix(a, ".UniformAssignor"):
			g.ConsumerAssignors = append(g.ConsumerAssignors, "uniform")
		case a == "range" || strings.HasSuffix(a, ".RangeAssignor"):
			g.ConsumerAssignors = append(g.ConsumerAssignors, "range")
		default:
			warnings = append(warnings, "Unsupported consumer group assignor "+a+" in group.consumer.assignors is ignored.")
		}
	}
	// ValidList.in(GroupType.documentValidValues()): the enum order.
	for _, proto := range parseList(p.str("group.coordinator.rebalance.protocols")) {
		if err := validIn("group.coordinator.rebalance.protocols", proto, "consumer", "classic", "share", "streams"); err != nil {
			p.fail(err)
		}
		g.ConsumerProtocol = g.ConsumerProtocol || proto == "consumer"
		g.StreamsProtocol = g.StreamsProtocol || proto == "streams"
	}
	return g, warnings
}

// Transactions is the transaction coordinator's configuration
// (TransactionStateManagerConfigs, TransactionLogConfig) and its topic's,
// __transaction_state.
type Transactions struct {
	MaxTimeout                time.Duration // transaction.max.timeout.ms (15 min)
	TransactionalIDExpiration time.Duration // transactional.id.expiration.ms (7 days)
	AbortTimedOutInterval     time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s)
	RemoveExpiredInterval     time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms (1 h)
	StateLogPartitions        int32         // transaction.state.log.num.partitions (50)
	StateLogReplication       int16         // transaction.state.log.replication.factor (3, clamped to the live brokers)
	StateLogMinISR            int32         // transaction.state.log.min.isr (2)
	StateLogSegmentBytes      int64         // transaction.state.log.segment.bytes (100 MiB)
	StateLogLoadBufferSize    int64         // transaction.state.log.load.buffer.size (5 MiB)
	PartitionVerification     bool          // transaction.partition.verification.enable (true)
}

func parseTransactions(p *props) Transactions {
	ms := func(key string) time.Duration { return time.Duration(p.intAtLeast(key, 1)) * time.Millisecond }
	return Transactions{
		MaxTimeout:                ms("transaction.max.timeout.ms"),
		TransactionalIDExpiration: ms("transactional.id.expiration.ms"),
		AbortTimedOutInterval:     ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		RemoveExpiredInterval:     ms("transaction.remove.expired.transaction.cleanup.interval.ms"),
		StateLogPartitions:        p.intAtLeast("transaction.state.log.num.partitions", 1),
		StateLogReplication:       int16(p.intAtLeast("transaction.state.log.replication.factor", 1)),
		StateLogMinISR:            p.intAtLeast("transaction.state.log.min.isr", 1),
		StateLogSegmentBytes:      int64(p.intAtLeast("transaction.state.log.segment.bytes", 1)),
		StateLogLoadBufferSize:    int64(p.intAtLeast("transaction.state.log.load.buffer.size", 1)),
		PartitionVerification:     p.bool("transaction.partition.verification.enable"),
	}
}

// FetchSessions is the incremental fetch session cache's size (KIP-227).
type FetchSessions struct {
	CacheSlots int // max.incremental.fetch.session.cache.slots (1000); 0 disables sessions
}

func parseFetchSessions(p *props) FetchSessions {
	return FetchSessions{CacheSlots: int(p.intAtLeast("max.incremental.fetch.session.cache.slots", 0))}
}

// Shutdown is how the broker leaves the cluster.
type Shutdown struct {
	// Controlled is controlled.shutdown.enable (true): move leadership away
	// and leave the ISRs before closing, instead of waiting for the lease
	// to expire.
	Controlled bool
}

// Quotas is reserved for client quotas (quota.window.*, client.quota.*):
// their keys are accepted and type-checked today, and will be parsed here.
type Quotas struct{}

// crossCheck is KafkaConfig.validateValues' requirements across keys, for the
// keys Strait acts on.
func (c *Config) crossCheck() error {
	r := c.Replication
	if r.FetchWaitMax > r.LagTimeMax {
		return &ConfigError{Key: "replica.fetch.wait.max.ms", Message: "requirement failed: replica.fetch.wait.max.ms should always be " +
			"less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR"}
	}
	return nil
}
