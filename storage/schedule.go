package storage

import (
	"math"
	"time"

	"github.com/strait/strait/recordbatch"
)

// What the broker's maintenance needs to schedule a log's time-based work
// (flush.ms, retention, producer-id expiry, releasing an idle active
// segment's descriptor) by deadline instead of visiting every log each
// pass: a hook called when something those deadlines depend on changed,
// and for each task the earliest time at which it would do anything were
// nothing to change meanwhile.

// SetChangeHook makes the log call fn (without blocking, possibly under
// the log's lock, so fn must not call the log) when an append, a
// truncation, a high watermark or log start offset move, a cleaning, a
// configuration change, a transaction verification or closing changed
// what the Next* deadlines would return. fn may run often: it should be
// cheap, and idempotent until the caller looked at the log again.
func (l *Log) SetChangeHook(fn func()) {
	if fn == nil {
		l.onChange.Store(nil)
		return
	}
	l.onChange.Store(&fn)
}

func (l *Log) changed() {
	if l.cp != nil {
		l.cp.touch()
	}
	if fn := l.onChange.Load(); fn != nil {
		(*fn)()
	}
}

// Closed reports whether the log was closed or deleted.
func (l *Log) Closed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed.Load()
}

// NextFlush is when MaybeFlush would flush (flush.ms after the last
// flush, with messages unflushed); false when it would not at any time.
func (l *Log) NextFlush() (time.Time, bool) {
	cfg := l.config()
	if cfg.FlushMs == math.MaxInt64 {
		return time.Time{}, false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() || l.unflushedMessages == 0 {
		return time.Time{}, false
	}
	return l.lastFlush.Add(time.Duration(cfg.FlushMs) * time.Millisecond), true
}

// NextRetention is the wall-clock time, in Unix milliseconds, from which
// DeleteOldSegments would delete a segment (math.MinInt64: now); false
// when it would not at any time. It follows DeleteOldSegments' rules for
// the first segment: whatever is deleted starts there.
func (l *Log) NextRetention() (int64, bool) {
	cfg := l.config()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() || len(l.segments) == 0 {
		return 0, false
	}
	s := l.segments[0]
	upper := l.logEndOffset.Load()
	if len(l.segments) > 1 {
		upper = l.segments[1].baseOffset
	} else if s.size == 0 {
		return 0, false
	}
	if upper > l.highWatermark.Load() {
		return 0, false // until the high watermark moves
	}
	if upper <= l.logStartOffset.Load() {
		return math.MinInt64, true
	}
	if !cfg.Delete {
		return 0, false
	}
	if cfg.RetentionBytes >= 0 {
		var total int64
		for _, seg := range l.segments {
			total += seg.size
		}
		if total-s.size >= cfg.RetentionBytes {
			return math.MinInt64, true
		}
	}
	if cfg.RetentionMs >= 0 && s.maxTimestamp > recordbatch.NoTimestamp {
		// Deleted once now - maxTimestamp > retention.ms.
		return satAdd(s.maxTimestamp, cfg.RetentionMs+1), true
	}
	return 0, false
}

// NextProducerExpiry is the wall-clock time, in Unix milliseconds, from
// which ExpireProducers would remove a producer or a verification; false
// when there is none to remove (a producer in a transaction waits for its
// marker, an append).
func (l *Log) NextProducerExpiry() (int64, bool) {
	expiration := l.config().producerIDExpirationMs()
	l.mu.RLock()
	defer l.mu.RUnlock()
	m := l.producers
	if l.closed.Load() || m == nil {
		return 0, false
	}
	next, ok := int64(math.MaxInt64), false
	for _, g := range m.verifying {
		next, ok = min(next, satAdd(g.startedMs, expiration)), true
	}
	for _, e := range m.producers {
		if e.currentTxnFirstOffset < 0 {
			next, ok = min(next, satAdd(e.lastTimestamp, expiration)), true
		}
	}
	return next, ok
}

// cpTouch tells the directory's checkpoints that a value moved (one the
// change hook does not cover: the recovery point).
func (l *Log) cpTouch() {
	if l.cp != nil {
		l.cp.touch()
	}
}
