package replication

// Stray partition logs, as Kafka's LogManager handles them in KRaft mode
// (LogManager.isStrayKraftReplica, applied by loadLogs to the first
// metadata image): at start, before any partition opens, a partition
// directory of a log dir that the metadata does not place on this broker
// is renamed <topic>-<p>.<uniqueId>-stray (UnifiedLog.logStrayDirName),
// never deleted, so that an operator can recover its data. A directory is
// stray when
//
//   - its topic is unknown, or has no such partition (deleted while this
//     broker was down);
//   - its partition.metadata names another topic id than the topic's (the
//     topic deleted and re-created under the same name meanwhile);
//   - this broker is not among the partition's replicas, which include a
//     reassignment's adding replicas (reassigned away meanwhile).
//
// Kafka also takes a directory without a topic id in partition.metadata
// for stray; Strait keeps such a directory when its partition is assigned
// here, as openPartition adopts it (written before that file was durable,
// or by an older version), and takes it for stray otherwise.
//
// A <topic>-<p>.<id>-stray directory found at a later start is left as it
// is, with a warning each start (Kafka's "Loaded stray log"), and every
// scan of a log dir skips it: storage.ParsePartitionDirName does not parse
// it. A directory whose name is no partition's is left alone with a
// warning (Kafka refuses to start on one).
//
// Deletions, reassignments and moves between log dirs while the broker
// runs keep their own paths (stopReplica, logdirmove.go): only the start
// looks for strays, as in Kafka. A -future directory no hosted partition
// takes up is removed at start (sweepUnclaimedFutures), where Kafka would
// rename it stray too.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/strait/strait/storage"
)

// StrayDirSuffix ends the name of a partition directory moved aside as
// stray (Kafka's UnifiedLog.StrayDirSuffix).
const StrayDirSuffix = "-stray"

// strayLogMinCount is the number of strays in one log dir from which a
// count line follows their lines.
const strayLogMinCount = 10

// strayDirName is Kafka's logStrayDirName for topic-partition:
// <topic>-<p>.<uniqueId>-stray, uniqueId a random UUID's 32 hex digits,
// the topic cut so that the name stays within 255 bytes.
func strayDirName(topic string, partition int32) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // a version 4 UUID, as java.util.UUID.randomUUID
	id[8] = id[8]&0x3f | 0x80
	suffix := fmt.Sprintf("-%d.%s%s", partition, hex.EncodeToString(id[:]), StrayDirSuffix)
	if room := 255 - len(suffix); len(topic) > room {
		topic = topic[:room]
	}
	return topic + suffix
}

// strayReason says why the partition directory dir of topic-partition is
// stray on this broker by the metadata now, "" when it is not; then id is
// the topic id its partition.metadata holds, if read (idRead).
func (m *Manager) strayReason(dir, topic string, partition int32) (reason string, id [16]byte, idRead bool) {
	t, found := m.meta.Topic(topic)
	if !found {
		return "topic does not exist", id, false
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return "partition does not exist", id, false
	}
	if replicas := t.Partitions[partition].Replicas; !slices.Contains(replicas, m.cfg.NodeID) {
		return fmt.Sprintf("replicas %v do not include this broker", replicas), id, false
	}
	id, err := storage.ReadPartitionMetadata(m.cfg.FS, dir)
	if err != nil {
		return "", id, false // openPartition adopts a missing file
	}
	if id != t.ID {
		return fmt.Sprintf("topic id %s differs from the topic's %s", storage.EncodeTopicID(id), storage.EncodeTopicID(t.ID)), id, true
	}
	return "", id, true
}

// moveStrayLogs renames the stray partition directories of every log dir
// (see above), before the metadata is followed. A rename that fails is
// logged and leaves the directory as it was (the log dir then gets no
// clean-shutdown marker at the stop, as before). The topic ids it read of
// the directories it keeps go to startTopicIDs, so that the replay's
// openPartition does not read them again.
func (m *Manager) moveStrayLogs() {
	fsys := m.cfg.FS
	m.startTopicIDs = map[string]map[string][16]byte{}
	for _, d := range m.cfg.LogDirs {
		d = filepath.Clean(d)
		entries, err := fsys.ReadDir(d)
		if err != nil {
			continue // the log-dir watcher reports a dir that cannot be read
		}
		ids := map[string][16]byte{}
		m.startTopicIDs[d] = ids
		var moved []storage.TopicPartition
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || m.foreignDir(filepath.Join(d, name)) {
				continue
			}
			topic, partition, ok := storage.ParsePartitionDirName(name)
			if !ok {
				m.noteOtherDir(d, name)
				continue
			}
			path := filepath.Join(d, name)
			reason, id, idRead := m.strayReason(path, topic, partition)
			if reason == "" {
				if idRead {
					ids[name] = id
				}
				continue
			}
			dest := filepath.Join(d, strayDirName(topic, partition))
			if err := fsys.Rename(path, dest); err != nil {
				m.logger.Error("cannot move a stray partition log aside", "dir", path, "reason", reason, "err", err)
				continue
			}
			m.shutdownMarks.forgetUnopened(path)
			moved = append(moved, storage.TopicPartition{Topic: topic, Partition: partition})
			m.logger.Warn("partition log marked stray and renamed", "dir", path, "renamed_to", dest, "reason", reason)
		}
		if len(moved) == 0 {
			continue
		}
		if err := fsys.SyncDir(d); err != nil {
			m.logger.Warn("fsyncing the log dir after moving stray logs aside", "dir", d, "err", err)
		}
		// Their offsets must not pass to a partition created here later
		// under the same name; one write of the files for all.
		if c := m.checkpoints[d]; c != nil {
			release := c.HoldForgets()
			for _, tp := range moved {
				_ = c.Forget(tp, nil) // held: release writes
			}
			if err := release(); err != nil {
				m.logger.Warn("checkpointing the log dir after moving stray logs aside", "dir", d, "err", err)
			}
		}
		if len(moved) >= strayLogMinCount {
			m.logger.Warn("stray partition logs renamed", "dir", d, "count", len(moved))
		}
	}
}

// partitionTopicID is the topic id in partition directory dir's
// partition.metadata, expected to be want: the one moveStrayLogs read if
// it is want (during the start's replay, under mu or in one of its
// workers), else read now. A cached id other than want is read again: the
// directory may have been replaced since the scan (deleted and created
// again by a change applied right after the replay), while one equal to
// want cannot be stale, topic ids being unique.
func (m *Manager) partitionTopicID(dir string, want [16]byte, fsys storage.FS) ([16]byte, error) {
	if id, ok := m.startTopicIDs[filepath.Dir(dir)][filepath.Base(dir)]; ok && id == want {
		return id, nil
	}
	return storage.ReadPartitionMetadata(fsys, dir)
}

// noteOtherDir logs a directory of log dir d that is not a partition log's
// (Kafka's loadLogs fails the start on one; Strait leaves it). Those named
// by Kafka's conventions are the start's other sweeps' (sweepLeftovers)
// or, for -stray, left in place with a warning at each start, as Kafka's
// "Loaded stray log".
func (m *Manager) noteOtherDir(d, name string) {
	switch {
	case strings.HasSuffix(name, StrayDirSuffix):
		m.logger.Warn("stray partition log left in place", "dir", filepath.Join(d, name))
	case strings.HasSuffix(name, "-delete"), strings.HasSuffix(name, "-future"):
	case strings.HasPrefix(name, "."), name == "lost+found":
		m.logger.Debug("skipping a directory in a log dir", "dir", filepath.Join(d, name))
	default:
		m.logger.Warn("directory in a log dir is not a partition log; left alone", "dir", filepath.Join(d, name))
	}
}

// foreignDir reports whether path is one of Config.ForeignDirs.
func (m *Manager) foreignDir(path string) bool {
	for _, f := range m.cfg.ForeignDirs {
		if filepath.Clean(f) == path {
			return true
		}
	}
	return false
}

// forgetUnopened drops partition directory dir, moved aside before any
// open, from its log dir's directories of unknown state.
func (cs *cleanShutdown) forgetUnopened(dir string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if ds := cs.dirs[filepath.Clean(filepath.Dir(dir))]; ds != nil {
		delete(ds.unopened, filepath.Base(dir))
	}
}
