package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
)

// Producer state is Kafka's ProducerStateManager (with ProducerStateEntry,
// ProducerAppendInfo and BatchMetadata): for every producer id that wrote to
// the partition, its epoch and the metadata of its last 5 batches. A produce
// batch with a producer id is checked against it under the partition lock
// before offsets are assigned (UnifiedLog.analyzeAndValidateProducerState):
//
//   - a batch equal (same epoch, first and last sequence) to one of the last
//     5 is a duplicate: nothing is appended and the append answers with the
//     original batch's offsets;
//   - an epoch below the producer's is INVALID_PRODUCER_EPOCH;
//   - a new epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
//   - within an epoch the first sequence must follow the last one (after
//     MaxInt32 comes 0), else OUT_OF_ORDER_SEQUENCE_NUMBER;
//   - a producer the partition does not know (never seen, expired, or its
//     data deleted) may start at any sequence and epoch: since KIP-360 the
//     broker no longer answers UNKNOWN_PRODUCER_ID.
//
// The state is snapshotted (producer_snapshot.go) when a segment rolls, at
// the new segment's base offset, and at Close, at the log end offset. Open
// loads the newest snapshot at or below the log end offset and replays the
// batch headers after it (UnifiedLog.rebuildProducerState), also after an
// unclean stop. Snapshots go with their segment when retention deletes it,
// and Open deletes those matching no segment but the newest (Kafka's
// removeStraySnapshots). Producers idle for producer.id.expiration.ms
// (measured on their last batch's max timestamp, as Kafka) are dropped by
// ExpireProducers and when a snapshot is loaded.
//
// Transactions extend this state (txn.go): a transactional batch opens a
// transaction (currentTxnFirstOffset, kept by snapshots), a marker closes
// it; the open transactions give the last stable offset, and aborted ones
// go to the transaction index (txn_index.go).
//
// Thread-safety: none; every method runs under the owning Log's lock.

const (
	// numBatchesToRetain is ProducerStateEntry.NUM_BATCHES_TO_RETAIN, which
	// is also the most in-flight requests an idempotent producer may have.
	numBatchesToRetain = 5
	noProducerEpoch    = -1 // RecordBatch.NO_PRODUCER_EPOCH
	noSequence         = -1 // RecordBatch.NO_SEQUENCE

	// defaultProducerIDExpirationMs is producer.id.expiration.ms's default.
	defaultProducerIDExpirationMs = 86400000
)

// producerIDExpirationMs is LogConfig.ProducerIDExpirationMs with 0 meaning
// the default.
func (c *LogConfig) producerIDExpirationMs() int64 {
	if c.ProducerIDExpirationMs <= 0 {
		return defaultProducerIDExpirationMs
	}
	return c.ProducerIDExpirationMs
}

// batchMetadata is Kafka's BatchMetadata: one batch a producer appended.
type batchMetadata struct {
	lastSeq     int32
	lastOffset  int64
	offsetDelta int32 // lastOffset - first offset, also lastSeq - first sequence
	timestamp   int64 // the batch's max timestamp
}

func (b batchMetadata) firstSeq() int32    { return decrementSequence(b.lastSeq, b.offsetDelta) }
func (b batchMetadata) firstOffset() int64 { return b.lastOffset - int64(b.offsetDelta) }

// incrementSequence and decrementSequence are DefaultRecordBatch's: sequence
// numbers wrap from MaxInt32 to 0.
func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}

// lastSequence is the sequence of a batch's last record.
func (h *batchHeader) lastSequence() int32 {
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// producerStateEntry is Kafka's ProducerStateEntry: what a partition knows
// of one producer id.
type producerStateEntry struct {
	producerID int64
	epoch      int16
	// batches are the last appended batches of this epoch, oldest first, at
	// most numBatchesToRetain.
	batches               []batchMetadata
	coordinatorEpoch      int32 // of the last transaction marker, -1 if none
	lastTimestamp         int64 // max timestamp of the last batch or marker
	currentTxnFirstOffset int64 // first offset of the ongoing transaction, -1 if none
}

func emptyProducerStateEntry(producerID int64) *producerStateEntry {
	return &producerStateEntry{producerID: producerID, epoch: noProducerEpoch, coordinatorEpoch: -1,
		lastTimestamp: recordbatch.NoTimestamp, currentTxnFirstOffset: -1}
}

func (e *producerStateEntry) isEmpty() bool { return len(e.batches) == 0 }

func (e *producerStateEntry) lastSeq() int32 {
	if e.isEmpty() {
		return noSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

func (e *producerStateEntry) lastDataOffset() int64 {
	if e.isEmpty() {
		return -1
	}
	return e.batches[len(e.batches)-1].lastOffset
}

func (e *producerStateEntry) lastOffsetDelta() int32 {
	if e.isEmpty() {
		return 0
	}
	return e.batches[len(e.batches)-1].offsetDelta
}

// maybeUpdateEpoch switches to epoch, forgetting the batches of the old one.
func (e *producerStateEntry) maybeUpdateEpoch(epoch int16) {
	if e.epoch != epoch {
		e.batches = e.batches[:0]
		e.epoch = epoch
	}
}

func (e *producerStateEntry) addBatchMetadata(b batchMetadata) {
	if len(e.batches) == numBatchesToRetain {
		e.batches = append(e.batches[:0], e.batches[1:]...)
	}
	e.batches = append(e.batches, b)
}

func (e *producerStateEntry) addBatch(epoch int16, lastSeq int32, lastOffset int64, offsetDelta int32, timestamp int64) {
	e.maybeUpdateEpoch(epoch)
	e.addBatchMetadata(batchMetadata{lastSeq: lastSeq, lastOffset: lastOffset, offsetDelta: offsetDelta, timestamp: timestamp})
	e.lastTimestamp = timestamp
}

// update merges the state an append produced (ProducerStateEntry.update).
func (e *producerStateEntry) update(next *producerStateEntry) {
	e.maybeUpdateEpoch(next.epoch)
	for _, b := range next.batches {
		e.addBatchMetadata(b)
	}
	e.coordinatorEpoch = next.coordinatorEpoch
	e.currentTxnFirstOffset = next.currentTxnFirstOffset
	e.lastTimestamp = next.lastTimestamp
}

// findDuplicate returns the retained batch with the same epoch and sequence
// range as h, if any.
func (e *producerStateEntry) findDuplicate(h *batchHeader) (batchMetadata, bool) {
	if h.ProducerEpoch != e.epoch {
		return batchMetadata{}, false
	}
	first, last := h.BaseSequence, h.lastSequence()
	for _, b := range e.batches {
		if b.firstSeq() == first && b.lastSeq == last {
			return b, true
		}
	}
	return batchMetadata{}, false
}

// appendOrigin says how much of an append is checked (Kafka's AppendOrigin).
type appendOrigin int8

const (
	// originClient is a produce request: epoch and sequence are checked.
	originClient appendOrigin = iota
	// originReplication is a batch already in the log (recovery, and
	// followers later): nothing is rejected, an old epoch only logged.
	originReplication
)

// producerAppend is Kafka's ProducerAppendInfo: one producer's state after
// the batches of an append, validated against its state before, to be
// merged by producerStateManager.update once the batches are written.
type producerAppend struct {
	topicPartition string
	producerID     int64
	current        *producerStateEntry // the state before; never modified
	updated        *producerStateEntry // current without its batches, plus the new ones
	origin         appendOrigin
	logger         *slog.Logger
	// startedTxn is the first offset of a transaction this append opened
	// (-1: none), for producerStateManager.update's ongoing list.
	startedTxn int64
}

// appendDataBatch validates one data batch and adds it to the updated
// state (ProducerAppendInfo.appendDataBatch).
func (pa *producerAppend) appendDataBatch(epoch int16, firstSeq, lastSeq int32, lastTimestamp, firstOffset, lastOffset int64, transactional bool) error {
	if err := pa.checkProducerEpoch(epoch, firstOffset); err != nil {
		return err
	}
	if pa.origin == originClient {
		if err := pa.checkSequence(epoch, firstSeq, firstOffset); err != nil {
			return err
		}
	}
	pa.updated.addBatch(epoch, lastSeq, lastOffset, int32(lastOffset-firstOffset), lastTimestamp)
	return pa.trackTransaction(firstOffset, transactional)
}

func (pa *producerAppend) checkProducerEpoch(epoch int16, offset int64) error {
	if epoch >= pa.updated.epoch {
		return nil
	}
	msg := fmt.Sprintf("Epoch of producer %d at offset %d in %s is %d, which is smaller than the last seen epoch %d",
		pa.producerID, offset, pa.topicPartition, epoch, pa.updated.epoch)
	if pa.origin == originReplication {
		pa.logger.Warn(msg)
		return nil
	}
	return &AppendError{Err: kerr.InvalidProducerEpoch, Message: msg}
}

// checkMarkerEpoch is checkProducerEpoch for a transaction marker: from
// transaction version 2 (KIP-1228) the marker's epoch must be above the
// producer's, or equal to it once its transaction is closed (a retried
// marker, KAFKA-19999).
func (pa *producerAppend) checkMarkerEpoch(epoch int16, transactionVersion int8, offset int64) error {
	if transactionVersion < 2 {
		return pa.checkProducerEpoch(epoch, offset)
	}
	if epoch > pa.updated.epoch || epoch == pa.updated.epoch && pa.updated.currentTxnFirstOffset < 0 {
		return nil
	}
	msg := fmt.Sprintf("Epoch of producer %d at offset %d in %s is %d, which is not greater than the last seen epoch %d (transaction version %d)",
		pa.producerID, offset, pa.topicPartition, epoch, pa.updated.epoch, transactionVersion)
	if pa.origin == originReplication {
		pa.logger.Warn(msg)
		return nil
	}
	return &AppendError{Err: kerr.InvalidProducerEpoch, Message: msg}
}

func (pa *producerAppend) checkSequence(epoch int16, firstSeq int32, offset int64) error {
	if epoch != pa.updated.epoch {
		if firstSeq != 0 && pa.updated.epoch != noProducerEpoch {
			return appendErrorf(kerr.OutOfOrderSequenceNumber,
				"Invalid sequence number for new epoch of producer %d at offset %d in partition %s: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				pa.producerID, offset, pa.topicPartition, epoch, firstSeq, pa.updated.epoch)
		}
		return nil
	}
	currentLastSeq := int32(noSequence)
	switch {
	case !pa.updated.isEmpty():
		currentLastSeq = pa.updated.lastSeq()
	case epoch == pa.current.epoch:
		currentLastSeq = pa.current.lastSeq()
	}
	// A producer without a known epoch (its data deleted by retention or
	// DeleteRecords, or expired) may continue at any sequence.
	if pa.current.epoch == noProducerEpoch || inSequence(currentLastSeq, firstSeq) {
		return nil
	}
	return appendErrorf(kerr.OutOfOrderSequenceNumber,
		"Out of order sequence number for producer %d at offset %d in partition %s: %d (incoming seq. number), %d (current end sequence number)",
		pa.producerID, offset, pa.topicPartition, firstSeq, currentLastSeq)
}

func inSequence(lastSeq, nextSeq int32) bool {
	return int64(nextSeq) == int64(lastSeq)+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// producerStateManager is Kafka's ProducerStateManager for one partition.
type producerStateManager struct {
	dir            string
	topicPartition string
	fs             FS
	logger         *slog.Logger

	producers map[int64]*producerStateEntry
	// Transactions (txn.go): ongoing are the open ones by first offset;
	// unreplicated the completed ones whose marker is not yet below the
	// high watermark (both hold the last stable offset back); verifying
	// the producers whose first transactional append awaits the
	// coordinator's word.
	ongoing      []txnRange
	unreplicated []txnRange
	verifying    map[int64]*VerificationGuard
	// snapshots are the offsets of the snapshot files in dir, ascending.
	snapshots []int64
	// lastMapOffset is the offset the state is at: it reflects every batch
	// below it (Kafka's mapEndOffset).
	lastMapOffset int64
	// lastSnapOffset is the offset of the newest snapshot taken or loaded.
	lastSnapOffset int64
}

func newProducerStateManager(dir string, fsys FS, logger *slog.Logger) (*producerStateManager, error) {
	snaps, err := listProducerSnapshots(fsys, dir)
	if err != nil {
		return nil, err
	}
	return &producerStateManager{
		dir: dir, topicPartition: filepath.Base(dir), fs: fsys, logger: logger,
		producers: map[int64]*producerStateEntry{}, snapshots: snaps, verifying: map[int64]*VerificationGuard{},
	}, nil
}

// prepareUpdate starts validating an append of producerID's batches.
func (m *producerStateManager) prepareUpdate(producerID int64, origin appendOrigin) *producerAppend {
	current := m.producers[producerID]
	if current == nil {
		current = emptyProducerStateEntry(producerID)
	}
	updated := *current
	updated.batches = nil
	return &producerAppend{topicPartition: m.topicPartition, producerID: producerID,
		current: current, updated: &updated, origin: origin, logger: m.logger, startedTxn: -1}
}

// update merges a validated append into the state.
func (m *producerStateManager) update(pa *producerAppend) {
	if pa.startedTxn >= 0 {
		m.addOngoing(pa.producerID, pa.startedTxn)
	}
	if e := m.producers[pa.producerID]; e != nil {
		e.update(pa.updated)
		return
	}
	m.producers[pa.producerID] = pa.updated
}

func isProducerExpired(e *producerStateEntry, nowMs, expirationMs int64) bool {
	return e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= expirationMs
}

// removeExpired drops producers idle for expirationMs (and verifications
// started as long ago); it returns how many producers.
func (m *producerStateManager) removeExpired(nowMs, expirationMs int64) int {
	for id, g := range m.verifying {
		if nowMs-g.startedMs >= expirationMs {
			delete(m.verifying, id)
		}
	}
	n := 0
	for id, e := range m.producers {
		if isProducerExpired(e, nowMs, expirationMs) {
			delete(m.producers, id)
			n++
		}
	}
	return n
}

// takeSnapshot writes a snapshot at lastMapOffset, fsynced, unless one was
// taken there (or later) already.
func (m *producerStateManager) takeSnapshot() error { return m.takeSnapshotSync(syncAll) }

// takeSnapshotSync is takeSnapshot with the fsyncs of mode (the others are
// the caller's).
func (m *producerStateManager) takeSnapshotSync(mode fileSync) error {
	if m.lastMapOffset <= m.lastSnapOffset {
		return nil
	}
	start := time.Now()
	if err := writeProducerSnapshot(m.fs, m.dir, m.lastMapOffset, encodeProducerSnapshot(m.producers), mode); err != nil {
		return err
	}
	if i, found := slices.BinarySearch(m.snapshots, m.lastMapOffset); !found {
		m.snapshots = slices.Insert(m.snapshots, i, m.lastMapOffset)
	}
	m.lastSnapOffset = m.lastMapOffset
	m.logger.Debug("wrote producer snapshot", "dir", m.dir, "offset", m.lastMapOffset,
		"producers", len(m.producers), "took", time.Since(start))
	return nil
}

// deleteSnapshot removes the snapshot file at offset, if there is one.
func (m *producerStateManager) deleteSnapshot(offset int64) {
	i, found := slices.BinarySearch(m.snapshots, offset)
	if !found {
		return
	}
	m.snapshots = slices.Delete(m.snapshots, i, i+1)
	if err := removeProducerSnapshotFile(m.fs, m.dir, offset); err != nil {
		m.logger.Warn("cannot delete producer snapshot", "dir", m.dir, "offset", offset, "err", err)
	}
}

// removeStraySnapshots deletes the snapshots at no segment's base offset,
// except the newest of them if it is above every segment's base (the one
// Close wrote at the log end offset).
func (m *producerStateManager) removeStraySnapshots(segmentBases []int64) {
	var maxBase int64 = -1
	isBase := make(map[int64]bool, len(segmentBases))
	for _, b := range segmentBases {
		isBase[b] = true
		maxBase = max(maxBase, b)
	}
	latestStray := int64(-1)
	for _, off := range slices.Clone(m.snapshots) {
		if isBase[off] {
			continue
		}
		if latestStray >= 0 {
			m.deleteSnapshot(latestStray)
		}
		latestStray = off
	}
	if latestStray >= 0 && len(segmentBases) > 0 && latestStray < maxBase {
		m.deleteSnapshot(latestStray)
	}
}

// truncateAndReload drops the snapshots outside (logStartOffset,
// logEndOffset] and, unless the state is already at logEndOffset, reloads
// it from the newest remaining snapshot (ProducerStateManager.truncateAndReload).
func (m *producerStateManager) truncateAndReload(logStartOffset, logEndOffset, nowMs, expirationMs int64) error {
	for _, off := range slices.Clone(m.snapshots) {
		if off > logEndOffset || off <= logStartOffset {
			m.deleteSnapshot(off)
		}
	}
	if logEndOffset != m.lastMapOffset {
		clear(m.producers)
		m.ongoing, m.unreplicated = nil, nil
		return m.loadFromSnapshot(logStartOffset, nowMs, expirationMs)
	}
	m.lastMapOffset = max(m.lastMapOffset, logStartOffset)
	m.lastSnapOffset = logStartOffset
	if n := len(m.snapshots); n > 0 {
		m.lastSnapOffset = m.snapshots[n-1]
	}
	return nil
}

// loadFromSnapshot loads the newest readable snapshot, deleting corrupt
// ones on the way; without any, the state starts empty at logStartOffset.
func (m *producerStateManager) loadFromSnapshot(logStartOffset, nowMs, expirationMs int64) error {
	for len(m.snapshots) > 0 {
		off := m.snapshots[len(m.snapshots)-1]
		entries, err := readProducerSnapshot(m.fs, producerSnapshotPath(m.dir, off))
		if errors.Is(err, errCorruptSnapshot) {
			m.logger.Warn("deleting corrupt producer snapshot", "dir", m.dir, "offset", off, "err", err)
			m.deleteSnapshot(off)
			continue
		}
		if err != nil {
			return fmt.Errorf("loading producer snapshot %d: %w", off, err)
		}
		for _, e := range entries {
			if !isProducerExpired(e, nowMs, expirationMs) {
				m.producers[e.producerID] = e
				if e.currentTxnFirstOffset >= 0 {
					m.addOngoing(e.producerID, e.currentTxnFirstOffset)
				}
			}
		}
		m.lastSnapOffset, m.lastMapOffset = off, off
		m.logger.Debug("loaded producer snapshot", "dir", m.dir, "offset", off, "producers", len(m.producers))
		return nil
	}
	m.lastSnapOffset, m.lastMapOffset = logStartOffset, logStartOffset
	return nil
}

// checkProducerLocked validates a produce batch against its producer's
// state; firstOffset is the offset it would get. It returns the state to
// commit with updateProducersLocked once the batch is written (nil for a
// batch without producer id), or the metadata of the earlier batch this one
// duplicates, in which case nothing must be appended. With verify, a
// transactional batch opening a transaction must carry the producer's
// current verification guard (see checkVerificationLocked).
func (l *Log) checkProducerLocked(h *batchHeader, firstOffset int64, origin appendOrigin, verify bool, guard *VerificationGuard) (*producerAppend, *batchMetadata, error) {
	if !h.HasProducerID() {
		return nil, nil, nil
	}
	m := l.producers
	if e := m.producers[h.ProducerID]; e != nil && origin == originClient {
		if dup, ok := e.findDuplicate(h); ok {
			l.logger.Debug("duplicate produce batch", "dir", l.dir, "producer_id", h.ProducerID,
				"epoch", h.ProducerEpoch, "first_sequence", h.BaseSequence, "first_offset", dup.firstOffset())
			return nil, &dup, nil
		}
	}
	if err := l.checkVerificationLocked(h, verify, guard); err != nil {
		return nil, nil, err
	}
	pa := m.prepareUpdate(h.ProducerID, origin)
	lastOffset := firstOffset + int64(h.LastOffsetDelta)
	if err := pa.appendDataBatch(h.ProducerEpoch, h.BaseSequence, h.lastSequence(), h.MaxTimestamp, firstOffset, lastOffset, h.IsTransactional()); err != nil {
		return nil, nil, err
	}
	return pa, nil, nil
}

// duplicateAppendInfo is what an append of a duplicate answers: the
// original batch's offsets, and as log append time its max timestamp, as
// Kafka sets it (whatever the topic's timestamp type).
func (l *Log) duplicateAppendInfo(dup *batchMetadata) AppendInfo {
	return AppendInfo{
		FirstOffset:    dup.firstOffset(),
		LastOffset:     dup.lastOffset,
		LogAppendTime:  dup.timestamp,
		LogStartOffset: l.logStartOffset.Load(),
		RecordCount:    int64(dup.offsetDelta) + 1,
	}
}

// updateProducersLocked commits an appended batch's producer state (pa may
// be nil) and moves the state to nextOffset, the new log end offset.
func (l *Log) updateProducersLocked(pa *producerAppend, nextOffset int64) {
	if pa != nil {
		l.producers.update(pa)
		if pa.startedTxn >= 0 {
			// The transaction is open now: later batches need no guard.
			delete(l.producers.verifying, pa.producerID)
			l.updateFirstUnstableLocked()
		}
	}
	l.producers.lastMapOffset = nextOffset
}

// snapshotProducersLocked writes a snapshot at offset, the base offset of a
// segment just rolled or the log end offset at Close, so that recovery
// starts from there instead of replaying the log. A roll's (syncNone)
// leaves the fsyncs to the asynchronous flush (flushRolled), Close's
// (syncContents) the directory's to Close.
func (l *Log) snapshotProducersLocked(offset int64, mode fileSync) error {
	l.producers.lastMapOffset = offset
	return l.producers.takeSnapshotSync(mode)
}

// deleteProducerSnapshotsLocked removes the snapshots of segments being
// deleted (Kafka's deleteProducerSnapshots).
func (l *Log) deleteProducerSnapshotsLocked(segs []*segment) {
	for _, s := range segs {
		l.producers.deleteSnapshot(s.baseOffset)
	}
}

// ExpireProducers forgets producers whose last batch's max timestamp is
// producer.id.expiration.ms or more before now (and that have no
// transaction open), returning how many. The broker calls it every
// producer.id.expiration.check.interval.ms (Kafka: 10 minutes).
func (l *Log) ExpireProducers(now time.Time) int {
	expiration := l.config().producerIDExpirationMs()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0
	}
	n := l.producers.removeExpired(now.UnixMilli(), expiration)
	if n > 0 {
		l.logger.Debug("expired producers", "dir", l.dir, "count", n, "remaining", len(l.producers.producers))
	}
	return n
}

// loadProducerState builds the producer state while the log is opened, once
// the segments are recovered (Kafka's LogLoader: removeStraySnapshots, then
// UnifiedLog.rebuildProducerState up to the log end offset).
func (l *Log) loadProducerState(cleanShutdown bool) error {
	m, err := newProducerStateManager(l.dir, l.fs, l.logger)
	if err != nil {
		return err
	}
	l.producers = m
	bases := make([]int64, len(l.segments))
	for i, s := range l.segments {
		bases[i] = s.baseOffset
	}
	m.removeStraySnapshots(bases)

	leo, lso := l.logEndOffset.Load(), l.logStartOffset.Load()
	// Snapshots at the two last segments' bases and the end, so that a
	// later recovery never needs to replay more than the last segments.
	toSnapshot := []int64{bases[len(bases)-1], leo}
	if len(bases) > 1 {
		toSnapshot = append([]int64{bases[len(bases)-2]}, toSnapshot...)
	}
	if len(m.snapshots) == 0 && cleanShutdown {
		// Kafka's upgrade path: a log closed cleanly before it had any
		// snapshot never had producer state worth a scan; empty snapshots
		// save the scan next time too.
		for _, off := range toSnapshot {
			m.lastMapOffset = off
			if err := m.takeSnapshot(); err != nil {
				return err
			}
		}
		return nil
	}

	start := time.Now()
	nowMs, expiration := l.now().UnixMilli(), l.config().producerIDExpirationMs()
	emptyBefore := len(m.producers) == 0 && m.lastMapOffset >= leo
	if err := m.truncateAndReload(lso, leo, nowMs, expiration); err != nil {
		return err
	}
	loadedAt := m.lastMapOffset
	if leo > m.lastMapOffset && !emptyBefore {
		if err := l.replayProducers(leo, toSnapshot); err != nil {
			return err
		}
	}
	m.lastMapOffset = leo
	if err := m.takeSnapshot(); err != nil {
		return err
	}
	l.logger.Debug("loaded producer state", "dir", l.dir, "snapshot_offset", loadedAt, "replayed_to", leo,
		"producers", len(m.producers), "took", time.Since(start))
	return nil
}

// replayProducers rebuilds the state from the batches between the state's
// offset and end, reading batch headers (and the one record of each
// transaction marker), and snapshots at the offsets in toSnapshot that are
// segment bases on the way. Markers completing an aborted transaction are
// written again to the transaction index of their segment, whose entries
// from the replay's start on were dropped first (see txn.go), so a crash
// between a marker and its index entry leaves no trace.
func (l *Log) replayProducers(end int64, toSnapshot []int64) error {
	m := l.producers
	if err := l.truncateTxnIndexesLocked(m.lastMapOffset); err != nil {
		return err
	}
	var buf [recordbatch.HeaderSize]byte
	for i, seg := range l.segments {
		segEnd := int64(math.MaxInt64)
		if i+1 < len(l.segments) {
			segEnd = l.segments[i+1].baseOffset
		}
		if segEnd <= m.lastMapOffset || seg.baseOffset >= end {
			continue
		}
		from := max(seg.baseOffset, m.lastMapOffset, l.logStartOffset.Load())
		m.lastMapOffset = from
		if slices.Contains(toSnapshot, seg.baseOffset) {
			if err := m.takeSnapshot(); err != nil {
				return err
			}
		}
		pos, _, found, err := seg.findBatch(from)
		if err != nil {
			return fmt.Errorf("replaying producer state from segment %d: %w", seg.baseOffset, err)
		}
		if !found {
			continue
		}
		for pos < seg.size {
			h, err := seg.readHeader(pos, &buf)
			if err != nil {
				return fmt.Errorf("replaying producer state from segment %d: %w", seg.baseOffset, err)
			}
			if h.BaseOffset >= end {
				break
			}
			if h.HasProducerID() {
				if err := l.replayBatchLocked(seg, pos, &h); err != nil {
					return fmt.Errorf("replaying producer state from segment %d: %w", seg.baseOffset, err)
				}
			}
			pos += h.Size()
		}
	}
	return nil
}
