package replication

// Applying a topic's metadata: opening the logs of the partitions assigned
// here and moving each to its role.
//
// A topic of thousands of partitions created at once is bound by fsyncs
// (each new partition's partition.metadata: the file and its directory;
// the leader epoch is recorded in memory, storage/leader_epoch.go), not by
// CPU: one after another, 10,000 partitions took 20 s. The partitions of one change are therefore
// applied by up to applyWorkers goroutines at once (the filesystem's
// journal commits concurrent fsyncs together), and the log dir that holds
// the new partition directories is fsynced once per change rather than once
// per partition. The topic is published (and the change returns) only after
// that fsync, so nothing is written to a partition whose directory entry
// could still vanish in a power loss. From SyncFSMinLogs partitions in one
// change (and where the filesystem has syncfs) even those fsyncs go: the
// logs are opened through a storage.DeferSyncFS and one syncfs per log dir
// makes everything they wrote durable before the topic is published.

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// applyWorkers bounds the partitions of one change opened and moved to
// their role at once: enough fsyncs in flight for the filesystem to batch
// them, few enough that a change does not hold hundreds of files open.
const applyWorkers = 16

// applyTopic applies t. When changed is not nil only the partitions it
// names changed state since the previous change of the same topic: the
// others keep their objects and roles untouched, so a leader or ISR change
// costs one partition's work, not the topic's (a partition assigned here
// that is not open yet is opened whatever changed says).
func (m *Manager) applyTopic(t controller.TopicInfo, changed []int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	node := m.cfg.NodeID
	old := m.TopicByName(t.Name)
	if old != nil && old.id != t.ID {
		// Same name, new topic: the old one was deleted while we did not see it.
		m.deleteLocked(old)
		old = nil
	}
	lt := &Topic{name: t.Name, id: t.ID, parts: make([]*Partition, len(t.Partitions))}
	// Topic configs over the broker's current defaults, dynamic ones included.
	logCfg, minISR, err := m.topicConfig(t.Configs)
	if err != nil {
		m.logger.Warn("invalid topic config, using broker defaults", "topic", t.Name, "err", err)
	}
	throttles := throttledOn(t.Configs, node)
	look := func(yield func(int, controller.PartitionInfo) bool) {
		for i, pi := range t.Partitions {
			if !yield(i, pi) {
				return
			}
		}
	}
	if changed != nil && old != nil {
		copy(lt.parts, old.parts) // a topic's partitions are never removed
		look = func(yield func(int, controller.PartitionInfo) bool) {
			j := 0
			for i := range t.Partitions {
				for j < len(changed) && int(changed[j]) < i {
					j++
				}
				if j < len(changed) && int(changed[j]) == i {
					if !yield(i, t.Partitions[i]) {
						return
					}
				} else if lt.parts[i] == nil && slices.Contains(t.Partitions[i].Replicas, node) {
					// Assigned here but not open (its opening failed): again.
					if !yield(i, t.Partitions[i]) {
						return
					}
				}
			}
		}
	}
	var todo []int32
	for i, pi := range look {
		lt.parts[i] = nil
		if !slices.Contains(pi.Replicas, node) {
			if p := old.Partition(int32(i)); p != nil {
				// Reassigned away: stop replicating and delete the replica,
				// as Kafka's StopReplica with deletion.
				m.stopReplica(p, "deleted replica moved to other brokers")
			}
			continue
		}
		if m.dirs.offlineParts[partitionKey(t.ID, int32(i))] {
			continue // its dir failed: offline until restart, as in Kafka
		}
		todo = append(todo, int32(i))
	}

	dirs := m.newDirPicker(t.Name)
	// Many partitions at once (a topic created or a broker started with
	// thousands): their logs are opened without fsyncs, and one syncfs per
	// log dir makes them all durable before the topic is published.
	fsys := m.cfg.FS
	var batch *storage.DeferSyncFS
	if len(todo) >= m.syncFSMinLogs() && storage.CanSyncFS(m.filesystem()) {
		batch = storage.NewDeferSyncFS(m.filesystem())
		fsys = batch
	}
	var (
		errsMu  sync.Mutex
		errs    []error
		created = map[string][]int32{} // log dir -> partitions created in it
		opened  []*Partition           // opened by this change
	)
	apply := func(i int32) {
		pi := &t.Partitions[i]
		p := old.Partition(i)
		if p != nil {
			dirs.add(LogDirOf(p))
			p.log.SetConfig(logCfg)
		} else {
			np, isNew, err := m.openPartition(t, i, logCfg, dirs, fsys)
			if err != nil {
				errsMu.Lock()
				errs = append(errs, err)
				errsMu.Unlock()
				return
			}
			p = np
			errsMu.Lock()
			opened = append(opened, p)
			errsMu.Unlock()
			if isNew {
				errsMu.Lock()
				d := LogDirOf(p)
				created[d] = append(created[d], i)
				errsMu.Unlock()
			}
			if len(pi.Replicas) <= 1 {
				// A single replica's high watermark is its log end offset.
				p.log.UpdateHighWatermark(p.log.LogEndOffset())
			}
		}
		m.start(p, throttles.settings(i, minISR), pi)
		lt.parts[i] = p
	}
	forEachParallel(todo, applyWorkers, apply)

	// The new directories' entries in their log dirs, once per dir: without
	// this fsync a power loss can take a whole partition away, fsynced
	// segments included, since nothing else ever fsyncs the log dir (Kafka
	// gets it from the log-dir-wide checkpoints it renames into place).
	// A batch instead syncs the filesystem of every log dir it opened a
	// partition in: that covers the entries and every write it deferred.
	syncDir := m.cfg.FS.SyncDir
	if batch != nil {
		batch.Finish()
		syncDir = func(d string) error { _, err := storage.SyncFS(m.filesystem(), d); return err }
		created = map[string][]int32{}
		for _, p := range opened {
			if lt.parts[p.index] == p {
				created[LogDirOf(p)] = append(created[LogDirOf(p)], p.index)
			}
		}
	}
	for d, parts := range created {
		if err := syncDir(d); err != nil {
			errs = append(errs, fmt.Errorf("creating the logs of topic %s in %s: %w", t.Name, d, err))
			for _, i := range parts {
				p := lt.parts[i]
				lt.parts[i] = nil
				m.fetchers.unfollow(p)
				p.resignLeadership(roleNone, -1)
				err := p.log.Close()
				m.shutdownMarks.noteClosed(p.log.Dir(), err)
				if err != nil {
					m.logger.Debug("closing a log whose directory was not made durable", "dir", p.log.Dir(), "err", err)
				}
			}
		}
	}
	m.publishLocked(lt, nil)
	// A move between log dirs that a previous run left unfinished goes on
	// once its partition is published (logdirmove.go).
	for _, p := range opened {
		if lt.parts[p.index] == p {
			m.resumeMoveLocked(p)
		}
	}
	return errors.Join(errs...)
}

// forEachParallel calls fn for each of items, on up to workers goroutines
// (on the caller's alone for a single item), and returns when all are done.
func forEachParallel(items []int32, workers int, fn func(int32)) {
	if len(items) <= 1 {
		for _, it := range items {
			fn(it)
		}
		return
	}
	next := make(chan int32)
	var wg sync.WaitGroup
	for range min(workers, len(items)) {
		wg.Go(func() {
			for it := range next {
				fn(it)
			}
		})
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
}

// dirPicker places the new partitions of one change: each goes to the
// online log dir holding the fewest partitions, the first of them on a tie
// (Kafka's LogManager.nextLogDirs). The counts are taken once per change,
// and only when there is a choice to make, so that opening a partition
// never walks every hosted one.
type dirPicker struct {
	m     *Manager
	topic string
	dirs  []string // online, cleaned

	mu      sync.Mutex
	counted bool           // count holds the other topics' partitions
	count   map[string]int // cleaned log dir -> partitions
}

func (m *Manager) newDirPicker(topic string) *dirPicker {
	return &dirPicker{m: m, topic: topic, dirs: m.onlineDirs(), count: map[string]int{}}
}

// add counts one partition of the topic in log dir d.
func (dp *dirPicker) add(d string) {
	if len(dp.dirs) <= 1 {
		return
	}
	dp.mu.Lock()
	dp.count[filepath.Clean(d)]++
	dp.mu.Unlock()
}

// pick is the log dir for a new partition, counted in it.
func (dp *dirPicker) pick() string {
	switch len(dp.dirs) {
	case 0:
		return filepath.Clean(dp.m.cfg.LogDirs[0]) // every dir failed: creating fails
	case 1:
		return dp.dirs[0]
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if !dp.counted {
		dp.counted = true
		dp.m.ForEach(func(p *Partition) {
			if p.topic != dp.topic {
				dp.count[filepath.Clean(LogDirOf(p))]++
			}
		})
	}
	best := dp.dirs[0]
	for _, d := range dp.dirs[1:] {
		if dp.count[d] < dp.count[best] {
			best = d
		}
	}
	dp.count[best]++
	return best
}
