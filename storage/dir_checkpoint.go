package storage

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Migration from the per-partition checkpoints (checkpoint.go) to the
// per-log-directory ones (offset_checkpoint.go). Not wired into Open yet:
// the broker is to load a directory's offsets once, before opening its
// logs, and hand each log its own.

// TopicPartition names a partition in a per-directory checkpoint.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ParsePartitionDirName splits a partition directory's name,
// "<topic>-<partition>", as Kafka's Log.parseTopicPartitionName does for
// a live log; ok is false for anything else (a future, deleted or stray
// replica's "<topic>-<partition>.<id>-future", "-delete" or "-stray", files,
// a topic-less name), so that no scan of a log dir takes those for logs.
func ParsePartitionDirName(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	digits := name[i+1:]
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return "", 0, false
		}
	}
	p, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// LoadDirOffsets returns the offsets of log directory logDir's
// per-directory checkpoint name. When that file is absent it migrates:
// the offsets are read from legacyName in each partition directory
// (Strait's per-partition file of the same role) and migrated is true;
// the caller then writes the per-directory file before removing the old
// ones, so that a crash between the two loses nothing.
//
// A malformed per-directory file returns its *MalformedCheckpointError
// and no offsets, and the per-partition files are not consulted: they are
// older than it. As Kafka's LogManager does, the caller logs it and goes on
// as if no offset were checkpointed. A malformed or unreadable
// per-partition file is logged and skipped: that partition has no
// checkpointed offset, as before the migration.
func LoadDirOffsets(fsys FS, logDir, name, legacyName string, logger *slog.Logger) (offsets map[TopicPartition]int64, migrated bool, err error) {
	entries, exists, err := NewOffsetCheckpointFile(fsys, logDir, name).Read()
	if err != nil {
		return map[TopicPartition]int64{}, false, err
	}
	if exists {
		offsets = make(map[TopicPartition]int64, len(entries))
		for _, e := range entries {
			offsets[TopicPartition{e.Topic, e.Partition}] = e.Offset
		}
		return offsets, false, nil
	}
	des, err := fsys.ReadDir(logDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return map[TopicPartition]int64{}, false, nil
		}
		return map[TopicPartition]int64{}, false, err
	}
	offsets = make(map[TopicPartition]int64)
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		topic, partition, ok := ParsePartitionDirName(de.Name())
		if !ok {
			continue
		}
		dir := filepath.Join(logDir, de.Name())
		off, ok, err := readCheckpoint(fsys, dir, legacyName)
		if err != nil {
			logger.Warn("ignoring per-partition checkpoint while migrating", "dir", dir, "file", legacyName, "err", err)
			continue
		}
		if ok {
			offsets[TopicPartition{topic, partition}] = off
			migrated = true
		}
	}
	return offsets, migrated, nil
}

// DirOffsetEntries turns offsets into a checkpoint's entries, in the order
// Strait writes them (SortTopicPartitionOffsets).
func DirOffsetEntries(offsets map[TopicPartition]int64) []TopicPartitionOffset {
	entries := make([]TopicPartitionOffset, 0, len(offsets))
	for tp, off := range offsets {
		entries = append(entries, TopicPartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: off})
	}
	SortTopicPartitionOffsets(entries)
	return entries
}

// DirCheckpointWriter writes one per-directory checkpoint file for the one
// periodic task of its log directory (Kafka's LogManager checkpoints each
// directory's recovery points and log start offsets, and ReplicaManager its
// high watermarks, on one timer each, not per partition). A write whose
// entries equal the last durable ones is skipped, so an idle directory
// costs no write and no fsync.
type DirCheckpointWriter struct {
	mu   sync.Mutex
	file *OffsetCheckpointFile
	last []TopicPartitionOffset // nil when the file's contents are unknown
}

// NewDirCheckpointWriter returns a writer of checkpoint name in logDir.
func NewDirCheckpointWriter(fsys FS, logDir, name string) *DirCheckpointWriter {
	return &DirCheckpointWriter{file: NewOffsetCheckpointFile(fsys, logDir, name)}
}

// Write replaces the file with offsets unless it holds them already;
// written reports whether it wrote. After a failed write the file's
// contents are unknown and the next call writes.
func (w *DirCheckpointWriter) Write(offsets map[TopicPartition]int64) (written bool, err error) {
	return w.writeSync(offsets, syncAll)
}

// writeSync is Write with the fsyncs of mode: with syncContents the
// rename is durable only once the caller fsyncs the directory.
func (w *DirCheckpointWriter) writeSync(offsets map[TopicPartition]int64, mode fileSync) (written bool, err error) {
	entries := DirOffsetEntries(offsets)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil && slices.Equal(w.last, entries) {
		return false, nil
	}
	w.last = nil
	if err := w.file.writeSync(entries, mode); err != nil {
		return false, err
	}
	w.last = entries
	return true, nil
}
