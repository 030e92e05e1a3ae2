package storage

// API CONTRACT STUB: the storage helper replaces these bodies (keep the signatures;
// additions are fine). The broker is written against exactly these.

import (
	"log/slog"
	"os"
	"time"
)

// TimestampType is message.timestamp.type.
type TimestampType int8

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
}

// DefaultLogConfig returns Kafka's defaults.
func DefaultLogConfig() LogConfig { panic("stub") }

// Options are process-wide dependencies of a Log.
type Options struct {
	FS     FS               // nil = the real OS filesystem
	Logger *slog.Logger     // nil = slog.Default()
	Now    func() time.Time // nil = time.Now
}

// FS is the small filesystem interface storage writes through (fault injection).
type FS interface{}

// FileSlice is a byte range of a segment file holding whole batches; the broker
// sends it with sendfile. The file stays open while the segment exists.
type FileSlice struct {
	File *os.File
	Pos  int64
	Len  int64
}

// AppendInfo describes a successful append.
type AppendInfo struct {
	FirstOffset    int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	RecordCount    int64
}

// ReadResult is what Read returns: file slices of whole batches.
type ReadResult struct {
	Slices         []FileSlice
	Size           int64 // sum of slice lengths
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
}

type Log struct{}

func Open(dir string, cfg LogConfig, opts Options) (*Log, error) { panic("stub") }
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	panic("stub")
}
func (l *Log) Read(offset int64, maxBytes int64, upTo int64, minOneBatch bool) (ReadResult, error) {
	panic("stub")
}
func (l *Log) LogStartOffset() int64            { panic("stub") }
func (l *Log) LogEndOffset() int64              { panic("stub") }
func (l *Log) HighWatermark() int64             { panic("stub") }
func (l *Log) UpdateHighWatermark(offset int64) { panic("stub") }
func (l *Log) SetConfig(cfg LogConfig)          { panic("stub") }
func (l *Log) Dir() string                      { panic("stub") }
func (l *Log) Flush() error                     { panic("stub") }
func (l *Log) Close() error                     { panic("stub") }
func (l *Log) Delete() error                    { panic("stub") }
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool, err error) {
	panic("stub")
}
func (l *Log) MaxTimestamp() (offset int64, timestamp int64) { panic("stub") }
