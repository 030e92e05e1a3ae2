package replication

// JBOD: several log.dirs, as Kafka's LogManager and ReplicaManager handle
// them since 3.7.
//
//   - A new partition goes to the online dir holding the fewest partitions
//     (LogManager.nextLogDirs); an existing one is opened in whichever dir
//     holds it (dirPicker, openPartition).
//   - A dir that failed (MarkDirOffline, called by the broker's log-dir
//     watcher) is offline until restart: its partitions stop replicating,
//     their logs are closed and they leave the lookup maps, so requests for
//     them answer as for a partition not hosted here, and the broker asks
//     the controller to move their leadership (Kafka's
//     handleLogDirFailure, then the controller's offline-replica handling).
//     They are not reopened elsewhere while the broker runs.
//   - MoveReplica moves a partition to another dir of this broker
//     (AlterReplicaLogDirs). Kafka copies into a "future" log that a
//     ReplicaAlterLogDirsThread keeps fetching into while the current log
//     serves, and swaps the two once caught up. Strait copies then swaps
//     under the Manager's lock instead: the replica stops serving (requests
//     answer NOT_LEADER_OR_FOLLOWER, which clients retry), its log is
//     closed (flushed and checkpointed), its files are copied into
//     <dest>/<topic>-<p>.<id>-future, which is then renamed
//     <dest>/<topic>-<p>, the old directory is deleted, and the log is
//     reopened from its new place and takes its role back. Nothing
//     acknowledged is lost (the copy is of the closed, fsynced log); the
//     cost is that the partition is unavailable on this broker for the
//     time of the copy and metadata waits for it.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// Errors of MoveReplica, each Kafka's error for AlterReplicaLogDirs.
var (
	ErrLogDirNotFound      = errors.New("log dir not found")       // LOG_DIR_NOT_FOUND
	ErrLogDirOffline       = errors.New("log dir is offline")      // KAFKA_STORAGE_ERROR
	ErrReplicaNotAvailable = errors.New("replica not hosted here") // REPLICA_NOT_AVAILABLE
)

// dirState is the Manager's view of its log dirs. Written holding both
// Manager.mu and mu; read holding either: the request path and
// DescribeLogDirs take only mu, a leaf lock, so that they never wait for a
// move, which holds Manager.mu while it copies.
type dirState struct {
	mu           sync.Mutex
	offline      map[string]bool          // cleaned dir paths found failed
	offlineParts map[string]bool          // partitionKey of the replicas they held
	futures      map[string]FutureReplica // partitionKey -> the move under way
}

// FutureReplica is a partition being moved to another log dir (Kafka's
// future replica).
type FutureReplica struct {
	Topic     string
	Partition int32
	Dir       string // the log dir it is moving to
	FutureDir string // the partition directory being written there
	Lag       int64  // log end offset of the current replica minus the future one's
}

func partitionKey(id [16]byte, idx int32) string { return fmt.Sprintf("%x-%d", id, idx) }

func (m *Manager) initDirs() {
	m.dirs.offline = map[string]bool{}
	m.dirs.offlineParts = map[string]bool{}
	m.dirs.futures = map[string]FutureReplica{}
}

// onlineDirs is the log dirs not marked offline, cleaned. Under mu.
func (m *Manager) onlineDirs() []string {
	var out []string
	for _, d := range m.cfg.LogDirs {
		if d = filepath.Clean(d); !m.dirs.offline[d] {
			out = append(out, d)
		}
	}
	return out
}

// LogDirOf is the log dir (as configured) holding p.
func LogDirOf(p *Partition) string { return filepath.Dir(p.log.Dir()) }

// OfflineReplica reports whether a replica of topic id's partition idx was
// in a dir that failed.
func (m *Manager) OfflineReplica(id [16]byte, idx int32) bool {
	m.dirs.mu.Lock()
	defer m.dirs.mu.Unlock()
	return m.dirs.offlineParts[partitionKey(id, idx)]
}

// MarkDirOffline takes dir offline: its partitions stop serving and
// replicating, their logs are closed (errors ignored: the disk is gone), and
// they are returned, for the broker to have their leadership moved. No new
// partition is placed in dir afterwards. Idempotent.
func (m *Manager) MarkDirOffline(dir string) []controller.TopicPartitions {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.dirs.offline[dir] {
		return nil
	}
	m.dirs.mu.Lock()
	m.dirs.offline[dir] = true
	m.dirs.mu.Unlock()
	var out []controller.TopicPartitions
	for _, lt := range *m.byName.Load() {
		var nt *Topic
		for i, p := range lt.parts {
			if p == nil || filepath.Clean(LogDirOf(p)) != dir {
				continue
			}
			if nt == nil {
				nt = &Topic{name: lt.name, id: lt.id, parts: slices.Clone(lt.parts)}
				out = append(out, controller.TopicPartitions{Topic: lt.name})
			}
			nt.parts[i] = nil
			out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, int32(i))
			m.dirs.mu.Lock()
			m.dirs.offlineParts[partitionKey(lt.id, int32(i))] = true
			m.dirs.mu.Unlock()
			p.stopped.Store(true)
			m.fetchers.unfollow(p)
			p.resignLeadership(roleNone, -1)
			p.wakeFetchWaiters()
			if err := p.log.Close(); err != nil {
				m.logger.Debug("closing a log in an offline dir", "topic", p.topic, "partition", p.index, "err", err)
			}
		}
		if nt != nil {
			m.publishLocked(nt, lt)
		}
	}
	m.logger.Error("log dir offline: its partitions stopped", "dir", dir, "topics", len(out))
	return out
}

// Futures lists the moves under way.
func (m *Manager) Futures() []FutureReplica {
	m.dirs.mu.Lock()
	defer m.dirs.mu.Unlock()
	out := make([]FutureReplica, 0, len(m.dirs.futures))
	for _, f := range m.dirs.futures {
		out = append(out, f)
	}
	return out
}

// MoveReplica moves the replica of topic's partition idx to the log dir
// dest (one of LogDirs) and returns once it serves from there (see the
// package's JBOD notes above). A replica already in dest is left alone.
func (m *Manager) MoveReplica(topic string, idx int32, dest string) error {
	dest = filepath.Clean(dest)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.ContainsFunc(m.cfg.LogDirs, func(d string) bool { return filepath.Clean(d) == dest }) {
		return ErrLogDirNotFound
	}
	if m.dirs.offline[dest] {
		return ErrLogDirOffline
	}
	lt := m.TopicByName(topic)
	p := lt.Partition(idx)
	if m.closed || p == nil {
		return ErrReplicaNotAvailable
	}
	if filepath.Clean(LogDirOf(p)) == dest {
		return nil
	}
	name := filepath.Base(p.log.Dir())
	key := partitionKey(lt.id, idx)
	var uid [16]byte
	_, _ = rand.Read(uid[:])
	future := filepath.Join(dest, fmt.Sprintf("%s.%s-future", name, hex.EncodeToString(uid[:])))
	m.dirs.mu.Lock()
	m.dirs.futures[key] = FutureReplica{Topic: topic, Partition: idx, Dir: dest, FutureDir: future, Lag: p.log.LogEndOffset()}
	m.dirs.mu.Unlock()
	defer func() {
		m.dirs.mu.Lock()
		delete(m.dirs.futures, key)
		m.dirs.mu.Unlock()
	}()

	// Out of service: no append may land in the log once the copy starts.
	p.stopped.Store(true)
	m.fetchers.unfollow(p)
	p.resignLeadership(roleNone, -1)
	p.wakeFetchWaiters()
	cfg := p.log.Config()
	oldDir := p.log.Dir()
	if err := p.log.Close(); err != nil {
		m.logger.Error("closing a log to move it", "topic", topic, "partition", idx, "err", err)
	}
	fsys := m.cfg.FS
	newDir := filepath.Join(dest, name)
	moveErr := copyDir(fsys, oldDir, future)
	if moveErr == nil {
		moveErr = fsys.Rename(future, newDir)
	}
	if moveErr == nil {
		moveErr = fsys.SyncDir(dest)
	}
	openDir := newDir
	if moveErr != nil {
		m.logger.Error("moving a replica between log dirs failed; it stays where it was",
			"topic", topic, "partition", idx, "from", oldDir, "to", dest, "err", moveErr)
		if err := fsys.RemoveAll(future); err != nil {
			m.logger.Warn("removing a future log", "dir", future, "err", err)
		}
		if err := fsys.RemoveAll(newDir); err != nil {
			m.logger.Warn("removing a future log", "dir", newDir, "err", err)
		}
		openDir = oldDir
	} else {
		stale := fmt.Sprintf("%s.%s-delete", oldDir, hex.EncodeToString(uid[:]))
		if err := fsys.Rename(oldDir, stale); err != nil {
			// Two copies must not survive: a restart would open whichever
			// dir comes first. The old one stays, the new one goes.
			m.logger.Error("moving a replica between log dirs failed: its old log cannot be removed; it stays where it was",
				"topic", topic, "partition", idx, "dir", oldDir, "err", err)
			if rerr := fsys.RemoveAll(newDir); rerr != nil {
				m.logger.Error("removing the copy of a replica whose move failed", "dir", newDir, "err", rerr)
			}
			moveErr, openDir = err, oldDir
		} else {
			_ = fsys.SyncDir(filepath.Dir(oldDir))
			remove := func() {
				if err := fsys.RemoveAll(stale); err != nil {
					m.logger.Warn("removing a moved replica's old log", "dir", stale, "err", err)
				}
			}
			if !m.tasks.Go(remove) {
				remove()
			}
		}
	}
	l, err := storage.Open(openDir, cfg, storage.Options{FS: fsys, Logger: m.logger.With("partition", name), Now: m.now})
	if err != nil {
		// Neither place opens: the replica is lost here, as in an offline dir.
		m.logger.Error("reopening a moved replica", "dir", openDir, "err", err)
		nt := &Topic{name: lt.name, id: lt.id, parts: slices.Clone(lt.parts)}
		nt.parts[idx] = nil
		m.dirs.mu.Lock()
		m.dirs.offlineParts[key] = true
		m.dirs.mu.Unlock()
		m.publishLocked(nt, lt)
		return errors.Join(moveErr, err)
	}
	np := &Partition{m: m, topic: p.topic, topicID: p.topicID, index: idx, log: l}
	st := p.state.Load()
	p.repl.mu.Lock()
	np.repl.minISR = p.repl.minISR
	p.repl.mu.Unlock()
	np.leaderThrottled.Store(p.leaderThrottled.Load())
	np.followerThrottled.Store(p.followerThrottled.Load())
	if st != nil {
		if len(st.Replicas) <= 1 {
			l.UpdateHighWatermark(l.LogEndOffset())
		}
		np.state.Store(st)
		m.transition(np, st)
	}
	nt := &Topic{name: lt.name, id: lt.id, parts: slices.Clone(lt.parts)}
	nt.parts[idx] = np
	m.publishLocked(nt, lt)
	if moveErr == nil {
		m.logger.Info("moved replica to another log dir", "topic", topic, "partition", idx, "from", filepath.Dir(oldDir), "to", dest)
	}
	return moveErr
}

// copyDir copies the regular files of src into dst (created), fsyncing
// each and dst.
func copyDir(fsys storage.FS, src, dst string) error {
	entries, err := fsys.ReadDir(src)
	if err != nil {
		return err
	}
	if err := fsys.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(fsys, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), buf); err != nil {
			return err
		}
	}
	return fsys.SyncDir(dst)
}

func copyFile(fsys storage.FS, src, dst string, buf []byte) error {
	in, err := fsys.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	var off int64
	for {
		n, rerr := in.ReadAt(buf, off)
		if n > 0 {
			if _, err := out.WriteAt(buf[:n], off); err != nil {
				out.Close()
				return err
			}
			off += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// DirOffline reports whether dir was marked offline.
func (m *Manager) DirOffline(dir string) bool {
	m.dirs.mu.Lock()
	defer m.dirs.mu.Unlock()
	return m.dirs.offline[filepath.Clean(dir)]
}

// sweepLeftovers removes, in the background, what an interrupted move or
// deletion left in the log dirs: <topic>-<p>.<id>-future (a copy not
// renamed into place; the replica's log is intact where it was) and
// <topic>-<p>.<id>-delete (a log already renamed away), as Kafka's
// LogManager deletes the latter at start. Called before the metadata is
// followed, so no move is under way.
func (m *Manager) sweepLeftovers() {
	fsys := m.cfg.FS
	for _, d := range m.cfg.LogDirs {
		entries, err := fsys.ReadDir(d)
		if err != nil {
			continue // the log-dir watcher reports a dir that cannot be read
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || !(strings.HasSuffix(name, "-future") || strings.HasSuffix(name, "-delete")) || !strings.Contains(name, ".") {
				continue
			}
			path := filepath.Join(d, name)
			remove := func() {
				if err := fsys.RemoveAll(path); err != nil {
					m.logger.Warn("removing a leftover log directory", "dir", path, "err", err)
				} else {
					m.logger.Info("removed a leftover log directory", "dir", path)
				}
			}
			if !m.tasks.Go(remove) {
				remove()
			}
		}
	}
}
