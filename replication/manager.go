package replication

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/internal/background"
	"github.com/strait/strait/quota"
	"github.com/strait/strait/storage"
)

// Topic is the partitions of one topic that this broker hosts; a nil entry
// is a partition hosted elsewhere. Immutable once published.
type Topic struct {
	name  string
	id    [16]byte
	parts []*Partition
}

// Name is the topic's name.
func (t *Topic) Name() string { return t.name }

// ID is the topic's id.
func (t *Topic) ID() [16]byte { return t.id }

// Partition is partition i if this broker hosts it, else nil (also on a
// nil Topic).
func (t *Topic) Partition(i int32) *Partition {
	if t == nil || i < 0 || int(i) >= len(t.parts) {
		return nil
	}
	return t.parts[i]
}

// Manager opens, tracks, replicates and closes the partitions this broker
// hosts, following the metadata (Kafka's ReplicaManager, with the log
// opening and the periodic log tasks of its LogManager).
//
// Thread-safety: every method is safe for concurrent use. Lookups on the
// request path (TopicByName, TopicByID, Partition, ForEach) read immutable
// maps through atomic pointers and take no lock; only metadata application,
// ReconfigureLogs and Close take mu. See the package comment for the lock
// order.
type Manager struct {
	cfg         Config
	meta        MetadataView
	isr         ISRWriter
	client      BrokerClient
	topicConfig TopicConfigFunc
	logger      *slog.Logger
	now         func() time.Time
	// leaderQuota and followerQuota are the replication throttles
	// (throttle.go).
	leaderQuota, followerQuota *quota.Replication
	alterLogDirsQuota          *quota.Replication // future logs' copying (logdirmove.go)

	// isrShrinks and isrExpands count the ISR changes this broker proposed
	// as a leader and the controller committed (ISRChanges).
	isrShrinks, isrExpands atomic.Int64

	mu     sync.Mutex // serializes metadata application and Close
	byName atomic.Pointer[map[string]*Topic]
	byID   atomic.Pointer[map[[16]byte]*Topic]
	closed bool     // under mu: Close has closed the logs
	dirs   dirState // offline log dirs and moves between dirs (logdirs.go)
	// dirsVerified is set by Start once every log directory is known to be
	// this cluster's and node's: Close writes to them only then.
	dirsVerified bool
	// checkpoints is each log directory's checkpoints, by cleaned path
	// (dircheckpoints.go); set by Start, read-only afterwards.
	checkpoints map[string]*storage.DirCheckpoints
	// files bounds the descriptors of sealed segments (nil: unbounded).
	files *storage.FileCache
	// shutdownMarks is the log directories' clean-shutdown markers
	// (cleanshutdown.go); its map is set by Start.
	shutdownMarks cleanShutdown
	// startTopicIDs is the topic ids of the partition directories Start
	// found, by cleaned log dir and directory name (stray.go): written
	// before the metadata replay, read-only during it, nil after (under mu).
	startTopicIDs map[string]map[string][16]byte

	fetchers *fetchers
	// sched says which partitions the maintenance loop visits (schedule.go).
	sched schedule
	// cleaner compacts the logs of compacted topics in the background
	// (nil with log.cleaner.enable=false).
	cleaner *storage.Cleaner

	// stop is closed by Stop: the loops end, a checkpoint pass is cut
	// short, and ISR changes in flight are cancelled (stopCtx).
	stop     chan struct{}
	stopOnce sync.Once
	stopCtx  context.Context
	cancel   context.CancelFunc
	// loops counts the maintenance and checkpoint loops; tasks holds the
	// short-lived goroutines (ISR changes, stale directory removal), which
	// tasks.Go refuses to start once Close waits for them.
	loops sync.WaitGroup
	tasks background.Group
}

// New returns a Manager hosting nothing yet; Start makes it follow the
// metadata.
func New(cfg Config, deps Deps) *Manager {
	m := &Manager{
		cfg: cfg, meta: deps.Metadata, isr: deps.ISR, client: deps.Brokers,
		topicConfig: deps.TopicConfig, logger: deps.Logger, now: deps.Now,
		leaderQuota: deps.LeaderQuota, followerQuota: deps.FollowerQuota, alterLogDirsQuota: deps.AlterLogDirsQuota,
		stop: make(chan struct{}),
	}
	if m.leaderQuota == nil {
		m.leaderQuota = quota.NewReplication(quota.DefaultConfig)
	}
	if m.followerQuota == nil {
		m.followerQuota = quota.NewReplication(quota.DefaultConfig)
	}
	if m.alterLogDirsQuota == nil {
		m.alterLogDirsQuota = quota.NewReplication(quota.DefaultConfig)
	}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.topicConfig == nil {
		m.topicConfig = func(map[string]string) (storage.LogConfig, int32, error) {
			return storage.DefaultLogConfig(), 1, nil
		}
	}
	m.stopCtx, m.cancel = context.WithCancel(context.Background())
	m.initDirs()
	m.fetchers = newFetchers(m)
	m.sched.init()
	m.byName.Store(&map[string]*Topic{})
	m.byID.Store(&map[[16]byte]*Topic{})
	if cfg.SegmentOpenFilesMax > 0 {
		m.files = storage.NewFileCache(cfg.SegmentOpenFilesMax)
		sealed, total := m.files.Bounds()
		m.logger.Info("segment file descriptors bounded", "sealed", sealed, "total", total)
	}
	return m
}

// Start checks that each log directory is this cluster's and node's
// (meta.properties, logdir_identity.go), moves the stray partition logs
// aside (stray.go), opens the logs of
// every partition assigned here and follows changes (Listen replays the
// existing topics, then delivers each change once; applying a change is
// idempotent anyway), then starts the cleaner and the background loops.
func (m *Manager) Start() error {
	if err := m.checkLogDirIdentities(); err != nil {
		return err
	}
	m.mu.Lock()
	m.dirsVerified = true
	m.mu.Unlock()
	m.sweepLeftovers()
	m.openDirCheckpoints()
	if err := m.loadCleanShutdown(); err != nil {
		return err
	}
	m.moveStrayLogs()
	m.meta.Listen(m.apply)
	m.mu.Lock()
	m.startTopicIDs = nil // for the replay's opens only
	m.mu.Unlock()
	m.sweepUnclaimedFutures()
	if m.cfg.LogCleanerEnable {
		c, err := storage.NewCleaner(m.cfg.Cleaner, m.Logs, storage.Options{
			FS: m.cfg.FS, Logger: m.logger.With("component", "log-cleaner"), Now: m.now,
		})
		if err != nil {
			return fmt.Errorf("log cleaner: %w", err)
		}
		m.cleaner = c
		c.Start()
	}
	m.loops.Add(2)
	go m.maintenanceLoop()
	go m.checkpointLoop()
	return nil
}

// Logs lists every hosted partition's log (the cleaner picks the compacted
// ones).
func (m *Manager) Logs() []*storage.Log {
	var out []*storage.Log
	m.ForEach(func(p *Partition) { out = append(out, p.log) })
	return out
}

// FileCache is the cache bounding the segment files of this broker's logs
// (nil: unbounded).
func (m *Manager) FileCache() *storage.FileCache { return m.files }

// TopicByName is the hosted partitions of topic name, nil if none.
func (m *Manager) TopicByName(name string) *Topic { return (*m.byName.Load())[name] }

// TopicByID is the hosted partitions of the topic with id, nil if none.
func (m *Manager) TopicByID(id [16]byte) *Topic { return (*m.byID.Load())[id] }

// Partition is topic's partition p if hosted here, else nil.
func (m *Manager) Partition(topic string, p int32) *Partition {
	return m.TopicByName(topic).Partition(p)
}

// ISRChanges are the ISR shrinks and expands this broker proposed as a
// leader and the controller committed since start (Kafka's IsrShrinksPerSec
// and IsrExpandsPerSec counts).
func (m *Manager) ISRChanges() (shrinks, expands int64) {
	return m.isrShrinks.Load(), m.isrExpands.Load()
}

// ForEach calls fn for every hosted partition, from a snapshot.
func (m *Manager) ForEach(fn func(*Partition)) {
	for _, lt := range *m.byName.Load() {
		for _, p := range lt.parts {
			if p != nil {
				fn(p)
			}
		}
	}
}

// BrokerLive reports whether id is a registered broker at epoch (-1: any).
func (m *Manager) BrokerLive(id int32, epoch int64) bool {
	for _, b := range m.meta.Brokers() {
		if b.NodeID == id {
			return epoch < 0 || b.Epoch == epoch
		}
	}
	return false
}

// truncatesOnFetch reports whether broker id's registration says it
// answers a fetch's last_fetched_epoch with a diverging epoch
// (controller.BrokerInfo.TruncatesOnFetch). An unknown broker, or one of a
// Strait version before it, does not: a follower of it truncates by
// OffsetForLeaderEpoch before fetching, or it would keep a diverged suffix.
func (m *Manager) truncatesOnFetch(id int32) bool {
	for _, b := range m.meta.Brokers() {
		if b.NodeID == id {
			return b.TruncatesOnFetch
		}
	}
	return false
}

func (m *Manager) apply(ch controller.TopicChange) {
	if ch.Deleted {
		m.deleteTopic(ch.Topic)
		return
	}
	start := time.Now()
	if err := m.applyTopic(ch.Topic, ch.Partitions); err != nil {
		m.logger.Error("applying topic metadata", "topic", ch.Topic.Name, "err", err)
	}
	// One line per change of many partitions (a topic created, a broker's
	// failover): the phase boundaries of a failover's timeline.
	n := len(ch.Partitions)
	if ch.Partitions == nil {
		n = len(ch.Topic.Partitions)
	}
	level := slog.LevelDebug
	if n >= applyLogMinPartitions {
		level = slog.LevelInfo
	}
	m.logger.Log(context.Background(), level, "applied topic metadata", "topic", ch.Topic.Name,
		"partitions", n, "took", time.Since(start))
}

// applyLogMinPartitions is the size of a metadata change from which its
// application is logged at info level.
const applyLogMinPartitions = 10

// transition moves a partition to the role its new state gives this broker:
// leader (a new leadership when the epoch changed, else an ISR or replica
// change), or follower of the current leader (fetching, after truncation),
// as Kafka's makeLeader/makeFollower.
func (m *Manager) transition(p *Partition, pi *controller.PartitionInfo) {
	defer p.noteChanged() // its ISR deadlines, if it leads
	p.repl.mu.Lock()
	role, epoch := p.repl.role, p.repl.epoch
	p.repl.mu.Unlock()
	if pi.Leader == m.cfg.NodeID {
		if role == roleLeader && epoch == pi.LeaderEpoch {
			p.leaderStateChanged(pi)
			return
		}
		m.fetchers.unfollow(p)
		p.becomeLeader(pi)
		return
	}
	if role == roleFollower && epoch == pi.LeaderEpoch {
		return
	}
	if role == roleLeader {
		p.resignLeadership(roleFollower, pi.LeaderEpoch)
	} else {
		p.repl.mu.Lock()
		p.repl.role, p.repl.epoch = roleFollower, pi.LeaderEpoch
		p.repl.mu.Unlock()
	}
	if pi.Leader < 0 {
		m.fetchers.unfollow(p)
		m.logger.Info("partition has no leader", "topic", p.topic, "partition", p.index, "leader_epoch", pi.LeaderEpoch)
		return
	}
	m.fetchers.follow(p, pi.Leader, pi.LeaderEpoch)
	m.logger.Info("became follower", "topic", p.topic, "partition", p.index, "leader", pi.Leader,
		"leader_epoch", pi.LeaderEpoch, "log_end_offset", p.log.LogEndOffset())
}

// stopReplica ends this broker's part in a partition and deletes its log.
func (m *Manager) stopReplica(p *Partition, why string) {
	m.cancelMovesOfLocked(p)
	m.fetchers.unfollow(p)
	p.resignLeadership(roleNone, -1)
	p.wakeFetchWaiters()
	if err := p.log.Delete(); err != nil {
		m.logger.Error("deleting partition log", "topic", p.topic, "partition", p.index, "err", err)
	} else {
		m.logger.Info(why, "topic", p.topic, "partition", p.index)
	}
}

func (m *Manager) deleteTopic(t controller.TopicInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if lt := m.TopicByName(t.Name); lt != nil && lt.id == t.ID && !m.closed {
		m.deleteLocked(lt)
	}
}

func (m *Manager) deleteLocked(lt *Topic) {
	m.publishLocked(nil, lt)
	// One write of each directory's checkpoints for the topic's partitions.
	for dir, c := range m.checkpoints {
		release := c.HoldForgets()
		defer func() {
			if err := release(); err != nil {
				m.logger.Warn("checkpointing the log directory after deleting a topic", "dir", dir, "topic", lt.name, "err", err)
			}
		}()
	}
	for _, p := range lt.parts {
		if p != nil {
			m.stopReplica(p, "deleted partition log")
		}
	}
}

// publishLocked swaps in new copies of the lookup maps with add put in and
// remove taken out.
func (m *Manager) publishLocked(add, remove *Topic) {
	byName := make(map[string]*Topic, len(*m.byName.Load())+1)
	for k, v := range *m.byName.Load() {
		byName[k] = v
	}
	byID := make(map[[16]byte]*Topic, len(*m.byID.Load())+1)
	for k, v := range *m.byID.Load() {
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
	m.byName.Store(&byName)
	m.byID.Store(&byID)
}

// ReconfigureLogs gives every hosted partition's log its configuration
// resolved again over the current defaults (a dynamic broker config
// changed), under mu so that it never undoes a newer metadata change. A
// topic whose overrides do not resolve keeps its configuration.
func (m *Manager) ReconfigureLogs() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for _, lt := range *m.byName.Load() {
		t, ok := m.meta.Topic(lt.name)
		if !ok || t.ID != lt.id {
			continue
		}
		cfg, minISR, err := m.topicConfig(t.Configs)
		if err != nil {
			continue // applyTopic has logged it and uses the defaults
		}
		for _, p := range lt.parts {
			if p != nil {
				p.log.SetConfig(cfg)
				p.repl.mu.Lock()
				p.repl.minISR = minISR
				p.repl.mu.Unlock()
			}
		}
	}
}

// openPartition opens (recovering if needed) or creates the log directory
// <log.dir>/<topic>-<partition>, checking its partition.metadata topic id so
// that a log left from a deleted topic of the same name is never served.
//
// A directory it creates is fsynced with its partition.metadata, but its
// entry in the log dir is not: the caller fsyncs each log dir once for all
// the partitions it created there (created reports it), before anything is
// written to them. fsys is the log's filesystem: Config.FS, or a
// storage.DeferSyncFS over it when the caller makes a whole change durable
// at once.
func (m *Manager) openPartition(t controller.TopicInfo, idx int32, cfg storage.LogConfig, dirs *dirPicker, fsys storage.FS) (p *Partition, created bool, err error) {
	name := fmt.Sprintf("%s-%d", t.Name, idx)
	dir := ""
	for _, d := range dirs.dirs {
		cand := filepath.Join(d, name)
		if _, err := fsys.Stat(cand); err != nil {
			continue
		}
		if dir != "" {
			// A move between log dirs cut short between its two renames
			// (logdirmove.go): both copies hold the same closed log; the
			// first dir's is used, the other goes.
			m.logger.Warn("partition found in two log dirs; using the first", "used", dir, "removed", cand)
			stale := cand + ".duplicate-delete"
			if err := fsys.Rename(cand, stale); err != nil {
				return nil, false, fmt.Errorf("moving a duplicate log %s aside: %w", cand, err)
			}
			m.removeLater(stale)
			continue
		}
		dir = cand
	}
	if dir != "" {
		id, err := m.partitionTopicID(dir, t.ID, fsys)
		if errors.Is(err, fs.ErrNotExist) {
			// Created before the file was made durable (or by an older
			// version): the directory is this topic's, as Kafka assumes.
			if err := storage.WritePartitionMetadata(fsys, dir, t.ID); err != nil {
				return nil, false, err
			}
		}
		if err == nil && id != t.ID {
			stale := fmt.Sprintf("%s.%s-delete", dir, storage.EncodeTopicID(id))
			m.logger.Warn("log directory belongs to an older topic of the same name; moving it aside",
				"dir", dir, "moved_to", stale)
			if err := fsys.Rename(dir, stale); err != nil {
				return nil, false, fmt.Errorf("moving stale log %s: %w", dir, err)
			}
			// Its offsets must not pass to the new topic's log.
			if c := m.dirCheckpoints(dir); c != nil {
				if err := c.Forget(storage.TopicPartition{Topic: t.Name, Partition: idx}, nil); err != nil {
					return nil, false, fmt.Errorf("forgetting stale log %s: %w", dir, err)
				}
			}
			remove := func() {
				if err := fsys.RemoveAll(stale); err != nil {
					m.logger.Warn("removing a stale log directory", "dir", stale, "err", err)
				}
			}
			if !m.tasks.Go(remove) {
				remove()
			}
			dir = ""
		}
	}
	if dir != "" {
		dirs.add(filepath.Dir(dir))
	} else {
		dir = filepath.Join(dirs.pick(), name)
		created = true
		if err := fsys.MkdirAll(dir, 0o755); err != nil {
			return nil, false, fmt.Errorf("creating log dir %s: %w", dir, err)
		}
		if err := storage.WritePartitionMetadata(fsys, dir, t.ID); err != nil {
			return nil, false, err
		}
	}
	start := time.Now()
	l, err := storage.Open(dir, cfg, storage.Options{FS: fsys, Logger: m.logger.With("partition", name), Now: m.now, Checkpoints: m.dirCheckpoints(dir), FileCache: m.files,
		CleanShutdown: m.shutdownMarks.openedClean(dir)})
	m.shutdownMarks.noteOpen(dir, err)
	if err != nil {
		return nil, false, fmt.Errorf("opening log %s: %w", dir, err)
	}
	m.logger.Debug("opened partition log", "dir", dir, "log_end_offset", l.LogEndOffset(),
		"high_watermark", l.HighWatermark(), "took", time.Since(start))
	return m.newPartition(t.Name, t.ID, idx, l), created, nil
}

// stopping reports whether Stop has been called.
func (m *Manager) stopping() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

// Stop ends the background work: the cleaner, the maintenance and
// checkpoint loops (a checkpoint pass under way is cut short: closing a log
// checkpoints it) and ISR changes in flight, and waits for them. The
// partitions keep serving and following until Close. Idempotent.
func (m *Manager) Stop() {
	m.stopOnce.Do(func() {
		// Taken while the registration stands, for the markers Close writes.
		if m.meta != nil {
			m.shutdownMarks.mu.Lock()
			m.shutdownMarks.brokerEpoch = m.meta.BrokerEpoch()
			m.shutdownMarks.mu.Unlock()
		}
		if m.cleaner != nil {
			m.cleaner.Close()
		}
		close(m.stop)
		m.cancel()
	})
	m.loops.Wait()
}

// Close stops everything Stop does, then the fetchers, waits for every
// goroutine the Manager started, closes every log (flushed, checkpointed),
// writes each log directory's checkpoints and then its clean-shutdown
// marker (cleanshutdown.go). The Manager hosts nothing afterwards and
// ignores later metadata.
func (m *Manager) Close() error {
	m.Stop()
	m.fetchers.close()
	m.tasks.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	// Closing a log fsyncs its active segment and writes its checkpoints:
	// one after another, 10,000 partitions took a minute. As Kafka, close
	// num.recovery.threads.per.data.dir logs at a time per log directory.
	workers := m.cfg.RecoveryThreadsPerDataDir * max(1, len(m.cfg.LogDirs))
	var (
		errs   []error
		failed = map[string]bool{} // log dirs with a log that failed to close
		errsMu sync.Mutex
		wg     sync.WaitGroup
	)
	// Where the filesystem offers syncfs(2) and there are many logs, they are closed without
	// fsyncs and one syncfs per log directory makes them all durable
	// before the directories' checkpoints and markers are written: a close
	// of 10,000 partitions was about 70,000 fsyncs.
	logs := 0
	m.ForEach(func(*Partition) { logs++ })
	unsynced := logs >= m.syncFSMinLogs() && storage.CanSyncFS(m.filesystem())
	todo := make(chan *Partition)
	for range workers {
		wg.Go(func() {
			for p := range todo {
				var err error
				if unsynced {
					err = p.log.CloseUnsynced()
				} else {
					err = p.log.CloseUnmarked()
				}
				if err != nil {
					errsMu.Lock()
					errs = append(errs, fmt.Errorf("closing %s-%d: %w", p.topic, p.index, err))
					failed[filepath.Clean(LogDirOf(p))] = true
					errsMu.Unlock()
				}
			}
		})
	}
	start, n := time.Now(), 0
	m.ForEach(func(p *Partition) { todo <- p; n++ })
	close(todo)
	wg.Wait()
	marked := 0
	for _, d := range m.cfg.LogDirs {
		d = filepath.Clean(d)
		if !m.dirsVerified || m.DirOffline(d) {
			continue
		}
		ok, err := m.finishDirClose(d, unsynced, failed[d])
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			marked++
		}
	}
	m.logger.Info("partition logs closed", "partitions", n, "workers", workers, "syncfs", unsynced,
		"log_dirs_marked_clean", marked, "took", time.Since(start))
	m.byName.Store(&map[string]*Topic{})
	m.byID.Store(&map[[16]byte]*Topic{})
	return errors.Join(errs...)
}

// finishDirClose finishes the close of the log directory d once its logs
// are closed: with unsynced one syncfs makes their writes durable, then
// the directory's checkpoints are written, then its clean-shutdown marker
// unless a log there failed to close (logFailed) or the directory holds
// logs not known to be clean. A step failing stops it there: the next
// start recovers d's logs from the recovery points the last checkpoints
// hold, as after a crash. It reports whether the marker was written.
func (m *Manager) finishDirClose(d string, unsynced, logFailed bool) (bool, error) {
	fsys := m.filesystem()
	if unsynced {
		if _, err := storage.SyncFS(fsys, d); err != nil {
			return false, fmt.Errorf("making the closed logs of %s durable: %w", d, err)
		}
	}
	if c := m.checkpoints[d]; c != nil {
		if err := c.WriteAll(); err != nil {
			return false, fmt.Errorf("checkpointing log directory %s: %w", d, err)
		}
	}
	if logFailed {
		m.logger.Warn("a log failed to close; the log directory is not marked clean", "dir", d)
		return false, nil
	}
	if err := m.shutdownMarks.markable(fsys, d); err != nil {
		m.logger.Warn("the log directory is not marked clean; the next start recovers its logs", "dir", d, "why", err)
		return false, nil
	}
	m.shutdownMarks.mu.Lock()
	epoch := m.shutdownMarks.brokerEpoch
	m.shutdownMarks.mu.Unlock()
	if err := storage.WriteCleanShutdown(fsys, d, epoch); err != nil {
		return false, fmt.Errorf("log dir %s: %w", d, err)
	}
	return true, nil
}

// filesystem is the FS the logs are on (Config.FS, OSFS when nil).
func (m *Manager) filesystem() storage.FS {
	if m.cfg.FS == nil {
		return storage.OSFS{}
	}
	return m.cfg.FS
}

// syncFSMinLogs is Config.SyncFSMinLogs, 100 when unset.
func (m *Manager) syncFSMinLogs() int {
	if m.cfg.SyncFSMinLogs <= 0 {
		return 100
	}
	return m.cfg.SyncFSMinLogs
}
