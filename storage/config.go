package storage

import (
	"log/slog"
	"math"
	"time"

	"github.com/strait/strait/storage/compress"
)

// TimestampType is message.timestamp.type.
type TimestampType int8

// The two timestamp types (attributes bit 3 of a batch).
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// LogConfig holds one partition's effective settings (topic configs over broker defaults).
type LogConfig struct {
	SegmentBytes int64 // segment.bytes (default 1 GiB)
	SegmentMs    int64 // segment.ms (default 7 days)
	// SegmentJitterMs is segment.jitter.ms (default 0): each segment rolls
	// a random amount below it (and below SegmentMs) before segment.ms.
	SegmentJitterMs int64
	// Preallocate is preallocate (default false): a new active segment's
	// log file is made SegmentBytes long at once and trimmed to its
	// content when it rolls or the log closes.
	Preallocate        bool
	SegmentIndexBytes  int32 // segment.index.bytes (default 10 MiB)
	IndexIntervalBytes int32 // index.interval.bytes (default 4096)
	MaxMessageBytes    int32 // max.message.bytes (default 1048588)
	TimestampType      TimestampType
	RetentionMs        int64 // retention.ms (-1 = infinite)
	RetentionBytes     int64 // retention.bytes (-1 = infinite)
	FlushMessages      int64 // flush.messages (default MaxInt64: never)
	FlushMs            int64 // flush.ms (default MaxInt64: never)

	// Compact and Delete are cleanup.policy ("delete" by default;
	// "compact", or "compact,delete" for both). Delete applies retention.ms
	// and retention.bytes (DeleteOldSegments); Compact hands the log to the
	// Cleaner and makes appends refuse records without a key. Segments
	// below the log start offset go whatever the policy.
	Compact bool // cleanup.policy contains compact (default false)
	Delete  bool // cleanup.policy contains delete (default true)

	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (default 0.5): a
	// compacted log is cleaned once dirty bytes / total bytes exceed it.
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs is min.compaction.lag.ms (default 0): a segment
	// whose largest timestamp is younger than this is not cleaned yet.
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms (default MaxInt64): a
	// log whose oldest dirty segment began longer ago than this is cleaned
	// whatever its dirty ratio, and its active segment rolls at this age.
	MaxCompactionLagMs int64
	// DeleteRetentionMs is delete.retention.ms (default 86400000): how long
	// a tombstone (a record with a null value) survives after the cleaning
	// that first kept it.
	DeleteRetentionMs int64

	// TimestampBeforeMaxMs is message.timestamp.before.max.ms: how far in
	// the past a CreateTime timestamp may be (default MaxInt64).
	TimestampBeforeMaxMs int64
	// TimestampAfterMaxMs is message.timestamp.after.max.ms: how far in
	// the future a CreateTime timestamp may be (default 3600000 in Kafka 4).
	TimestampAfterMaxMs int64
	// FileDeleteDelayMs is file.delete.delay.ms: how long a deleted
	// segment's files stay open (renamed *.deleted) so that fetches already
	// holding FileSlices of them can finish sending (default 60000).
	FileDeleteDelayMs int64
	// ProducerIDExpirationMs is the broker's producer.id.expiration.ms: a
	// producer idle this long is forgotten (see ExpireProducers). 0 means
	// Kafka's default, 86400000 (Kafka requires at least 1).
	ProducerIDExpirationMs int64
	// MaxDecompressedBatchBytes is Strait's own cap (not Kafka's) on the
	// bytes a produced batch's records may decompress to; a batch that
	// expands past it is refused with CORRUPT_MESSAGE, having decompressed
	// no more than the cap. The cleaner applies it to stored batches (one
	// over it makes the partition uncleanable), and under it a zstd frame
	// may declare a window of at most max(cap, 8 MiB). 0 (the default)
	// means no cap.
	MaxDecompressedBatchBytes int64

	// CompressionType is compression.type: "producer" (or "", the
	// default) stores a produced batch in the codec it came in;
	// "uncompressed", "gzip", "snappy", "lz4" or "zstd" recompress a batch
	// in another codec to this one, as Kafka's LogValidator does (see
	// rebuildBatch). GzipLevel, LZ4Level and ZstdLevel are the levels the
	// recompression uses (compression.<codec>.level, KIP-390; 0 means the
	// codec's default).
	CompressionType string
	GzipLevel       int32 // compression.gzip.level (default -1)
	LZ4Level        int32 // compression.lz4.level (default 9)
	ZstdLevel       int32 // compression.zstd.level (default 3)
}

// DefaultLogConfig returns Kafka's defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:         1 << 30,
		SegmentMs:            7 * 24 * 60 * 60 * 1000,
		SegmentIndexBytes:    10 << 20,
		IndexIntervalBytes:   4096,
		MaxMessageBytes:      1048588,
		TimestampType:        CreateTime,
		RetentionMs:          7 * 24 * 60 * 60 * 1000,
		RetentionBytes:       -1,
		FlushMessages:        math.MaxInt64,
		FlushMs:              math.MaxInt64,
		Delete:               true,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  3600000,
		FileDeleteDelayMs:    60000,

		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      24 * 60 * 60 * 1000,

		ProducerIDExpirationMs: 86400000,

		CompressionType: "producer",
		GzipLevel:       compress.DefaultGzipLevel,
		LZ4Level:        compress.DefaultLZ4Level,
		ZstdLevel:       compress.DefaultZstdLevel,
	}
}

// maxSegmentMs is the age at which the active segment rolls: segment.ms,
// or max.compaction.lag.ms if smaller on a compacted log (Kafka's
// LogConfig.maxSegmentMs), so that no record waits in the uncleanable
// active segment longer than the lag allows.
func (c *LogConfig) maxSegmentMs() int64 {
	if c.Compact && c.MaxCompactionLagMs > 0 {
		return min(c.MaxCompactionLagMs, c.SegmentMs)
	}
	return c.SegmentMs
}

// targetCompression is the codec and level a produced batch in codec
// source is stored in (Kafka's BrokerCompressionType.targetCompression):
// the topic's codec, or source itself with its default level for
// "producer".
func (c *LogConfig) targetCompression(source compress.Codec) (compress.Codec, int) {
	switch c.CompressionType {
	case "uncompressed":
		return compress.None, 0
	case "gzip":
		return compress.Gzip, levelOr(c.GzipLevel, compress.DefaultGzipLevel)
	case "snappy":
		return compress.Snappy, 0
	case "lz4":
		return compress.LZ4, levelOr(c.LZ4Level, compress.DefaultLZ4Level)
	case "zstd":
		return compress.Zstd, levelOr(c.ZstdLevel, compress.DefaultZstdLevel)
	}
	switch source {
	case compress.Gzip:
		return source, compress.DefaultGzipLevel
	case compress.LZ4:
		return source, compress.DefaultLZ4Level
	case compress.Zstd:
		return source, compress.DefaultZstdLevel
	}
	return source, 0
}

// levelOr is level, or def for 0 (unset; zstd's 0 is its default too).
func levelOr(level int32, def int) int {
	if level == 0 {
		return def
	}
	return int(level)
}

// Options are process-wide dependencies of a Log.
type Options struct {
	FS     FS               // nil = the real OS filesystem
	Logger *slog.Logger     // nil = slog.Default()
	Now    func() time.Time // nil = time.Now
	// Checkpoints, when set, is the log directory's per-directory
	// checkpoints (dir_checkpoints.go): the log reads and keeps its
	// recovery point, log start offset and high watermark there, and
	// writes no per-partition file for them. The partition directory's
	// name must then be "<topic>-<partition>".
	Checkpoints *DirCheckpoints
	// FileCache, when set, bounds the open segment log files it shares
	// between logs: sealed and idle ones by its sealed bound, all of them,
	// active ones included, by its total bound (filecache.go); nil keeps
	// every segment's open while it exists.
	FileCache *FileCache
	// CleanShutdown says the log directory's owner found the directory's
	// clean-shutdown marker (clean_shutdown.go) covering this log: it is
	// loaded as after a clean shutdown, without recovery, as Kafka's
	// LogManager passes hadCleanShutdown to each log of the directory. The
	// owner must have removed that marker durably before Open: the log is
	// writable once open. Without it, the log's own marker in its
	// directory, if any, says the same (see Log.Close).
	CleanShutdown bool
}
