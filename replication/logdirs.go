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
//     (AlterReplicaLogDirs) as Kafka does: a future log is created in the
//     destination and catches up from the current one while that keeps
//     serving, then the two are swapped (logdirmove.go).

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/strait/strait/controller"
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
	offline      map[string]bool  // cleaned dir paths found failed
	offlineParts map[string]bool  // partitionKey of the replicas they held
	futures      map[string]*move // partitionKey -> the move under way
	// leftover: the -future directories found at Start (partition
	// directory name -> path), resumed when their partition opens.
	leftover map[string]string
}

// FutureReplica is a partition being moved to another log dir (Kafka's
// future replica).
type FutureReplica struct {
	Topic     string
	Partition int32
	Dir       string // the log dir it is moving to
	FutureDir string // the partition directory being written there
	Size      int64  // the future log's size
	Lag       int64  // log end offset of the current replica minus the future one's
}

func partitionKey(id [16]byte, idx int32) string { return fmt.Sprintf("%x-%d", id, idx) }

func (m *Manager) initDirs() {
	m.dirs.offline = map[string]bool{}
	m.dirs.offlineParts = map[string]bool{}
	m.dirs.futures = map[string]*move{}
	m.dirs.leftover = map[string]string{}
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
	var moves []*move
	for _, mv := range m.dirs.futures {
		if mv.dir == dir || filepath.Clean(LogDirOf(mv.p)) == dir {
			moves = append(moves, mv)
		}
	}
	m.dirs.mu.Unlock()
	for _, mv := range moves {
		m.cancelMoveLocked(mv) // before the logs it reads close
	}
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

// DirOffline reports whether dir was marked offline.
func (m *Manager) DirOffline(dir string) bool {
	m.dirs.mu.Lock()
	defer m.dirs.mu.Unlock()
	return m.dirs.offline[filepath.Clean(dir)]
}
