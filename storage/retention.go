package storage

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
)

// DeleteOldSegments applies retention as Kafka's UnifiedLog.deleteOldSegments,
// oldest segment first and stopping at the first one that must stay:
// segments wholly below the log start offset (after DeleteRecords), then,
// when cleanup.policy contains delete (LogConfig.Delete, also with
// compact,delete), segments whose largest timestamp is older than
// retention.ms and the oldest segments while the log exceeds
// retention.bytes. A segment goes only when everything in it is below the
// high watermark. The active segment is no exception: when it qualifies
// too (all its records expired, say) it is rolled first and then deleted,
// as Kafka does, so an idle partition's expired data does not wait for
// segment.ms; an empty active segment always stays. It returns the number
// of segments deleted. The broker calls it periodically
// (log.retention.check.interval.ms).
//
// A segment without any timestamp never expires by time here (Kafka falls
// back to the file's modification time).
func (l *Log) DeleteOldSegments(now time.Time) (int, error) {
	cfg := l.config()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, errLogClosed
	}
	hw := l.highWatermark.Load()
	lso := l.logStartOffset.Load()
	leo := l.logEndOffset.Load()
	var total int64
	for _, s := range l.segments {
		total += s.size
	}
	n := 0
	for n < len(l.segments) {
		s := l.segments[n]
		upper := leo // the offset after the segment's last record
		if n+1 < len(l.segments) {
			upper = l.segments[n+1].baseOffset
		} else if s.size == 0 {
			break // the empty active segment stays
		}
		if upper > hw {
			break
		}
		switch {
		case upper <= lso:
		case cfg.Delete && cfg.RetentionMs >= 0 && s.maxTimestamp > recordbatch.NoTimestamp &&
			now.UnixMilli()-s.maxTimestamp > cfg.RetentionMs:
		case cfg.Delete && cfg.RetentionBytes >= 0 && total-s.size >= cfg.RetentionBytes:
		default:
			goto done
		}
		total -= s.size
		n++
	}
done:
	if n == 0 {
		return 0, nil
	}
	if n == len(l.segments) {
		// Every segment goes: a log always keeps one, so roll a new active
		// segment at the log end offset first.
		if _, err := l.rollLocked(now); err != nil {
			return 0, err
		}
	}
	deleted := l.segments[:n]
	l.segments = append([]*segment(nil), l.segments[n:]...)
	l.logger.Info("deleting segments by retention", "dir", l.dir, "segments", n,
		"first_base_offset", deleted[0].baseOffset, "new_first_base_offset", l.segments[0].baseOffset)
	l.deleteSegmentsLocked(deleted)
	if base := l.segments[0].baseOffset; base > lso {
		return n, l.setLogStartOffsetLocked(base, false)
	}
	return n, nil
}

// DeleteRecordsBefore moves the log start offset to offset (DeleteRecords);
// the segments wholly below it go at the next DeleteOldSegments. offset
// must not exceed the high watermark (Kafka's OFFSET_OUT_OF_RANGE); the
// request's -1 ("up to the high watermark") is the caller's to translate.
// It returns the new log start offset (the response's low watermark).
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, errLogClosed
	}
	hw, lso := l.highWatermark.Load(), l.logStartOffset.Load()
	if offset < 0 || offset > hw {
		return lso, fmt.Errorf("%w: cannot delete records before offset %d, above the high watermark %d",
			kerr.OffsetOutOfRange, offset, hw)
	}
	if offset <= lso {
		return lso, nil
	}
	if err := l.setLogStartOffsetLocked(offset, true); err != nil {
		return l.logStartOffset.Load(), err
	}
	return offset, nil
}

// setLogStartOffsetLocked moves the log start offset and checkpoints it;
// the leader epoch cache then starts there (Kafka's truncateFromStart).
// With per-directory checkpoints, the directory's file is written at once
// only if force (DeleteRecords: the records below must not come back after
// a crash); retention and a follower's move are left to its periodic
// write, as in Kafka.
func (l *Log) setLogStartOffsetLocked(offset int64, force bool) error {
	l.logStartOffset.Store(offset)
	if hw := l.highWatermark.Load(); hw < offset {
		l.highWatermark.Store(offset)
	}
	l.changed()
	if err := l.checkpointLogStartLocked(offset, force); err != nil {
		return storageErr("checkpoint log start offset", err)
	}
	// In memory: entries below the log start are dropped again by Open.
	l.epochs.truncateFromStart(offset)
	return nil
}

// checkpointLogStartLocked records that the log starts at offset, now
// l.logStartOffset: in the per-partition file, or in the per-directory one
// (written at once if force, or if its value was higher).
func (l *Log) checkpointLogStartLocked(offset int64, force bool) error {
	if l.cp == nil {
		return writeCheckpoint(l.fs, l.dir, logStartOffsetFile, offset)
	}
	l.cp.setFrozen(l.tp, logStartKind, offset)
	if force {
		return l.cp.writeNow(logStartKind)
	}
	return l.cp.lowered(l.tp, logStartKind, offset)
}
