package storage

import (
	"log/slog"
	"math"
	"time"
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
	SegmentBytes       int64 // segment.bytes (default 1 GiB)
	SegmentMs          int64 // segment.ms (default 7 days)
	SegmentIndexBytes  int32 // segment.index.bytes (default 10 MiB)
	IndexIntervalBytes int32 // index.interval.bytes (default 4096)
	MaxMessageBytes    int32 // max.message.bytes (default 1048588)
	TimestampType      TimestampType
	RetentionMs        int64 // retention.ms (-1 = infinite)
	RetentionBytes     int64 // retention.bytes (-1 = infinite)
	FlushMessages      int64 // flush.messages (default MaxInt64: never)
	FlushMs            int64 // flush.ms (default MaxInt64: never)
	Compact            bool  // cleanup.policy contains compact

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
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  3600000,
		FileDeleteDelayMs:    60000,
	}
}

// Options are process-wide dependencies of a Log.
type Options struct {
	FS     FS               // nil = the real OS filesystem
	Logger *slog.Logger     // nil = slog.Default()
	Now    func() time.Time // nil = time.Now
}
