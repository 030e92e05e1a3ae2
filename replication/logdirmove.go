package replication

// Moving a replica between log dirs (AlterReplicaLogDirs) as Kafka does
// (ReplicaManager.alterReplicaLogDirs, ReplicaAlterLogDirsThread,
// Partition.maybeReplaceCurrentWithFutureReplica):
//
//  1. MoveReplica creates a future log, <dest>/<topic>-<p>.<id>-future,
//     and returns; the current log keeps serving produce and fetch.
//  2. A mover goroutine copies the current log's batches into the future
//     log (AppendAsFollower, replica.fetch.max.bytes at a time, bounded by
//     replica.alter.log.dirs.io.max.bytes.per.second), truncating the
//     future log first should the current one have been truncated under it
//     (a follower's divergence, by leader epoch, as a follower does).
//  3. Once caught up, the swap, under the Manager's lock: the current
//     replica stops serving (requests in flight answer
//     NOT_LEADER_OR_FOLLOWER or KAFKA_STORAGE_ERROR, both retried by
//     clients), its log is closed (no append can land after that), the
//     batches appended since the last copy are copied from it, the future
//     log is closed and renamed <dest>/<topic>-<p>, the old directory
//     renamed <topic>-<p>.<id>-delete (removed in the background), and the
//     log reopened from its new place takes the replica's role back. The
//     swap costs a close and an open of the log, not a copy of it.
//
// A crash leaves either a -future directory beside the current one, which
// the next start resumes (Kafka reloads future logs and restarts their
// movers), or, between the two renames of the swap, two complete copies
// of the same closed log, of which openPartition keeps the first and
// removes the other. A move is abandoned (its future log removed) when the
// partition is deleted, leaves this broker, or either dir fails; a new
// AlterReplicaLogDirs to another dir replaces it, and one to the current
// dir cancels it, as in Kafka.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/strait/strait/storage"
)

// move is a move under way. p is the current replica (the Partition object
// whose log is copied); fut the future log, owned by the mover goroutine.
type move struct {
	key       string
	p         *Partition
	dir       string // destination log dir (cleaned)
	futureDir string
	fut       *storage.Log
	// cancelled: abandon the move and remove the future log. Set under
	// Manager.mu; the mover checks it between copies and at the swap.
	cancelled atomic.Bool
	wake      chan struct{} // closed on cancel
}

func (mv *move) cancel() {
	if !mv.cancelled.Swap(true) {
		close(mv.wake)
	}
}

// Futures lists the moves under way with their future logs' size and lag
// (the current log end offset minus the future's, as Kafka's
// getLogEndOffsetLag for a future replica).
func (m *Manager) Futures() []FutureReplica {
	m.dirs.mu.Lock()
	moves := make([]*move, 0, len(m.dirs.futures))
	for _, mv := range m.dirs.futures {
		moves = append(moves, mv)
	}
	m.dirs.mu.Unlock()
	out := make([]FutureReplica, 0, len(moves))
	for _, mv := range moves {
		out = append(out, FutureReplica{
			Topic: mv.p.topic, Partition: mv.p.index, Dir: mv.dir, FutureDir: mv.futureDir,
			Size: mv.fut.Size(), Lag: max(mv.p.log.LogEndOffset()-mv.fut.LogEndOffset(), 0),
		})
	}
	return out
}

// MoveReplica starts moving the replica of topic's partition idx to the
// log dir dest (one of LogDirs) and returns once its future log exists
// (see above). A replica already in dest is left alone (a move of it under
// way is cancelled); a move to dest already under way goes on.
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
	if m.closed || m.stopping() || p == nil {
		return ErrReplicaNotAvailable
	}
	key := partitionKey(lt.id, idx)
	m.dirs.mu.Lock()
	cur := m.dirs.futures[key]
	m.dirs.mu.Unlock()
	if cur != nil {
		if cur.dir == dest {
			return nil
		}
		m.cancelMoveLocked(cur)
	}
	if filepath.Clean(LogDirOf(p)) == dest {
		return nil
	}
	var uid [16]byte
	_, _ = rand.Read(uid[:])
	future := filepath.Join(dest, fmt.Sprintf("%s.%s-future", filepath.Base(p.log.Dir()), hex.EncodeToString(uid[:])))
	return m.startMoveLocked(p, dest, future)
}

// cancelMoveLocked abandons mv: it leaves the list at once, and its mover
// removes the future log. Under mu.
func (m *Manager) cancelMoveLocked(mv *move) {
	mv.cancel()
	m.dirs.mu.Lock()
	if m.dirs.futures[mv.key] == mv {
		delete(m.dirs.futures, mv.key)
	}
	m.dirs.mu.Unlock()
}

// cancelMovesOfLocked cancels the move of p, if any (p is deleted, moved
// away or offline). Under mu.
func (m *Manager) cancelMovesOfLocked(p *Partition) {
	m.dirs.mu.Lock()
	mv := m.dirs.futures[partitionKey(p.topicID, p.index)]
	m.dirs.mu.Unlock()
	if mv != nil && mv.p == p {
		m.cancelMoveLocked(mv)
	}
}

// startMoveLocked opens (creating or, at restart, recovering) the future
// log at future, in the log dir dest, and starts its mover. Under mu.
func (m *Manager) startMoveLocked(p *Partition, dest, future string) error {
	fsys := m.cfg.FS
	if err := fsys.MkdirAll(future, 0o755); err != nil {
		return fmt.Errorf("creating future log %s: %w", future, err)
	}
	if err := storage.WritePartitionMetadata(fsys, future, p.topicID); err != nil {
		_ = fsys.RemoveAll(future)
		return err
	}
	if err := fsys.SyncDir(dest); err != nil {
		_ = fsys.RemoveAll(future)
		return err
	}
	fut, err := storage.Open(future, p.log.Config(), storage.Options{FS: fsys, Logger: m.logger.With("partition", filepath.Base(future)), Now: m.now})
	if err != nil {
		_ = fsys.RemoveAll(future)
		return fmt.Errorf("opening future log %s: %w", future, err)
	}
	mv := &move{key: partitionKey(p.topicID, p.index), p: p, dir: dest, futureDir: future, fut: fut, wake: make(chan struct{})}
	m.dirs.mu.Lock()
	m.dirs.futures[mv.key] = mv
	m.dirs.mu.Unlock()
	if !m.tasks.Go(func() { m.runMove(mv) }) {
		m.dirs.mu.Lock()
		delete(m.dirs.futures, mv.key)
		m.dirs.mu.Unlock()
		_ = fut.Close()
		return ErrReplicaNotAvailable
	}
	m.logger.Info("moving replica to another log dir", "topic", p.topic, "partition", p.index,
		"from", LogDirOf(p), "to", dest, "future_log", future, "future_log_end_offset", fut.LogEndOffset())
	return nil
}

// runMove is a move's mover goroutine: it copies until caught up, then
// swaps. It ends on the Manager's Stop leaving the future log for the next
// start to resume, and on cancellation or failure removing it.
func (m *Manager) runMove(mv *move) {
	p, fut := mv.p, mv.fut
	var buf []byte
	for {
		if m.stopping() {
			m.endMove(mv, false)
			return
		}
		if mv.cancelled.Load() || p.stopped.Load() {
			m.endMove(mv, true)
			return
		}
		// replica.alter.log.dirs.io.max.bytes.per.second: every future log
		// counts against it (Kafka's ReplicaAlterLogDirsThread).
		if m.alterLogDirsQuota.Exceeded(m.now()) {
			select {
			case <-m.stop:
			case <-mv.wake:
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		n, err := m.copyInto(p.log, fut, &buf)
		if err != nil {
			if p.stopped.Load() || mv.cancelled.Load() || m.stopping() {
				continue // the loop's checks end the move as it should
			}
			m.logger.Error("copying into a future log failed; the move is abandoned",
				"topic", p.topic, "partition", p.index, "future_log", mv.futureDir, "err", err)
			m.endMove(mv, true)
			return
		}
		m.alterLogDirsQuota.Record(n, m.now())
		if fut.LogEndOffset() >= p.log.LogEndOffset() {
			if m.swap(mv, &buf) {
				return
			}
		}
	}
}

// endMove ends a move that is not swapped in: its future log is closed,
// and removed when abandon (kept for the next start otherwise).
func (m *Manager) endMove(mv *move, abandon bool) {
	m.dirs.mu.Lock()
	if m.dirs.futures[mv.key] == mv {
		delete(m.dirs.futures, mv.key)
	}
	m.dirs.mu.Unlock()
	if err := mv.fut.Close(); err != nil {
		m.logger.Debug("closing a future log", "dir", mv.futureDir, "err", err)
	}
	if !abandon {
		return
	}
	if err := m.cfg.FS.RemoveAll(mv.futureDir); err != nil {
		m.logger.Warn("removing an abandoned future log", "dir", mv.futureDir, "err", err)
	} else {
		m.logger.Info("removed an abandoned future log", "topic", mv.p.topic, "partition", mv.p.index, "dir", mv.futureDir)
	}
}

// copyInto appends to dst the batches of src from dst's log end offset,
// replica.fetch.max.bytes of them at most (at least one batch), and returns
// their size. dst is first brought back in line with src: emptied to start
// at src's log start offset when it ends below it, truncated where src
// diverges from it (by leader epoch, as a follower truncates) or past src's
// log end.
func (m *Manager) copyInto(src, dst *storage.Log, buf *[]byte) (int64, error) {
	if err := reconcileFuture(src, dst); err != nil {
		return 0, err
	}
	res, err := src.Read(dst.LogEndOffset(), int64(max(m.cfg.FetchMaxBytes, 1)), src.LogEndOffset(), true)
	if err != nil {
		return 0, err
	}
	defer res.Release() // the segment files stay open until copied
	if res.Size == 0 {
		return 0, nil
	}
	if int64(cap(*buf)) < res.Size {
		*buf = make([]byte, res.Size)
	}
	b := (*buf)[:res.Size]
	off := int64(0)
	for _, sl := range res.Slices {
		if _, err := sl.File.ReadAt(b[off:off+sl.Len], sl.Pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("reading the current log: %w", err)
		}
		off += sl.Len
	}
	if _, err := dst.AppendAsFollower(b); err != nil {
		return 0, err
	}
	return res.Size, nil
}

func reconcileFuture(src, dst *storage.Log) error {
	if dst.LogEndOffset() < src.LogStartOffset() {
		return dst.TruncateFullyAndStartAt(src.LogStartOffset())
	}
	if e, ok := dst.LatestEpoch(); ok {
		se, send := src.EndOffsetForEpoch(e)
		switch {
		case se < 0:
			return dst.TruncateFullyAndStartAt(src.LogStartOffset())
		case se == e:
			if send < dst.LogEndOffset() {
				return dst.TruncateTo(send)
			}
		default: // src's epoch se < e: dst holds epochs src does not
			_, dend := dst.EndOffsetForEpoch(se)
			if to := min(send, dend); to < dst.LogEndOffset() {
				return dst.TruncateTo(to)
			}
		}
	}
	if leo := src.LogEndOffset(); dst.LogEndOffset() > leo {
		return dst.TruncateTo(leo)
	}
	return nil
}

// swap replaces the current replica with the caught-up future one (see
// above). It reports whether the move ended (swapped in, or ended
// otherwise); false: go on copying.
func (m *Manager) swap(mv *move, buf *[]byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, fut := mv.p, mv.fut
	switch {
	case m.closed || m.stopping():
		m.endMove(mv, false)
		return true
	case mv.cancelled.Load() || p.stopped.Load() || m.TopicByID(p.topicID).Partition(p.index) != p ||
		m.dirs.offline[mv.dir] || m.dirs.offline[filepath.Clean(LogDirOf(p))]:
		m.endMove(mv, true)
		return true
	}
	// Not caught up after all (appends since the check): copy on, unless
	// the rest is small enough to copy inside the swap.
	if lag := p.log.LogEndOffset() - fut.LogEndOffset(); lag > 0 {
		res, err := p.log.Read(fut.LogEndOffset(), int64(max(m.cfg.FetchMaxBytes, 1)), p.log.LogEndOffset(), false)
		if err != nil {
			return false
		}
		res.Release() // only its end offset is wanted
		if res.EndOffset < p.log.LogEndOffset() {
			return false
		}
	}

	// Out of service: no append may land in the log once it is closed.
	p.stopped.Store(true)
	m.fetchers.unfollow(p)
	p.resignLeadership(roleNone, -1)
	p.wakeFetchWaiters()
	cfg := p.log.Config()
	oldDir := p.log.Dir()
	if err := p.log.Close(); err != nil {
		m.logger.Error("closing a log to swap in its future log", "topic", p.topic, "partition", p.index, "err", err)
	}
	hw := p.log.HighWatermark() // after the last append the close waited for
	fsys := m.cfg.FS
	opts := func(dir string) storage.Options {
		return storage.Options{FS: fsys, Logger: m.logger.With("partition", filepath.Base(dir)), Now: m.now,
			Checkpoints: m.dirCheckpoints(dir), FileCache: m.files}
	}
	// The closed log's last batches: reopened to be read (a clean open).
	swapErr := func() error {
		old, err := storage.Open(oldDir, cfg, opts(oldDir))
		if err != nil {
			return err
		}
		defer old.Close()
		for fut.LogEndOffset() < old.LogEndOffset() {
			n, err := m.copyInto(old, fut, buf)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("future log ends at %d, the current one at %d", fut.LogEndOffset(), old.LogEndOffset())
			}
		}
		if err := reconcileFuture(old, fut); err != nil {
			return err
		}
		if lso := old.LogStartOffset(); lso > fut.LogStartOffset() {
			fut.UpdateHighWatermark(min(hw, fut.LogEndOffset()))
			if _, err := fut.DeleteRecordsBefore(lso); err != nil {
				return err
			}
		}
		fut.UpdateHighWatermark(min(hw, fut.LogEndOffset()))
		return nil
	}()
	newDir := filepath.Join(mv.dir, filepath.Base(oldDir))
	if err := fut.Close(); err != nil && swapErr == nil {
		swapErr = err
	}
	// The log's offsets move with its files: the destination directory's
	// checkpoints hold them before the future log is renamed into place
	// (its recovery point is its end: the close flushed it).
	srcCP, destCP := m.dirCheckpoints(oldDir), m.dirCheckpoints(newDir)
	tp, keyed := checkpointKey(oldDir)
	if swapErr == nil && destCP != nil && keyed {
		swapErr = destCP.Adopt(tp, fut.LogEndOffset(), fut.LogStartOffset(), min(hw, fut.LogEndOffset()))
	}
	if swapErr == nil {
		swapErr = fsys.Rename(mv.futureDir, newDir)
	}
	if swapErr == nil {
		swapErr = fsys.SyncDir(mv.dir)
	}
	m.dirs.mu.Lock()
	delete(m.dirs.futures, mv.key)
	m.dirs.mu.Unlock()
	openDir := newDir
	if swapErr != nil {
		m.logger.Error("swapping in a future log failed; the replica stays where it was",
			"topic", p.topic, "partition", p.index, "from", oldDir, "to", mv.dir, "err", swapErr)
		for _, d := range []string{mv.futureDir, newDir} {
			if err := fsys.RemoveAll(d); err != nil {
				m.logger.Warn("removing a future log", "dir", d, "err", err)
			}
		}
		if destCP != nil && keyed {
			if err := destCP.Forget(tp, nil); err != nil {
				m.logger.Warn("forgetting a future log's offsets", "dir", mv.dir, "err", err)
			}
		}
		openDir = oldDir
	} else {
		var uid [16]byte
		_, _ = rand.Read(uid[:])
		stale := fmt.Sprintf("%s.%s-delete", oldDir, hex.EncodeToString(uid[:]))
		if err := fsys.Rename(oldDir, stale); err != nil {
			// Two copies must not survive; the old one stays, the new one goes.
			m.logger.Error("swapping in a future log failed: the old log cannot be removed; the replica stays where it was",
				"topic", p.topic, "partition", p.index, "dir", oldDir, "err", err)
			if rerr := fsys.RemoveAll(newDir); rerr != nil {
				m.logger.Error("removing the copy of a replica whose move failed", "dir", newDir, "err", rerr)
			}
			swapErr, openDir = err, oldDir
		} else {
			_ = fsys.SyncDir(filepath.Dir(oldDir))
			if srcCP != nil && keyed {
				if err := srcCP.Forget(tp, nil); err != nil {
					m.logger.Warn("forgetting a moved log's offsets", "dir", filepath.Dir(oldDir), "err", err)
				}
			}
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
	m.reopenLocked(p, openDir, cfg, hw)
	if swapErr == nil {
		m.logger.Info("moved replica to another log dir", "topic", p.topic, "partition", p.index,
			"from", filepath.Dir(oldDir), "to", mv.dir, "log_end_offset", fut.LogEndOffset())
	}
	return true
}

// reopenLocked opens the log of p, whose log was closed, from dir and
// publishes a new Partition for it that takes p's role. Under mu.
func (m *Manager) reopenLocked(p *Partition, dir string, cfg storage.LogConfig, hw int64) {
	lt := m.TopicByID(p.topicID)
	l, err := storage.Open(dir, cfg, storage.Options{FS: m.cfg.FS, Logger: m.logger.With("partition", filepath.Base(dir)), Now: m.now,
		Checkpoints: m.dirCheckpoints(dir), FileCache: m.files})
	m.shutdownMarks.noteOpen(dir, err)
	if err != nil {
		// Neither place opens: the replica is lost here, as in an offline dir.
		m.logger.Error("reopening a moved replica", "dir", dir, "err", err)
		nt := &Topic{name: lt.name, id: lt.id, parts: slices.Clone(lt.parts)}
		nt.parts[p.index] = nil
		m.dirs.mu.Lock()
		m.dirs.offlineParts[partitionKey(p.topicID, p.index)] = true
		m.dirs.mu.Unlock()
		m.publishLocked(nt, lt)
		return
	}
	l.UpdateHighWatermark(min(hw, l.LogEndOffset()))
	np := m.newPartition(p.topic, p.topicID, p.index, l)
	st := p.state.Load()
	if st != nil && len(st.Replicas) <= 1 {
		l.UpdateHighWatermark(l.LogEndOffset())
	}
	m.start(np, p.settings(), st)
	nt := &Topic{name: lt.name, id: lt.id, parts: slices.Clone(lt.parts)}
	nt.parts[p.index] = np
	m.publishLocked(nt, lt)
}

// sweepLeftovers looks at what an interrupted move or deletion left in the
// log dirs before the metadata is followed: <topic>-<p>.<id>-delete (a log
// already renamed away) is removed in the background, as Kafka's
// LogManager does at start; <topic>-<p>.<id>-future (a move not swapped in
// yet) is noted, for resumeMoveLocked to take up when its partition opens.
func (m *Manager) sweepLeftovers() {
	fsys := m.cfg.FS
	for _, d := range m.cfg.LogDirs {
		entries, err := fsys.ReadDir(d)
		if err != nil {
			continue // the log-dir watcher reports a dir that cannot be read
		}
		for _, e := range entries {
			name := e.Name()
			dot := strings.LastIndexByte(name, '.')
			if !e.IsDir() || dot < 0 {
				continue
			}
			path := filepath.Join(d, name)
			switch {
			case strings.HasSuffix(name, "-future"):
				if prev, ok := m.dirs.leftover[name[:dot]]; ok {
					// Two futures for one partition: the second is removed.
					m.removeLater(prev)
				}
				m.dirs.leftover[name[:dot]] = path
			case strings.HasSuffix(name, "-delete"):
				m.removeLater(path)
			}
		}
	}
}

// removeLater removes a leftover directory in the background.
func (m *Manager) removeLater(path string) {
	remove := func() {
		if err := m.cfg.FS.RemoveAll(path); err != nil {
			m.logger.Warn("removing a leftover log directory", "dir", path, "err", err)
		} else {
			m.logger.Info("removed a leftover log directory", "dir", path)
		}
	}
	if !m.tasks.Go(remove) {
		remove()
	}
}

// resumeMoveLocked takes up the move of p whose future log a previous run
// left (sweepLeftovers), as Kafka restarts the movers of the future logs it
// loads; a future log in p's own dir, or in a dir now offline, is removed.
// Under mu.
func (m *Manager) resumeMoveLocked(p *Partition) {
	name := filepath.Base(p.log.Dir())
	future, ok := m.dirs.leftover[name]
	if !ok {
		return
	}
	delete(m.dirs.leftover, name)
	dest := filepath.Dir(future)
	if dest == filepath.Clean(LogDirOf(p)) || m.dirs.offline[dest] {
		m.removeLater(future)
		return
	}
	if id, err := storage.ReadPartitionMetadata(m.cfg.FS, future); err != nil || id != p.topicID {
		m.removeLater(future) // an older topic's of the same name
		return
	}
	if err := m.startMoveLocked(p, dest, future); err != nil {
		m.logger.Warn("resuming the move of a replica to another log dir", "topic", p.topic, "partition", p.index, "err", err)
		m.removeLater(future)
	}
}

// sweepUnclaimedFutures removes the leftover future logs no partition took
// up once the metadata was applied (their partition is gone from here).
func (m *Manager) sweepUnclaimedFutures() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, path := range m.dirs.leftover {
		delete(m.dirs.leftover, name)
		m.removeLater(path)
	}
}
