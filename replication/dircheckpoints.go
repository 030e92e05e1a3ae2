package replication

import (
	"path/filepath"
	"time"

	"github.com/strait/strait/storage"
)

// Per-log-directory checkpoints (storage.DirCheckpoints): one
// recovery-point-offset-checkpoint, log-start-offset-checkpoint and
// replication-offset-checkpoint per log directory, as Kafka writes them,
// instead of a file of each per partition. Each directory's are loaded
// once at start (migrating the per-partition files), before any log opens;
// the map is read-only afterwards. A directory whose checkpoints cannot be
// loaded keeps per-partition files (its logs open without them).

func (m *Manager) openDirCheckpoints() {
	m.checkpoints = map[string]*storage.DirCheckpoints{}
	for _, d := range m.cfg.LogDirs {
		d = filepath.Clean(d)
		c, err := storage.OpenDirCheckpoints(m.cfg.FS, d, m.logger.With("log_dir", d))
		if err != nil {
			m.logger.Error("cannot load the log directory's checkpoints; its logs keep per-partition ones", "dir", d, "err", err)
			continue
		}
		m.checkpoints[d] = c
	}
}

// dirCheckpoints is the checkpoints of the log directory holding
// partition directory dir, nil if none.
func (m *Manager) dirCheckpoints(dir string) *storage.DirCheckpoints {
	return m.checkpoints[filepath.Clean(filepath.Dir(dir))]
}

// checkpointKey is the per-directory checkpoints' key of partition
// directory dir.
func checkpointKey(dir string) (storage.TopicPartition, bool) {
	topic, p, ok := storage.ParsePartitionDirName(filepath.Base(dir))
	return storage.TopicPartition{Topic: topic, Partition: p}, ok
}

// OpenSegmentFiles is the number of segment log files the file cache holds
// open, active and sealed (storage.FileCache), -1 without a cache.
func (m *Manager) OpenSegmentFiles() int {
	if m.files == nil {
		return -1
	}
	return m.files.Open()
}

// checkpointLoop writes each online log directory's checkpoints
// periodically: the high watermarks every
// replica.high.watermark.checkpoint.interval.ms, the recovery points every
// log.flush.offset.checkpoint.interval.ms, the log start offsets every
// log.flush.start.offset.checkpoint.interval.ms (Kafka's three tasks). A
// write is one file per directory, whatever the number of partitions, and
// none when nothing changed.
func (m *Manager) checkpointLoop() {
	defer m.loops.Done()
	tick := func(d time.Duration) (<-chan time.Time, func()) {
		if d <= 0 {
			return nil, func() {}
		}
		t := time.NewTicker(d)
		return t.C, t.Stop
	}
	hwC, stopHW := tick(m.cfg.HighWatermarkCheckpointInterval)
	defer stopHW()
	rpC, stopRP := tick(m.cfg.RecoveryPointCheckpointInterval)
	defer stopRP()
	lsoC, stopLSO := tick(m.cfg.LogStartOffsetCheckpointInterval)
	defer stopLSO()
	each := func(what string, write func(*storage.DirCheckpoints) error) {
		for d, c := range m.checkpoints {
			if m.stopping() || m.DirOffline(d) {
				continue
			}
			if err := write(c); err != nil {
				m.logger.Warn("writing a log directory checkpoint", "dir", d, "file", what, "err", err)
			}
		}
	}
	for {
		select {
		case <-m.stop:
			return
		case <-hwC:
			each("replication-offset-checkpoint", (*storage.DirCheckpoints).WriteHighWatermarks)
		case <-rpC:
			each("recovery-point-offset-checkpoint", (*storage.DirCheckpoints).WriteRecoveryPoints)
		case <-lsoC:
			each("log-start-offset-checkpoint", (*storage.DirCheckpoints).WriteLogStartOffsets)
		}
	}
}
