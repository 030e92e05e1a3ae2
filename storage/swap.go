package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/strait/strait/recordbatch"
)

// Swapping a cleaned segment in, crash-safely, as Kafka's
// LocalLog.replaceSegments, and finishing an interrupted swap at Open, as
// Kafka's LogLoader:
//
//  1. the cleaner writes and fsyncs X.log.cleaned, X.index.cleaned,
//     X.timeindex.cleaned (X: the base offset of the first segment it
//     replaces);
//  2. under the partition lock, the three are renamed *.swap, log file
//     first, and the directory is fsynced;
//  3. the replaced segments' files are renamed *.deleted;
//  4. the *.swap files are renamed to their final names (X.log replacing
//     the old X.log, now X.log.deleted) and the directory is fsynced.
//
// Open, before loading segments: every *.cleaned file is removed, and so is
// any *.swap file whose base offset is not below the smallest *.cleaned one
// (step 2 was cut short, the old segments are intact); a remaining
// X.log.swap covers offsets [X, next offset of its last batch), and the
// segment files in that range are removed (step 3 was cut short), then
// every *.swap file is renamed to its final name (step 4). A crash at any
// point thus leaves either the old segments or the cleaned one.

// errCleaningAborted reports a cleaning given up because the log changed
// under it (closed, deleted, or segments removed by retention); it is not
// a failure of the log.
var errCleaningAborted = errors.New("log cleaning aborted")

// replaceSegments swaps cleaned, a sealed segment whose files are named
// *.cleaned, in for old, contiguous sealed segments of the log starting at
// cleaned's base offset (steps 2-4 above). If the log was closed or old is
// no longer in the log (retention removed some), nothing changes, the
// cleaned files are removed and errCleaningAborted is returned. The old
// segments' files are closed after file.delete.delay.ms, so reads holding
// FileSlices of them keep working.
func (l *Log) replaceSegments(cleaned *segment, old []*segment) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.Index(l.segments, old[0])
	if l.closed.Load() || l.cleaningAborted() || i < 0 || i+len(old) >= len(l.segments) ||
		!slices.Equal(l.segments[i:i+len(old)], old) {
		l.discardCleaned(cleaned)
		return errCleaningAborted
	}

	base := cleaned.baseOffset
	if err := renameSegmentFiles(l.fs, l.dir, base, cleanedFileSuffix, swapFileSuffix); err == nil {
		err = l.fs.SyncDir(l.dir)
	} else {
		// Whatever was renamed *.swap sits beside a *.cleaned file, so
		// Open would remove it too; remove both now.
		_ = removeSegmentFiles(l.fs, l.dir, base, swapFileSuffix)
		l.discardCleaned(cleaned)
		return fmt.Errorf("swap in cleaned segment %d: %w", base, err)
	}

	// From here the cleaned segment is durable under its *.swap names and a
	// restart completes the swap; a failure leaves the files to it, but the
	// log in memory moves on to the cleaned segment, whose content is the
	// same records minus the ones compaction removes.
	var firstErr error
	for _, s := range old {
		if err := s.renameForDeletion(l.fs); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := renameSegmentFiles(l.fs, l.dir, base, swapFileSuffix, ""); err != nil && firstErr == nil {
		firstErr = err
	}
	if err := l.fs.SyncDir(l.dir); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr == nil { // else its name is not sure: it stays open
		cleaned.log.setPath(segmentPath(l.dir, base, logFileSuffix))
		cleaned.log.makeEvictable(l.cache)
	}
	cleaned.offsetIndex.path = segmentPath(l.dir, base, indexFileSuffix)
	cleaned.timeIndex.path = segmentPath(l.dir, base, timeIndexFileSuffix)
	cleaned.swappedTxnIndex()
	l.segments = slices.Concat(l.segments[:i], []*segment{cleaned}, l.segments[i+len(old):])
	l.changed()
	l.removeDeletedSegmentsLater(old)
	// As Kafka's UnifiedLog.replaceSegments: the producer snapshots of the
	// segments gone, not of the one whose base offset lives on.
	l.deleteProducerSnapshotsLocked(old[1:])
	if firstErr != nil {
		l.logger.Error("swap of a cleaned segment failed half way; the next restart completes it",
			"dir", l.dir, "base_offset", base, "err", firstErr)
		return storageErr("swap in cleaned segment", firstErr)
	}
	return nil
}

// discardCleaned closes and removes a cleaned segment that is not swapped in.
func (l *Log) discardCleaned(cleaned *segment) {
	cleaned.closeFiles()
	if err := removeSegmentFiles(l.fs, l.dir, cleaned.baseOffset, cleanedFileSuffix); err != nil {
		l.logger.Warn("cannot remove cleaned segment files", "dir", l.dir, "base_offset", cleaned.baseOffset, "err", err)
	}
}

// segmentFileName splits a file name "<20 digits><.log|.index|.timeindex>
// <extra>" into its base offset and segment suffix.
func segmentFileName(name, extra string) (base int64, suffix string, ok bool) {
	rest, found := strings.CutSuffix(name, extra)
	if !found {
		return 0, "", false
	}
	for _, suffix := range segmentFileSuffixes {
		if !strings.HasSuffix(rest, suffix) {
			continue
		}
		if b, ok := parseBaseOffset(rest, suffix); ok {
			return b, suffix, true
		}
	}
	return 0, "", false
}

// completeInterruptedSwap finishes or undoes a swap cut short by a crash
// (see the top of this file).
func (l *Log) completeInterruptedSwap() error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	minCleaned := int64(math.MaxInt64)
	var cleanedFiles, swapFiles []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if base, _, ok := segmentFileName(name, cleanedFileSuffix); ok {
			minCleaned = min(minCleaned, base)
			cleanedFiles = append(cleanedFiles, name)
		} else if _, _, ok := segmentFileName(name, swapFileSuffix); ok {
			swapFiles = append(swapFiles, name)
		}
	}
	if len(cleanedFiles) == 0 && len(swapFiles) == 0 {
		return nil
	}
	remove := func(name, why string) error {
		l.logger.Info(why, "dir", l.dir, "file", name)
		if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	for _, name := range cleanedFiles {
		if err := remove(name, "removing a cleaned segment file of an interrupted cleaning"); err != nil {
			return err
		}
	}
	minSwap, maxSwap := int64(math.MaxInt64), int64(math.MinInt64)
	var valid []string
	for _, name := range swapFiles {
		base, suffix, _ := segmentFileName(name, swapFileSuffix)
		if base >= minCleaned {
			if err := remove(name, "removing a swap file of an interrupted swap"); err != nil {
				return err
			}
			continue
		}
		valid = append(valid, name)
		if suffix == logFileSuffix {
			next, err := l.nextOffsetOfFile(name, base)
			if err != nil {
				return err
			}
			minSwap, maxSwap = min(minSwap, base), max(maxSwap, next)
		}
	}
	for _, e := range entries {
		base, _, ok := segmentFileName(e.Name(), "")
		if ok && base >= minSwap && base < maxSwap && !e.IsDir() {
			if err := remove(e.Name(), "removing a segment file replaced by a cleaned segment"); err != nil {
				return err
			}
		}
	}
	for _, name := range valid {
		l.logger.Info("completing the swap of a cleaned segment", "dir", l.dir, "file", name)
		if err := l.fs.Rename(filepath.Join(l.dir, name), filepath.Join(l.dir, strings.TrimSuffix(name, swapFileSuffix))); err != nil {
			return err
		}
	}
	return l.fs.SyncDir(l.dir)
}

// nextOffsetOfFile returns the offset after the last whole batch of a
// segment log file (base if it holds none), walking batch headers.
func (l *Log) nextOffsetOfFile(name string, base int64) (int64, error) {
	f, err := l.fs.OpenFile(filepath.Join(l.dir, name), os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	next := base
	var buf [recordbatch.HeaderSize]byte
	for pos := int64(0); pos+recordbatch.HeaderSize <= fi.Size(); {
		if _, err := f.ReadAt(buf[:], pos); err != nil {
			return 0, err
		}
		h := parseBatchHeader(buf[:])
		if h.BatchLength < recordbatch.MinBatchLength || pos+h.Size() > fi.Size() || h.Magic != recordbatch.MagicV2 {
			break
		}
		next = h.NextOffset()
		pos += h.Size()
	}
	return next, nil
}
