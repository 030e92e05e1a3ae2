package broker

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// partition is one partition hosted on this broker: its log, the leader
// state from the metadata, and the fetches parked until it grows.
type partition struct {
	topic   string
	topicID [16]byte
	index   int32
	log     *storage.Log
	state   atomic.Pointer[controller.PartitionInfo]

	waitMu  sync.Mutex
	waiters map[*fetchWaiter]struct{}

	// repl is the partition's replication state (replica.go).
	repl replication
}

// fetchWaiter is a parked Fetch; wake is signalled (never blocking) when any
// partition it waits on is appended to.
type fetchWaiter struct{ wake chan struct{} }

func newFetchWaiter() *fetchWaiter { return &fetchWaiter{wake: make(chan struct{}, 1)} }

func (p *partition) addWaiter(w *fetchWaiter) {
	p.waitMu.Lock()
	if p.waiters == nil {
		p.waiters = make(map[*fetchWaiter]struct{})
	}
	p.waiters[w] = struct{}{}
	p.waitMu.Unlock()
}

func (p *partition) removeWaiter(w *fetchWaiter) {
	p.waitMu.Lock()
	delete(p.waiters, w)
	p.waitMu.Unlock()
}

// wakeWaiters signals every parked fetch after an append.
func (p *partition) wakeWaiters() {
	p.waitMu.Lock()
	for w := range p.waiters {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	p.waitMu.Unlock()
}

func (p *partition) isLeader(node int32) bool {
	st := p.state.Load()
	return st != nil && st.Leader == node
}

func (p *partition) leaderEpoch() int32 {
	if st := p.state.Load(); st != nil {
		return st.LeaderEpoch
	}
	return -1
}

// localTopic is the partitions of one topic that this broker hosts; a nil
// entry is a partition hosted elsewhere.
type localTopic struct {
	name  string
	id    [16]byte
	parts []*partition
}

func (t *localTopic) partition(i int32) *partition {
	if t == nil || i < 0 || int(i) >= len(t.parts) {
		return nil
	}
	return t.parts[i]
}

// partitionManager opens, tracks and closes the logs of the partitions this
// broker hosts, following the metadata in etcd. Lookups on the request path
// read immutable maps through atomic pointers; only metadata changes take mu.
type partitionManager struct {
	srv    *Server
	mu     sync.Mutex // serializes metadata application
	byName atomic.Pointer[map[string]*localTopic]
	byID   atomic.Pointer[map[[16]byte]*localTopic]
	stop   chan struct{}
	// cleaner compacts the logs of compacted topics in the background
	// (nil with log.cleaner.enable=false).
	cleaner *storage.Cleaner
}

func newPartitionManager(s *Server) *partitionManager {
	pm := &partitionManager{srv: s, stop: make(chan struct{})}
	pm.byName.Store(&map[string]*localTopic{})
	pm.byID.Store(&map[[16]byte]*localTopic{})
	return pm
}

// start opens the logs of every partition assigned here and follows changes:
// Listen replays the existing topics, then delivers each change once.
// Applying a change is idempotent anyway.
func (pm *partitionManager) start() error {
	pm.srv.ctrl.Listen(pm.apply)
	if !pm.srv.cfg.LogCleanerEnable {
		return nil
	}
	c, err := storage.NewCleaner(pm.srv.cfg.Cleaner, pm.logs, storage.Options{
		FS: pm.srv.cfg.StorageFS, Logger: pm.srv.logger.With("component", "log-cleaner"),
	})
	if err != nil {
		return fmt.Errorf("log cleaner: %w", err)
	}
	pm.cleaner = c
	c.Start()
	return nil
}

// logs lists every hosted partition's log, for the cleaner (which picks the
// compacted ones); safe to call from any goroutine.
func (pm *partitionManager) logs() []*storage.Log {
	var out []*storage.Log
	pm.forEach(func(p *partition) { out = append(out, p.log) })
	return out
}

func (pm *partitionManager) topicByName(name string) *localTopic { return (*pm.byName.Load())[name] }
func (pm *partitionManager) topicByID(id [16]byte) *localTopic   { return (*pm.byID.Load())[id] }

func (pm *partitionManager) get(topic string, p int32) *partition {
	return pm.topicByName(topic).partition(p)
}

func (pm *partitionManager) apply(ch controller.TopicChange) {
	var err error
	if ch.Deleted {
		pm.deleteTopic(ch.Topic)
		return
	}
	if err = pm.applyTopic(ch.Topic); err != nil {
		pm.srv.logger.Error("applying topic metadata", "topic", ch.Topic.Name, "err", err)
	}
}

func (pm *partitionManager) applyTopic(t controller.TopicInfo) error {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	node := pm.srv.cfg.NodeID
	old := pm.topicByName(t.Name)
	if old != nil && old.id != t.ID {
		// Same name, new topic: the old one was deleted while we did not see it.
		pm.deleteLocked(old)
		old = nil
	}
	lt := &localTopic{name: t.Name, id: t.ID, parts: make([]*partition, len(t.Partitions))}
	// Topic configs over the broker's current defaults, dynamic ones included.
	logCfg, err := pm.srv.topicLogConfig(t.Configs)
	if err != nil {
		pm.srv.logger.Warn("invalid topic config, using broker defaults", "topic", t.Name, "err", err)
		logCfg = pm.srv.currentConfig().LogDefaults
	}
	minISR, err := pm.srv.currentConfig().TopicMinInsyncReplicas(t.Configs)
	if err != nil {
		minISR = pm.srv.currentConfig().MinInsyncReplicas
	}
	var errs []error
	for i, pi := range t.Partitions {
		pi := pi
		if !slices.Contains(pi.Replicas, node) {
			if p := old.partition(int32(i)); p != nil {
				// Reassigned away: stop replicating and delete the replica,
				// as Kafka's StopReplica with deletion.
				pm.stopReplica(p)
			}
			continue
		}
		p := old.partition(int32(i))
		if p != nil {
			p.log.SetConfig(logCfg)
		} else {
			p, err = pm.openPartition(t, int32(i), logCfg)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(pi.Replicas) <= 1 {
				// A single replica's high watermark is its log end offset.
				p.log.UpdateHighWatermark(p.log.LogEndOffset())
			}
		}
		p.repl.mu.Lock()
		p.repl.minISR = minISR
		p.repl.mu.Unlock()
		p.state.Store(&pi)
		pm.transition(p, &pi)
		lt.parts[i] = p
	}
	pm.publishLocked(lt, nil)
	return errors.Join(errs...)
}

// transition moves a partition to the role its new state gives this broker:
// leader (a new leadership when the epoch changed, else an ISR or replica
// change), or follower of the current leader (fetching, after truncation),
// as Kafka's makeLeader/makeFollower.
func (pm *partitionManager) transition(p *partition, pi *controller.PartitionInfo) {
	s := pm.srv
	p.repl.mu.Lock()
	role, epoch := p.repl.role, p.repl.epoch
	p.repl.mu.Unlock()
	if pi.Leader == s.cfg.NodeID {
		if role == roleLeader && epoch == pi.LeaderEpoch {
			s.leaderStateChanged(p, pi)
			return
		}
		s.fetchers.unfollow(p)
		s.becomeLeader(p, pi)
		return
	}
	if role == roleFollower && epoch == pi.LeaderEpoch {
		return
	}
	if role == roleLeader {
		s.resignLeadership(p, roleFollower, pi.LeaderEpoch)
	} else {
		p.repl.mu.Lock()
		p.repl.role, p.repl.epoch = roleFollower, pi.LeaderEpoch
		p.repl.mu.Unlock()
	}
	if pi.Leader < 0 {
		s.fetchers.unfollow(p)
		s.logger.Info("partition has no leader", "topic", p.topic, "partition", p.index, "leader_epoch", pi.LeaderEpoch)
		return
	}
	s.fetchers.follow(p, pi.Leader, pi.LeaderEpoch)
	s.logger.Info("became follower", "topic", p.topic, "partition", p.index, "leader", pi.Leader,
		"leader_epoch", pi.LeaderEpoch, "log_end_offset", p.log.LogEndOffset())
}

// stopReplica ends this broker's part in a partition and deletes its log.
func (pm *partitionManager) stopReplica(p *partition) {
	pm.srv.fetchers.unfollow(p)
	pm.srv.resignLeadership(p, roleNone, -1)
	p.wakeWaiters()
	if err := p.log.Delete(); err != nil {
		pm.srv.logger.Error("deleting partition log", "topic", p.topic, "partition", p.index, "err", err)
	} else {
		pm.srv.logger.Info("deleted replica moved to other brokers", "topic", p.topic, "partition", p.index)
	}
}

func (pm *partitionManager) deleteTopic(t controller.TopicInfo) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if lt := pm.topicByName(t.Name); lt != nil && lt.id == t.ID {
		pm.deleteLocked(lt)
	}
}

func (pm *partitionManager) deleteLocked(lt *localTopic) {
	pm.publishLocked(nil, lt)
	for _, p := range lt.parts {
		if p == nil {
			continue
		}
		pm.srv.fetchers.unfollow(p)
		pm.srv.resignLeadership(p, roleNone, -1)
		p.wakeWaiters()
		if err := p.log.Delete(); err != nil {
			pm.srv.logger.Error("deleting partition log", "topic", p.topic, "partition", p.index, "err", err)
		} else {
			pm.srv.logger.Info("deleted partition log", "topic", p.topic, "partition", p.index)
		}
	}
}

// publishLocked swaps in new copies of the lookup maps with add put in and
// remove taken out.
func (pm *partitionManager) publishLocked(add, remove *localTopic) {
	byName := make(map[string]*localTopic, len(*pm.byName.Load())+1)
	for k, v := range *pm.byName.Load() {
		byName[k] = v
	}
	byID := make(map[[16]byte]*localTopic, len(*pm.byID.Load())+1)
	for k, v := range *pm.byID.Load() {
		byID[k] = v
	}
	if remove != nil {
		delete(byName, remove.name)
		delete(byID, remove.id)
	}
	if add != nil {
		byName[add.name] = add
		byID[add.id] = add
	}
	pm.byName.Store(&byName)
	pm.byID.Store(&byID)
}

// openPartition opens (recovering if needed) or creates the log directory
// <log.dir>/<topic>-<partition>, checking its partition.metadata topic id so
// that a log left from a deleted topic of the same name is never served.
func (pm *partitionManager) openPartition(t controller.TopicInfo, idx int32, cfg storage.LogConfig) (*partition, error) {
	name := fmt.Sprintf("%s-%d", t.Name, idx)
	dir := ""
	for _, d := range pm.srv.cfg.LogDirs {
		cand := filepath.Join(d, name)
		if _, err := os.Stat(cand); err == nil {
			dir = cand
			break
		}
	}
	if dir != "" {
		id, err := readPartitionMetadata(dir)
		if err == nil && id != t.ID {
			stale := fmt.Sprintf("%s.%s-delete", dir, encodeTopicID(id))
			pm.srv.logger.Warn("log directory belongs to an older topic of the same name; moving it aside",
				"dir", dir, "moved_to", stale)
			if err := os.Rename(dir, stale); err != nil {
				return nil, fmt.Errorf("moving stale log %s: %w", dir, err)
			}
			go os.RemoveAll(stale)
			dir = ""
		}
	}
	if dir == "" {
		dir = filepath.Join(pm.leastLoadedDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating log dir %s: %w", dir, err)
		}
		if err := writePartitionMetadata(dir, t.ID); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	l, err := storage.Open(dir, cfg, storage.Options{FS: pm.srv.cfg.StorageFS, Logger: pm.srv.logger.With("partition", name)})
	if err != nil {
		return nil, fmt.Errorf("opening log %s: %w", dir, err)
	}
	pm.srv.logger.Debug("opened partition log", "dir", dir, "log_end_offset", l.LogEndOffset(),
		"high_watermark", l.HighWatermark(), "took", time.Since(start))
	return &partition{topic: t.Name, topicID: t.ID, index: idx, log: l}, nil
}

func (pm *partitionManager) leastLoadedDir() string {
	dirs := pm.srv.cfg.LogDirs
	if len(dirs) == 1 {
		return dirs[0]
	}
	count := make(map[string]int, len(dirs))
	for _, lt := range *pm.byName.Load() {
		for _, p := range lt.parts {
			if p != nil {
				count[filepath.Dir(p.log.Dir())]++
			}
		}
	}
	best := dirs[0]
	for _, d := range dirs[1:] {
		if count[d] < count[best] {
			best = d
		}
	}
	return best
}

const partitionMetadataFile = "partition.metadata"

func encodeTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// writePartitionMetadata writes Kafka's partition.metadata file.
func writePartitionMetadata(dir string, id [16]byte) error {
	body := "version: 0\ntopic_id: " + encodeTopicID(id) + "\n"
	tmp := filepath.Join(dir, partitionMetadataFile+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	return os.Rename(tmp, filepath.Join(dir, partitionMetadataFile))
}

func readPartitionMetadata(dir string) ([16]byte, error) {
	var id [16]byte
	b, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return id, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id:"); ok {
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
			if err != nil || len(raw) != 16 {
				return id, fmt.Errorf("bad topic_id in %s", dir)
			}
			copy(id[:], raw)
			return id, nil
		}
	}
	return id, fmt.Errorf("no topic_id in %s", dir)
}

// maintenanceLoop runs the periodic per-partition work: flush.ms,
// retention, producer-id expiry and ISR shrinking, every second.
func (pm *partitionManager) maintenanceLoop() {
	defer pm.srv.bgWG.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start := time.Now()
	retention := periodic{interval: time.Duration(pm.srv.cfg.RetentionCheckIntervalMs) * time.Millisecond, last: start}
	expiry := periodic{interval: time.Duration(pm.srv.cfg.ProducerIDExpirationCheckIntervalMs) * time.Millisecond, last: start}
	for {
		select {
		case <-pm.stop:
			return
		case now := <-t.C:
			checkRetention, expire := retention.due(now), expiry.due(now)
			lagMax := pm.srv.replica.lagMax
			pm.forEach(func(p *partition) {
				// Shutdown need not wait for the rest of a pass: closing
				// a log flushes it.
				if pm.stopping() {
					return
				}
				pm.maintain(p, now, checkRetention, expire)
				pm.srv.maybeShrinkISR(p, now, lagMax)
			})
		}
	}
}

// highWatermarkCheckpointLoop writes the high-watermark checkpoint of every
// partition whose high watermark moved, each
// replica.high.watermark.checkpoint.interval.ms (Kafka's
// highwatermark-checkpoint task). It runs apart from the maintenance loop
// because a checkpoint is two fsyncs: a pass over 10,000 partitions takes
// seconds, which ISR shrinking and retention must not wait for, and which
// shutdown cuts short (closing a log checkpoints it).
func (pm *partitionManager) highWatermarkCheckpointLoop() {
	defer pm.srv.bgWG.Done()
	t := time.NewTicker(time.Duration(pm.srv.coordinatorSetting(pm.srv.cfg.Props,
		"replica.high.watermark.checkpoint.interval.ms", 5000, 1)) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-pm.stop:
			return
		case <-t.C:
			pm.forEach(func(p *partition) {
				// A topic deleted since the snapshot has closed its logs.
				if pm.stopping() || pm.get(p.topic, p.index) != p {
					return
				}
				if err := p.log.CheckpointHighWatermark(); err != nil {
					pm.srv.logger.Warn("checkpointing the high watermark", "topic", p.topic, "partition", p.index, "err", err)
				}
			})
		}
	}
}

// periodic is a task run every interval by the maintenance loop.
type periodic struct {
	interval time.Duration
	last     time.Time
}

// due reports whether the task should run at now, and notes that it did.
func (t *periodic) due(now time.Time) bool {
	if now.Sub(t.last) < t.interval {
		return false
	}
	t.last = now
	return true
}

// maintain runs the time-based work of one partition: flush.ms, retention
// every log.retention.check.interval.ms, producer-state expiry every
// producer.id.expiration.check.interval.ms.
func (pm *partitionManager) maintain(p *partition, now time.Time, checkRetention, expireProducers bool) {
	if err := p.log.MaybeFlush(now); err != nil {
		pm.srv.logger.Error("flushing log", "topic", p.topic, "partition", p.index, "err", err)
	}
	if expireProducers {
		p.log.ExpireProducers(now)
	}
	if !checkRetention {
		return
	}
	if n, err := p.log.DeleteOldSegments(now); err != nil {
		pm.srv.logger.Error("retention", "topic", p.topic, "partition", p.index, "err", err)
	} else if n > 0 {
		pm.srv.logger.Info("deleted segments by retention", "topic", p.topic, "partition", p.index,
			"segments", n, "log_start_offset", p.log.LogStartOffset())
	}
}

func (pm *partitionManager) forEach(fn func(*partition)) {
	for _, lt := range *pm.byName.Load() {
		for _, p := range lt.parts {
			if p != nil {
				fn(p)
			}
		}
	}
}

// stopping reports whether stopMaintenance has been called.
func (pm *partitionManager) stopping() bool {
	select {
	case <-pm.stop:
		return true
	default:
		return false
	}
}

func (pm *partitionManager) stopMaintenance() {
	if pm.cleaner != nil {
		pm.cleaner.Close()
	}
	select {
	case <-pm.stop:
	default:
		close(pm.stop)
	}
}

// close flushes and closes every log (writing the clean-shutdown markers).
func (pm *partitionManager) close() error {
	pm.srv.fetchers.close()
	pm.mu.Lock()
	defer pm.mu.Unlock()
	// Closing a log fsyncs its active segment and writes its checkpoints:
	// one after another, 10,000 partitions took a minute. As Kafka, close
	// num.recovery.threads.per.data.dir logs at a time per log directory.
	s := pm.srv
	workers := int(s.coordinatorSetting(s.cfg.Props, "num.recovery.threads.per.data.dir", 2, 1)) * max(1, len(s.cfg.LogDirs))
	var (
		errs   []error
		errsMu sync.Mutex
		wg     sync.WaitGroup
	)
	todo := make(chan *partition)
	for range workers {
		wg.Go(func() {
			for p := range todo {
				if err := p.log.Close(); err != nil {
					errsMu.Lock()
					errs = append(errs, fmt.Errorf("closing %s-%d: %w", p.topic, p.index, err))
					errsMu.Unlock()
				}
			}
		})
	}
	start, n := time.Now(), 0
	pm.forEach(func(p *partition) { todo <- p; n++ })
	close(todo)
	wg.Wait()
	s.logger.Info("partition logs closed", "partitions", n, "workers", workers, "took", time.Since(start))
	pm.byName.Store(&map[string]*localTopic{})
	pm.byID.Store(&map[[16]byte]*localTopic{})
	return errors.Join(errs...)
}
