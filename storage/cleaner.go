package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// CleanerConfig holds the broker-wide log.cleaner.* settings.
type CleanerConfig struct {
	Threads                int     // log.cleaner.threads (1)
	DedupeBufferSize       int64   // log.cleaner.dedupe.buffer.size (134217728), split between threads
	DedupeBufferLoadFactor float64 // log.cleaner.io.buffer.load.factor (0.9): how full an offset map may get
	IOBufferSize           int     // log.cleaner.io.buffer.size (524288), split between threads, half read, half write
	BackoffMs              int64   // log.cleaner.backoff.ms (15000): sleep when no log needs cleaning
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second (Kafka's
	// default, math.MaxFloat64, or 0: no limit): the cleaner workers'
	// reads and writes together are held to this average (throttle.go).
	IOMaxBytesPerSecond float64
}

// DefaultCleanerConfig returns Kafka's defaults.
func DefaultCleanerConfig() CleanerConfig {
	return CleanerConfig{
		Threads:                1,
		DedupeBufferSize:       128 << 20,
		DedupeBufferLoadFactor: 0.9,
		IOBufferSize:           512 << 10,
		BackoffMs:              15000,
	}
}

// Cleaner is Kafka's LogCleaner: background workers that compact the logs
// whose cleanup.policy contains compact. Each worker repeatedly picks the
// filthiest compacted log (the largest ratio of dirty bytes to total
// bytes, above the log's min.cleanable.dirty.ratio, or any log with dirty
// data older than max.compaction.lag.ms), cleans it (see clean.go) and
// moves its cleaner-offset-checkpoint; when no log qualifies it sleeps
// log.cleaner.backoff.ms. A log whose cleaning fails (a batch that does not
// decode, or decompresses past strait.max.decompressed.batch.bytes, an I/O
// error) is skipped from then on, its data untouched: Kafka marks its
// partition uncleanable, and the failure is logged once. No batch can cost
// a worker more than a bounded amount of memory (see cleanrecords.go), so
// a hostile batch cannot stop compaction of the other logs, as an
// OutOfMemoryError stops Kafka's cleaner thread.
//
// The broker creates one Cleaner with a function listing its current logs,
// calls Start after loading them and Close before closing them (Log.Close
// also aborts a cleaning of that log). Retention (DeleteOldSegments) stays
// with the broker's periodic loop, compacted or not.
//
// Thread-safety: every method is safe for concurrent use.
type Cleaner struct {
	cfg    CleanerConfig
	logs   func() []*Log
	logger *slog.Logger
	now    func() time.Time

	pickMu  sync.Mutex     // one worker picks a log at a time
	syncMu  sync.Mutex     // guards syncW
	syncW   *cleanerWorker // runOnce's worker
	stop    chan struct{}
	stopped sync.Once
	// throttle is log.cleaner.io.max.bytes.per.second's, shared by the
	// workers.
	throttle *throttler
	wg       sync.WaitGroup
}

// CleanResult describes one cleaning of one log.
type CleanResult struct {
	Dir              string
	FirstDirtyOffset int64 // where the cleaning began
	EndOffset        int64 // the new first dirty offset
	DirtyRatio       float64
	BytesRead        int64
	BytesWritten     int64
	RecordsRead      int64
	RecordsWritten   int64
	SegmentsReplaced int
}

// NewCleaner returns a cleaner over the logs logs returns (called at each
// pick, so logs come and go); opts gives the logger and clock (FS unused).
func NewCleaner(cfg CleanerConfig, logs func() []*Log, opts Options) (*Cleaner, error) {
	if cfg.Threads < 1 {
		return nil, fmt.Errorf("log.cleaner.threads must be at least 1, got %d", cfg.Threads)
	}
	slots := cfg.DedupeBufferSize / int64(cfg.Threads) / offsetMapEntrySize
	if float64(slots)*cfg.DedupeBufferLoadFactor <= 1 {
		return nil, errors.New("log.cleaner.dedupe.buffer.size is too small for the offset map to hold even one key per cleaner thread")
	}
	c := &Cleaner{cfg: cfg, logs: logs, logger: opts.Logger, now: opts.Now, stop: make(chan struct{})}
	c.throttle = newThrottler(cfg.IOMaxBytesPerSecond, nil)
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Start starts the cleaner threads.
func (c *Cleaner) Start() {
	for i := 0; i < c.cfg.Threads; i++ {
		w := newCleanerWorker(&c.cfg, c.isStopping)
		w.throttle, w.stop = c.throttle, c.stop
		c.wg.Add(1)
		go c.run(i, w)
	}
}

// Close stops the threads, aborting cleanings in progress at the next
// batch (the logs stay as they were: a .cleaned segment not swapped in is
// removed), and waits for them.
func (c *Cleaner) Close() {
	c.stopped.Do(func() { close(c.stop) })
	c.wg.Wait()
}

func (c *Cleaner) isStopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

func (c *Cleaner) run(id int, w *cleanerWorker) {
	defer c.wg.Done()
	backoff := time.Duration(c.cfg.BackoffMs) * time.Millisecond
	for !c.isStopping() {
		// A failure is logged and the log marked by cleanFilthiest; the
		// thread goes on with the other logs at once.
		_, cleaned, _ := c.cleanFilthiest(w, c.now())
		if cleaned {
			continue
		}
		t := time.NewTimer(backoff)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runOnce picks the filthiest log that needs cleaning at now and cleans it
// in the calling goroutine; cleaned is false if no log needed it. It is what
// each cleaner thread does in a loop; tests call it directly (with or
// without Start).
func (c *Cleaner) runOnce(now time.Time) (res CleanResult, cleaned bool, err error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.syncW == nil {
		c.syncW = newCleanerWorker(&c.cfg, c.isStopping)
		c.syncW.throttle, c.syncW.stop = c.throttle, c.stop
	}
	return c.cleanFilthiest(c.syncW, now)
}

// cleanFilthiest is one iteration of Kafka's CleanerThread.doWork.
func (c *Cleaner) cleanFilthiest(w *cleanerWorker, now time.Time) (CleanResult, bool, error) {
	cand, ok := c.grabFilthiest(now)
	if !ok {
		return CleanResult{}, false, nil
	}
	l := cand.log
	defer l.cleanMu.Unlock()
	res := CleanResult{Dir: l.dir, FirstDirtyOffset: cand.firstDirtyOffset, EndOffset: cand.firstDirtyOffset, DirtyRatio: cand.ratio()}
	end, err := w.clean(&cand, now)
	res.BytesRead, res.BytesWritten = w.stats.bytesRead, w.stats.bytesWritten
	res.RecordsRead, res.RecordsWritten = w.stats.recordsRead, w.stats.recordsWritten
	res.SegmentsReplaced = w.stats.segmentsReplaced
	switch {
	case errors.Is(err, errCleaningAborted):
		l.logger.Info("log cleaning aborted", "dir", l.dir)
		return res, true, nil
	case err != nil:
		// Kafka's CleanerThread.tryCleanFilthiestLog: the partition is
		// marked uncleanable (LogCleanerManager.markPartitionUncleanable)
		// and skipped until the broker restarts or the log is recreated;
		// its data stays as it is (a .cleaned segment not swapped in was
		// removed), and the other logs are cleaned on.
		l.uncleanable.Store(true)
		c.logger.Warn("unexpected error when cleaning log; marking its partition as uncleanable",
			"partition", filepath.Base(l.dir), "dir", l.dir, "err", err)
		return res, true, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	res.EndOffset = end
	l.setCleanerCheckpoint(end)
	return res, true, nil
}

// grabFilthiest is Kafka's LogCleanerManager.grabFilthiestCompactedLog: the
// compacted log with the highest dirty ratio among those that need
// cleaning, returned with its cleanMu held.
func (c *Cleaner) grabFilthiest(now time.Time) (cleanCandidate, bool) {
	c.pickMu.Lock()
	defer c.pickMu.Unlock()
	var best cleanCandidate
	found := false
	for _, l := range c.logs() {
		if l == nil || !l.config().Compact || l.uncleanable.Load() || l.cleanAbort.Load() {
			continue
		}
		if !l.cleanMu.TryLock() {
			continue // another thread is cleaning it
		}
		cand, ok := l.cleanCandidate(now.UnixMilli())
		if ok && cand.forceCheckpoint {
			l.setCleanerCheckpoint(cand.firstDirtyOffset)
		}
		if !ok || !cand.cleanable() || (found && cand.ratio() <= best.ratio()) {
			l.cleanMu.Unlock()
			continue
		}
		if found {
			best.log.cleanMu.Unlock()
		}
		best, found = cand, true
	}
	return best, found
}

// setCleanerCheckpoint records the first dirty offset, in memory and in
// cleaner-offset-checkpoint.
func (l *Log) setCleanerCheckpoint(offset int64) {
	l.cleanerCheckpoint.Store(offset)
	if l.cleanAbort.Load() {
		return // closed: the directory is no longer the cleaner's to write
	}
	if err := writeCheckpoint(l.fs, l.dir, cleanerOffsetFile, offset); err != nil {
		l.logger.Warn("cannot write cleaner offset checkpoint", "dir", l.dir, "err", err)
	}
}
