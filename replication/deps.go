package replication

import (
	"context"
	"github.com/strait/strait/config"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/quota"
	"github.com/strait/strait/storage"
)

// Config is the replication and partition-log settings, resolved by the
// broker from its configuration. A zero duration (FetchBackoff excepted),
// RecoveryThreadsPerDataDir, SyncFSMinLogs or FS takes the default noted on the field; the
// fetch sizes are used as given (0 is a valid value of each).
type Config struct {
	// NodeID is this broker's node.id.
	NodeID int32
	// LogDirs are log.dirs; a new partition goes to the one holding the
	// fewest.
	LogDirs []string
	// FS is the filesystem partition logs are written through (nil: the
	// real one).
	FS storage.FS
	// ForeignDirs are directories that may lie in a log dir and are no
	// partition's (etcd.data.dir): the start's scan for stray partition
	// logs never renames nor reports them.
	ForeignDirs []string

	// ReplicaLagTimeMax is replica.lag.time.max.ms (30 s).
	ReplicaLagTimeMax time.Duration
	// FetchBackoff is replica.fetch.backoff.ms (1 s; 0 allowed).
	FetchBackoff time.Duration
	// FetchWaitMaxMs is replica.fetch.wait.max.ms (500).
	FetchWaitMaxMs int32
	// FetchMinBytes is replica.fetch.min.bytes (1).
	FetchMinBytes int32
	// FetchResponseMaxBytes is replica.fetch.response.max.bytes (10 MiB).
	FetchResponseMaxBytes int32
	// FetchMaxBytes is replica.fetch.max.bytes (1 MiB).
	FetchMaxBytes int32
	// HighWatermarkCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms (5 s).
	HighWatermarkCheckpointInterval time.Duration
	// RecoveryPointCheckpointInterval is
	// log.flush.offset.checkpoint.interval.ms and
	// LogStartOffsetCheckpointInterval
	// log.flush.start.offset.checkpoint.interval.ms (60 s each; 0: no
	// periodic write, only the shutdown's and those a log forces).
	RecoveryPointCheckpointInterval  time.Duration
	LogStartOffsetCheckpointInterval time.Duration
	// SegmentOpenFilesMax is strait.log.segment.open.files.max: sealed
	// (and idle active) segments' log files kept open while unused
	// (storage.FileCache, whose total bound, active segments' included,
	// comes from RLIMIT_NOFILE); 0: every segment keeps its file open.
	SegmentOpenFilesMax int

	// RecoveryThreadsPerDataDir is num.recovery.threads.per.data.dir (2):
	// how many logs Close closes at once per log directory.
	RecoveryThreadsPerDataDir int
	// SyncFSMinLogs is how many logs Close must have before it makes them
	// durable with one syncfs per log directory instead of each log's
	// fsyncs (100): syncfs flushes everything written to the filesystem,
	// other programs' writes included, which costs more than a few
	// fsyncs but far less than thousands.
	SyncFSMinLogs int
	// RetentionCheckInterval is log.retention.check.interval.ms (5 min).
	RetentionCheckInterval time.Duration
	// ProducerIDExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms (10 min).
	ProducerIDExpirationCheckInterval time.Duration
	// MaintenanceInterval is how often the maintenance loop runs (1 s, not
	// a Kafka key):
	// flush.ms and ISR shrinking are checked at each tick.
	MaintenanceInterval time.Duration

	// LogCleanerEnable is log.cleaner.enable; Cleaner the log.cleaner.*
	// settings.
	LogCleanerEnable bool
	Cleaner          storage.CleanerConfig
}

// ConfigFrom is the replication settings of cfg, as package config parsed
// and validated them (so every interval is positive).
func ConfigFrom(cfg config.Config) Config {
	r := cfg.Replication
	fsys := cfg.StorageFS
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	return Config{
		NodeID:                            cfg.NodeID,
		LogDirs:                           cfg.Log.Dirs,
		FS:                                fsys,
		ForeignDirs:                       []string{cfg.Etcd.DataDir},
		ReplicaLagTimeMax:                 r.LagTimeMax,
		FetchBackoff:                      r.FetchBackoff,
		FetchWaitMaxMs:                    int32(r.FetchWaitMax / time.Millisecond),
		FetchMinBytes:                     r.FetchMinBytes,
		FetchResponseMaxBytes:             r.FetchResponseMax,
		FetchMaxBytes:                     r.FetchMaxBytes,
		HighWatermarkCheckpointInterval:   r.HighWatermarkSync,
		RecoveryPointCheckpointInterval:   time.Duration(cfg.Log.FlushOffsetCheckpointIntervalMs) * time.Millisecond,
		LogStartOffsetCheckpointInterval:  time.Duration(cfg.Log.FlushStartOffsetCheckpointIntervalMs) * time.Millisecond,
		SegmentOpenFilesMax:               int(cfg.Log.SegmentOpenFilesMax),
		RecoveryThreadsPerDataDir:         r.RecoveryThreadsPerDataDir,
		RetentionCheckInterval:            time.Duration(cfg.Log.RetentionCheckIntervalMs) * time.Millisecond,
		ProducerIDExpirationCheckInterval: time.Duration(cfg.Log.ProducerIDExpirationCheckIntervalMs) * time.Millisecond,
		MaintenanceInterval:               time.Second,
		SyncFSMinLogs:                     100,
		LogCleanerEnable:                  cfg.Log.CleanerEnable,
		Cleaner:                           cfg.Log.Cleaner,
	}
}

// MetadataView is what replication reads of the cluster metadata
// (*controller.Controller implements it). Values returned share their
// slices with the metadata cache: read-only.
type MetadataView interface {
	// Listen registers fn for every topic created, changed or deleted, in
	// order; it first replays every existing topic as a creation.
	Listen(fn func(controller.TopicChange))
	// Topic is the topic called name.
	Topic(name string) (controller.TopicInfo, bool)
	// Brokers lists the registered brokers.
	Brokers() []controller.BrokerInfo
	// BrokerEpoch is this broker's registration epoch, -1 when not
	// registered.
	BrokerEpoch() int64
	// ClusterID is the cluster's id (etcd's), which each log directory's
	// meta.properties must name.
	ClusterID() string
}

// ISRWriter changes a partition's ISR as its leader (Kafka's
// AlterPartition; *controller.Controller implements it). The change takes
// effect when the metadata delivers the new partition state.
type ISRWriter interface {
	AlterPartitionISR(ctx context.Context, req controller.AlterPartitionRequest) (controller.PartitionInfo, error)
}

// BrokerClient sends a request to another broker and returns its response
// (the replica fetchers' Fetch, OffsetForLeaderEpoch and ListOffsets). It
// must honour ctx: Close cancels it to stop a fetcher.
type BrokerClient interface {
	Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// TopicConfigFunc resolves a topic's overrides over the broker's current
// defaults (dynamic ones included): its log configuration and
// min.insync.replicas. On error the values returned are the broker
// defaults to use instead.
type TopicConfigFunc func(overrides map[string]string) (storage.LogConfig, int32, error)

// Deps are the Manager's collaborators.
type Deps struct {
	Metadata    MetadataView
	ISR         ISRWriter
	Brokers     BrokerClient
	TopicConfig TopicConfigFunc
	// LeaderQuota and FollowerQuota are the replication throttles
	// (leader.replication.throttled.rate, follower.replication.throttled.rate),
	// whose bounds the broker changes at runtime; nil: unlimited ones.
	LeaderQuota   *quota.Replication
	FollowerQuota *quota.Replication
	// AlterLogDirsQuota bounds the copying into future logs
	// (replica.alter.log.dirs.io.max.bytes.per.second); nil: unlimited.
	AlterLogDirsQuota *quota.Replication
	Logger            *slog.Logger     // nil: slog.Default()
	Now               func() time.Time // nil: time.Now; tests move the clock
}
