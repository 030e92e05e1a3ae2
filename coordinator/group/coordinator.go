package group

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/internal/background"
	"github.com/strait/strait/recordbatch"
)

// TopicName is Kafka's name for the offsets topic.
const TopicName = recordbatch.ConsumerOffsetsTopic

// Config holds the broker settings the coordinator uses, under Kafka's names.
type Config struct {
	NumPartitions          int32         // offsets.topic.num.partitions (50)
	OffsetMetadataMaxBytes int32         // offset.metadata.max.bytes (4096)
	OffsetsRetention       time.Duration // offsets.retention.minutes (7 days)
	RetentionCheckInterval time.Duration // offsets.retention.check.interval.ms (10 min)

	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms (3 s)
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms (6 s)
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms (30 min)
	MaxSize               int32         // group.max.size (unbounded)
	// NewMemberJoinTimeout bounds how long a new member's parked JoinGroup
	// may wait (Kafka's fixed 5 minutes).
	NewMemberJoinTimeout time.Duration

	ConsumerProtocol          bool          // group.coordinator.rebalance.protocols has "consumer"
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms (45 s)
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms (5 s)
	ConsumerMaxSize           int32         // group.consumer.max.size (unbounded)
	ConsumerAssignors         []string      // group.consumer.assignors: "uniform", "range"; the first is the default
	// MigrationPolicy is group.consumer.migration.policy, lower case:
	// "bidirectional" (Kafka's default, also for ""), "upgrade",
	// "downgrade" or "disabled".
	MigrationPolicy string
	// ConsumerTimeouts, when set, returns the session timeout and heartbeat
	// interval of one consumer group: its group configs (consumer.session.timeout.ms,
	// consumer.heartbeat.interval.ms) over the two above. It is called on every
	// heartbeat, so a change reaches the running group at its members' next one.
	ConsumerTimeouts func(groupID string) (session, heartbeat time.Duration)

	StreamsProtocol bool // group.coordinator.rebalance.protocols has "streams"
	// TopologyDescriptions is group.streams.topology.description.plugin.class
	// naming Kafka's InMemoryTopologyDescriptionPlugin (KIP-1331): the
	// coordinator asks streams members for their topology description and
	// keeps it (streams_description.go).
	TopologyDescriptions bool
	// IsShareGroup reports whether a share group (coordinator/share) has
	// the id: Kafka's groups share one namespace, so a classic JoinGroup or
	// a StreamsGroupHeartbeat naming it is refused. Nil: none.
	IsShareGroup func(groupID string) bool
	// ShareLoaded is given, when a partition has been read and before its
	// groups are served, the share groups' records (ShareGroup* types)
	// it holds: the latest of each key, tombstones left out. The share
	// coordinator (coordinator/share) keeps share groups; their records
	// share the partition with the other groups'. Nil: none kept.
	ShareLoaded func(partition int32, recs []ShareRecord)
	// Streams is what a streams group runs with unless StreamsSettings says
	// otherwise: the broker's group.streams.* settings.
	Streams StreamsSettings
	// StreamsSettings, when set, returns one streams group's settings: its
	// group configs (streams.session.timeout.ms, streams.heartbeat.interval.ms,
	// streams.num.standby.replicas, ...) over the broker's. It is called on
	// every heartbeat, so a change reaches the running group at once.
	StreamsSettings func(groupID string) StreamsSettings

	Logger *slog.Logger
	Now    func() time.Time // nil: time.Now
}

// StreamsSettings are the settings of one streams group.
type StreamsSettings struct {
	Session               time.Duration // streams.session.timeout.ms (45 s)
	Heartbeat             time.Duration // streams.heartbeat.interval.ms (5 s)
	NumStandby            int32         // streams.num.standby.replicas (0)
	MaxSize               int32         // group.streams.max.size (unbounded)
	AcceptableRecoveryLag int64         // streams.acceptable.recovery.lag (10000)
	TaskOffsetInterval    time.Duration // streams.task.offset.interval.ms (60 s)
}

// DefaultStreamsSettings are Kafka 4.4's defaults.
func DefaultStreamsSettings() StreamsSettings {
	return StreamsSettings{Session: 45 * time.Second, Heartbeat: 5 * time.Second, MaxSize: math.MaxInt32,
		AcceptableRecoveryLag: 10000, TaskOffsetInterval: time.Minute}
}

// streamsSettings is what group id runs with; unset or invalid values fall
// back to the broker's, then Kafka's defaults.
func (c *Coordinator) streamsSettings(id string) StreamsSettings {
	s := c.cfg.Streams
	if c.cfg.StreamsSettings != nil {
		s = c.cfg.StreamsSettings(id)
	}
	def := DefaultStreamsSettings()
	if s.Session <= 0 {
		s.Session = def.Session
	}
	if s.Heartbeat <= 0 {
		s.Heartbeat = def.Heartbeat
	}
	if s.MaxSize <= 0 {
		s.MaxSize = def.MaxSize
	}
	if s.NumStandby < 0 {
		s.NumStandby = 0
	}
	if s.AcceptableRecoveryLag < 0 {
		s.AcceptableRecoveryLag = def.AcceptableRecoveryLag
	}
	if s.TaskOffsetInterval <= 0 {
		s.TaskOffsetInterval = def.TaskOffsetInterval
	}
	return s
}

// DefaultConfig returns Kafka 4's defaults.
func DefaultConfig() Config {
	return Config{
		NumPartitions:             50,
		OffsetMetadataMaxBytes:    4096,
		OffsetsRetention:          7 * 24 * time.Hour,
		RetentionCheckInterval:    10 * time.Minute,
		InitialRebalanceDelay:     3 * time.Second,
		MinSessionTimeout:         6 * time.Second,
		MaxSessionTimeout:         30 * time.Minute,
		MaxSize:                   math.MaxInt32,
		NewMemberJoinTimeout:      5 * time.Minute,
		ConsumerProtocol:          true,
		ConsumerSessionTimeout:    45 * time.Second,
		ConsumerHeartbeatInterval: 5 * time.Second,
		ConsumerMaxSize:           math.MaxInt32,
		ConsumerAssignors:         []string{"uniform", "range"},
		StreamsProtocol:           true,
		Streams:                   DefaultStreamsSettings(),
	}
}

// consumerTimeouts is the session timeout and heartbeat interval of group id.
func (c *Coordinator) consumerTimeouts(id string) (session, heartbeat time.Duration) {
	if c.cfg.ConsumerTimeouts != nil {
		if s, h := c.cfg.ConsumerTimeouts(id); s > 0 && h > 0 {
			return s, h
		}
	}
	return c.cfg.ConsumerSessionTimeout, c.cfg.ConsumerHeartbeatInterval
}

// Log is the __consumer_offsets topic as the coordinator sees it; the broker
// implements it over its partition logs.
type Log interface {
	// Partitions is the topic's partition count, 0 while it does not exist.
	Partitions() int32
	// LeaderEpoch returns the partition's leader epoch if this broker
	// leads it, that is, coordinates its groups. A shard loaded at another
	// epoch is loaded again: the broker may have lost and regained the
	// partition, and the leader in between may have written to it.
	LeaderEpoch(partition int32) (int32, bool)
	// Append appends one record batch as the partition's leader and returns
	// once it is durable as configured; errors unwrap to a *kerr.Error when
	// Kafka has a code for them.
	Append(partition int32, batch []byte) error
	// ReadFrom calls fn with every record batch from offset (clamped to the
	// log start) to the log end, in order.
	ReadFrom(partition int32, offset int64, fn func(batch []byte) error) error
}

// TopicMeta is what the coordinator needs to know about a topic.
type TopicMeta struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Metadata is the cluster's topics, for validating commits and resolving
// consumer-protocol subscriptions.
type Metadata interface {
	Topic(name string) (TopicMeta, bool)
	TopicByID(id [16]byte) (TopicMeta, bool)
	Topics() []TopicMeta
}

// Client describes where a request came from.
type Client struct {
	Version int16  // the request's API version
	ID      string // client.id
	Host    string // as Kafka shows it: "/" + IP

	// MayDescribeTopic reports whether the request's principal may
	// DESCRIBE a topic; nil (no authorizer) allows every topic. A
	// ConsumerGroupHeartbeat's regex resolution keeps only the topics it
	// allows (Kafka's filterTopicDescribeAuthorizedTopics, KAFKA-18813).
	MayDescribeTopic func(topic string) bool
}

// Coordinator is the group coordinator of one broker.
type Coordinator struct {
	cfg    Config
	log    Log
	meta   Metadata
	logger *slog.Logger
	now    func() time.Time

	shards      sync.Map // int32 -> *shard
	metaVersion atomic.Uint64
	seq         atomic.Int64 // orders offset commits (see offsetEntry.seq)
	closed      atomic.Bool
	stop        chan struct{}

	bg background.Group // the goroutines Close waits for (bg.Go)
}

// New returns a coordinator over log and meta and starts its offset
// expiration loop.
func New(cfg Config, log Log, meta Metadata) *Coordinator {
	def := DefaultConfig()
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = def.NumPartitions
	}
	if cfg.NewMemberJoinTimeout <= 0 {
		cfg.NewMemberJoinTimeout = def.NewMemberJoinTimeout
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = def.RetentionCheckInterval
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = def.ConsumerHeartbeatInterval
	}
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = def.ConsumerSessionTimeout
	}
	if len(cfg.ConsumerAssignors) == 0 {
		cfg.ConsumerAssignors = def.ConsumerAssignors
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = def.MaxSize
	}
	if cfg.ConsumerMaxSize <= 0 {
		cfg.ConsumerMaxSize = def.ConsumerMaxSize
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	c := &Coordinator{cfg: cfg, log: log, meta: meta, logger: logger, now: now, stop: make(chan struct{})}
	c.bg.Go(c.expirationLoop)
	return c
}

// Close stops the coordinator: every shard is unloaded (parked JoinGroup and
// SyncGroup requests are answered NOT_COORDINATOR) and later requests get
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() {
	// Refused from here on, so everything started began before closed was
	// set and is waited for below.
	c.bg.Close()
	if !c.closed.CompareAndSwap(false, true) {
		return
	}
	close(c.stop)
	c.bg.Wait()
	c.shards.Range(func(_, v any) bool {
		v.(*shard).unload(c)
		return true
	})
}

// TopicsChanged tells the coordinator that topic metadata changed, so that
// consumer-protocol groups recompute their subscriptions on their next
// heartbeat.
func (c *Coordinator) TopicsChanged() { c.metaVersion.Add(1) }

// NumPartitions is the partition count groups hash over: the topic's, or
// offsets.topic.num.partitions before it exists.
func (c *Coordinator) NumPartitions() int32 {
	if n := c.log.Partitions(); n > 0 {
		return n
	}
	return c.cfg.NumPartitions
}

// PartitionFor is the __consumer_offsets partition a group belongs to.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.NumPartitions())
}

// LoadOwned starts loading every partition this broker leads and has not
// loaded yet, in the background; the broker calls it when the coordinator
// starts and when the offsets topic appears or changes leaders.
func (c *Coordinator) LoadOwned() {
	if c.closed.Load() {
		return
	}
	n := c.log.Partitions()
	for p := int32(0); p < n; p++ {
		if epoch, leads := c.log.LeaderEpoch(p); leads {
			c.shardFor(p).ensureLoaded(c, epoch)
		} else if v, ok := c.shards.Load(p); ok {
			v.(*shard).unload(c)
		}
	}
}

func (c *Coordinator) shardFor(p int32) *shard {
	if v, ok := c.shards.Load(p); ok {
		return v.(*shard)
	}
	v, _ := c.shards.LoadOrStore(p, &shard{index: p})
	return v.(*shard)
}

// shardState is a shard's load state.
type shardState int8

const (
	shardUnloaded shardState = iota
	shardLoading
	shardLoaded
)

// shard is the groups of one __consumer_offsets partition.
type shard struct {
	index int32

	mu     sync.Mutex // guards state, epoch, gen, groups and completed, never held while taking a group's lock
	state  shardState
	groups map[string]*group
	// epoch is the partition's leader epoch the shard is loaded (or
	// loading) at: Kafka's coordinator runtime loads a partition again
	// when its epoch changes, not only when it was not led here.
	epoch int32
	// gen numbers the loads, so that a load superseded by another (the
	// shard unloaded and loaded again meanwhile) does not install its
	// groups.
	gen uint64
	// completed holds the transaction markers reported while the shard
	// loads: a marker appended after the load read the log's end would
	// otherwise be lost and leave its offsets pending for good.
	completed []txnCompletion
}

// txnCompletion is one transaction marker on the shard's partition.
type txnCompletion struct {
	producerID int64
	commit     bool
}

// ensureLoaded starts loading the shard at the partition's leader epoch if
// it is unloaded, or loaded at another epoch (unloading it first), and
// reports its error code for a request now: 0 when loaded, else
// COORDINATOR_LOAD_IN_PROGRESS.
func (s *shard) ensureLoaded(c *Coordinator, epoch int32) int16 {
	s.mu.Lock()
	if s.state != shardUnloaded && s.epoch != epoch {
		s.mu.Unlock()
		c.logger.Info("group coordinator partition led at a new epoch; loading it again", "partition", s.index,
			"leader_epoch", epoch)
		s.unload(c)
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	switch {
	case s.state == shardLoaded && s.epoch == epoch:
		return 0
	case s.state == shardLoading && s.epoch == epoch:
		return kerr.CoordinatorLoadInProgress.Code
	case s.state != shardUnloaded:
		// Another caller saw yet another epoch meanwhile; this request
		// retries.
		return kerr.CoordinatorLoadInProgress.Code
	}
	s.gen++
	gen := s.gen
	s.state, s.completed, s.epoch = shardLoading, nil, epoch
	if !c.bg.Go(func() { c.load(s, gen) }) {
		s.state = shardUnloaded
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.CoordinatorLoadInProgress.Code
}

// current reports whether the shard is loaded at the partition's current
// leader epoch here, so that its state may be written: a shard left over
// from an earlier term must not write records computed from what it missed.
func (c *Coordinator) current(s *shard) bool {
	epoch, leads := c.log.LeaderEpoch(s.index)
	s.mu.Lock()
	defer s.mu.Unlock()
	return leads && s.state == shardLoaded && s.epoch == epoch
}

// errStaleShard refuses a write from a shard not loaded at the partition's
// current leader epoch.
var errStaleShard = fmt.Errorf("the group coordinator partition is not loaded at its current leader epoch: %w", kerr.NotLeaderForPartition)

// unload drops the shard's groups: parked requests are answered
// NOT_COORDINATOR and timers stop.
func (s *shard) unload(c *Coordinator) {
	s.mu.Lock()
	groups := s.groups
	wasLoaded := s.state == shardLoaded
	s.groups, s.completed = nil, nil
	s.state = shardUnloaded
	s.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		g.unloadLocked()
		g.mu.Unlock()
	}
	if wasLoaded && len(groups) > 0 {
		c.logger.Info("unloaded group coordinator partition", "partition", s.index, "groups", len(groups))
	}
}

// loadedShard returns the loaded shard of a group, or the error code a
// request gets: COORDINATOR_NOT_AVAILABLE after Close, NOT_COORDINATOR if
// another broker leads the partition, COORDINATOR_LOAD_IN_PROGRESS while it
// loads.
func (c *Coordinator) loadedShard(groupID string) (*shard, int16) {
	if c.closed.Load() {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	n := c.log.Partitions()
	if n <= 0 {
		return nil, kerr.NotCoordinator.Code
	}
	p := PartitionFor(groupID, n)
	epoch, leads := c.log.LeaderEpoch(p)
	if !leads {
		if v, ok := c.shards.Load(p); ok {
			v.(*shard).unload(c)
		}
		return nil, kerr.NotCoordinator.Code
	}
	s := c.shardFor(p)
	if code := s.ensureLoaded(c, epoch); code != 0 {
		return nil, code
	}
	return s, 0
}

// lockGroup returns the group locked, creating it (as an empty classic
// group) when create is set; a nil group with code 0 means it does not
// exist.
func (c *Coordinator) lockGroup(groupID string, create bool) (*group, int16) {
	for {
		s, code := c.loadedShard(groupID)
		if code != 0 {
			return nil, code
		}
		s.mu.Lock()
		if s.state != shardLoaded {
			s.mu.Unlock()
			continue
		}
		g := s.groups[groupID]
		if g == nil {
			if !create {
				s.mu.Unlock()
				return nil, 0
			}
			g = newGroup(c, s, groupID)
			s.groups[groupID] = g
		}
		s.mu.Unlock()
		g.mu.Lock()
		if g.removed {
			g.mu.Unlock()
			continue
		}
		return g, 0
	}
}

// groupsOf snapshots the groups of every loaded shard.
func (c *Coordinator) allGroups() []*group {
	var out []*group
	c.shards.Range(func(_, v any) bool {
		s := v.(*shard)
		s.mu.Lock()
		if s.state == shardLoaded {
			for _, g := range s.groups {
				out = append(out, g)
			}
		}
		s.mu.Unlock()
		return true
	})
	return out
}

// removeLocked takes the locked group out of its shard: later lookups create
// a new group of the same id.
func (g *group) removeLocked() {
	g.removed = true
	g.shard.mu.Lock()
	if g.shard.groups[g.id] == g {
		delete(g.shard.groups, g.id)
	}
	g.shard.mu.Unlock()
}

// ShareRecord is one share-group record of __consumer_offsets; a nil Value
// is a tombstone.
type ShareRecord struct{ Key, Value []byte }

// Coordinates answers 0 when this broker coordinates groupID and has loaded
// its partition (share groups ask it), else the error code a request gets;
// it starts the load when needed.
func (c *Coordinator) Coordinates(groupID string) int16 {
	_, code := c.loadedShard(groupID)
	return code
}

// AppendShare appends a share group's records to its partition as one
// batch, once the partition is loaded here; the error unwraps to the
// *kerr.Error a group request answers.
func (c *Coordinator) AppendShare(groupID string, recs []ShareRecord) error {
	s, code := c.loadedShard(groupID)
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	rs := make([]record, len(recs))
	for i, r := range recs {
		rs[i] = record{key: r.Key, value: r.Value}
	}
	if !c.current(s) {
		return kerr.NotCoordinator
	}
	if err := c.log.Append(s.index, buildBatch(rs, c.now())); err != nil {
		return kerr.ErrorForCode(appendErrorCode(err))
	}
	return nil
}

// appendRecords writes records to the group's partition as one batch.
func (g *group) appendRecords(recs []record) error {
	if len(recs) == 0 {
		return nil
	}
	if !g.c.current(g.shard) {
		return errStaleShard
	}
	return g.c.log.Append(g.shard.index, buildBatch(recs, g.c.now()))
}

// appendErrorCode maps a failed append to what a group request answers, as
// Kafka's appendGroupMetadataErrorToResponseError does.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		// A closed log (shutdown) or an I/O failure: the client should find
		// the coordinator again.
		return kerr.NotCoordinator.Code
	}
	switch ke.Code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return ke.Code
}

// expirationLoop expires offsets and empty groups every
// offsets.retention.check.interval.ms.
func (c *Coordinator) expirationLoop() {
	t := time.NewTicker(c.cfg.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.ExpireOffsets()
		}
	}
}

// ExpireOffsets runs one offset expiration pass over every loaded group, as
// the periodic loop does.
func (c *Coordinator) ExpireOffsets() {
	now := c.now()
	var offsets, groups int
	for _, g := range c.allGroups() {
		g.mu.Lock()
		if !g.removed {
			n, deleted := g.expireLocked(now)
			offsets += n
			if deleted {
				groups++
			}
		}
		g.mu.Unlock()
	}
	if offsets > 0 || groups > 0 {
		c.logger.Info("expired committed offsets", "offsets", offsets, "groups_deleted", groups)
	}
}
