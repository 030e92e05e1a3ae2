package storage

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
)

// Transactions in a partition log, as Kafka's ProducerStateManager,
// ProducerAppendInfo and UnifiedLog:
//
//   - a transactional batch (attributes bit 4) from a producer without an
//     open transaction opens one at its first offset; a non-transactional
//     batch from a producer with one open is INVALID_TXN_STATE;
//   - a transaction marker is a control batch (attributes bits 4 and 5)
//     written by the coordinator side (AppendMarker), never by clients: one
//     record whose key is version 0 + type (0 ABORT, 1 COMMIT) and whose
//     value is version 0 + the coordinator epoch. It closes the producer's
//     transaction; its epoch must be at least the producer's (else
//     INVALID_PRODUCER_EPOCH) and its coordinator epoch at least the last
//     marker's (else TRANSACTION_COORDINATOR_FENCED), and it moves the
//     producer to its epoch (transaction version 2 bumps the epoch with
//     every transaction, so the marker fences the old one);
//   - an aborted transaction goes to the transaction index of the segment
//     holding its marker (txn_index.go) with the last stable offset at
//     that moment;
//   - the last stable offset (LSO) is the first offset of the oldest
//     transaction still open, or whose marker is not yet below the high
//     watermark, else the high watermark: read_committed fetches stop there;
//   - before the first append of a transaction, the broker asks the
//     transaction coordinator whether the partition is part of it
//     (KIP-890). StartTxnVerification creates a VerificationGuard for the
//     producer first; the append must present it, and a marker written
//     meanwhile drops it, so that a verification answered before an abort
//     cannot open a transaction the coordinator already closed (Kafka's
//     VerificationGuard, the ABA problem it names).

// originCoordinator is an append by a coordinator (transaction markers,
// the group coordinator's transactional offset commits): epochs are
// checked, sequences are not (Kafka's AppendOrigin.COORDINATOR).
const originCoordinator = originReplication + 1

// txnRange is a transaction of one producer in this partition: ongoing
// (lastOffset -1) or completed at its marker.
type txnRange struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64
}

// completedTxn is a transaction a marker closed (Kafka's CompletedTxn).
type completedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64 // the marker's offset
	aborted     bool
}

// VerificationGuard identifies one verification of a producer's first
// transactional append to a partition (Kafka's VerificationGuard): the
// pointer is the identity. nil is Kafka's SENTINEL: no verification needed.
type VerificationGuard struct {
	producerID int64
	epoch      int16
	lowestSeq  int32
	startedMs  int64
	// epochBump: the producer runs transaction version 2, whose markers
	// carry the epoch its next transaction uses (see clearVerification).
	epochBump bool
}

// clearVerificationForMarker ends a producer's verification when a marker
// of its transaction lands, as Kafka's UnifiedLog does, except when the
// marker is transaction version 2's, whose (bumped) epoch is the one the
// producer's next transaction already started verifying with: that guard
// belongs to the next transaction and must survive its predecessor's
// late-landing marker.
func (m *producerStateManager) clearVerificationForMarker(producerID int64, markerEpoch int16) {
	if g := m.verifying[producerID]; g != nil && g.epochBump && g.epoch == markerEpoch {
		return
	}
	delete(m.verifying, producerID)
}

// TxnMarker is a transaction marker to append (a WriteTxnMarkers entry).
type TxnMarker = recordbatch.EndTxnMarker

// ProducerState describes one producer of a partition (DescribeProducers).
type ProducerState struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64 // -1: no open transaction
}

// trackTransaction applies a data batch's transactional flag to the
// producer's open transaction (ProducerAppendInfo.appendDataBatch).
func (pa *producerAppend) trackTransaction(firstOffset int64, transactional bool) error {
	switch open := pa.updated.currentTxnFirstOffset >= 0; {
	case open && !transactional:
		msg := fmt.Sprintf("Expected transactional write from producer %d at offset %d in partition %s",
			pa.producerID, firstOffset, pa.topicPartition)
		if pa.origin == originReplication {
			pa.logger.Warn(msg)
			return nil
		}
		return &AppendError{Err: kerr.InvalidTxnState, Message: msg}
	case !open && transactional:
		pa.updated.currentTxnFirstOffset = firstOffset
		pa.startedTxn = firstOffset
	}
	return nil
}

// appendEndTxnMarker applies a marker at offset (ProducerAppendInfo.
// appendEndTxnMarker); it returns the transaction it completes, nil for a
// marker without data before it in this partition.
func (pa *producerAppend) appendEndTxnMarker(epoch int16, coordinatorEpoch int32, commit bool, transactionVersion int8, offset, timestamp int64) (*completedTxn, error) {
	if err := pa.checkMarkerEpoch(epoch, transactionVersion, offset); err != nil {
		return nil, err
	}
	if pa.updated.coordinatorEpoch > coordinatorEpoch {
		msg := fmt.Sprintf("Invalid coordinator epoch for producerId %d at offset %d in partition %s: %d (zombie), %d (current)",
			pa.producerID, offset, pa.topicPartition, coordinatorEpoch, pa.updated.coordinatorEpoch)
		if pa.origin != originReplication {
			return nil, &AppendError{Err: kerr.TransactionCoordinatorFenced, Message: msg}
		}
		pa.logger.Info(msg)
	}
	var ct *completedTxn
	if first := pa.updated.currentTxnFirstOffset; first >= 0 {
		ct = &completedTxn{producerID: pa.producerID, firstOffset: first, lastOffset: offset, aborted: !commit}
	}
	pa.updated.maybeUpdateEpoch(epoch)
	pa.updated.coordinatorEpoch = coordinatorEpoch
	pa.updated.currentTxnFirstOffset = -1
	pa.updated.lastTimestamp = timestamp
	return ct, nil
}

// addOngoing records an open transaction, keeping ongoing sorted.
func (m *producerStateManager) addOngoing(producerID, firstOffset int64) {
	i, found := slices.BinarySearchFunc(m.ongoing, firstOffset, func(t txnRange, off int64) int { return cmpInt64(t.firstOffset, off) })
	if found {
		return
	}
	m.ongoing = slices.Insert(m.ongoing, i, txnRange{producerID: producerID, firstOffset: firstOffset, lastOffset: -1})
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lastStableOffsetFor is the LSO right after ct's marker, before ct is
// marked complete (ProducerStateManager.lastStableOffset): the first open
// transaction of another producer, else the offset after the marker.
func (m *producerStateManager) lastStableOffsetFor(ct *completedTxn) int64 {
	for _, t := range m.ongoing {
		if t.producerID != ct.producerID {
			return t.firstOffset
		}
	}
	return ct.lastOffset + 1
}

// completeTxn moves ct from the open transactions to those awaiting the
// high watermark. A transaction not found (its start below a snapshot that
// did not know it, say) is only logged: the marker still ends it.
func (m *producerStateManager) completeTxn(ct *completedTxn) {
	i := slices.IndexFunc(m.ongoing, func(t txnRange) bool { return t.firstOffset == ct.firstOffset })
	if i < 0 {
		m.logger.Warn("completed a transaction that was not open", "dir", m.dir,
			"producer_id", ct.producerID, "first_offset", ct.firstOffset, "marker_offset", ct.lastOffset)
		return
	}
	m.ongoing = slices.Delete(m.ongoing, i, i+1)
	m.unreplicated = append(m.unreplicated, txnRange{producerID: ct.producerID, firstOffset: ct.firstOffset, lastOffset: ct.lastOffset})
}

// firstUnstableOffset is the first offset of the oldest open transaction
// or completed one whose marker is not below the high watermark; -1: none.
func (m *producerStateManager) firstUnstableOffset() int64 {
	first := int64(-1)
	if len(m.ongoing) > 0 {
		first = m.ongoing[0].firstOffset
	}
	for _, t := range m.unreplicated {
		if first < 0 || t.firstOffset < first {
			first = t.firstOffset
		}
	}
	return first
}

// pruneUnreplicated forgets completed transactions whose marker is below
// offset (the high watermark or the log start offset).
func (m *producerStateManager) pruneUnreplicated(offset int64) {
	m.unreplicated = slices.DeleteFunc(m.unreplicated, func(t txnRange) bool { return t.lastOffset < offset })
}

// updateFirstUnstableLocked republishes the first unstable offset after the
// transactions changed.
func (l *Log) updateFirstUnstableLocked() {
	m := l.producers
	m.pruneUnreplicated(l.highWatermark.Load())
	m.pruneUnreplicated(l.logStartOffset.Load())
	l.firstUnstable.Store(m.firstUnstableOffset())
	l.txnAwaitingHW.Store(len(m.unreplicated) > 0)
}

// txnHighWatermarkMoved releases completed transactions now below the high
// watermark; UpdateHighWatermark calls it only while some are waiting.
func (l *Log) txnHighWatermarkMoved() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed.Load() {
		l.updateFirstUnstableLocked()
	}
}

// LastStableOffset is the offset below which every transaction is decided
// and its marker is below the high watermark (Kafka's lastStableOffset):
// read_committed fetches and ListOffsets latest stop there. Lock-free.
func (l *Log) LastStableOffset() int64 {
	hw := l.highWatermark.Load()
	fu := l.firstUnstable.Load()
	if fu < 0 {
		return hw
	}
	return min(max(fu, l.logStartOffset.Load()), hw)
}

// StartTxnVerification is Kafka's maybeStartTransactionVerification: nil
// when the producer already has a transaction open at this epoch (no
// verification needed), else the guard the append after a successful
// verification must present. A second call before the append returns the
// same guard, with the lowest sequence seen. epochBump marks the guard as a
// transaction version 2 producer's (Produce v12+, TxnOffsetCommit v5+),
// Kafka's supportsEpochBump; it is set here, under the log's lock, because
// a marker landing on another connection reads it at once.
func (l *Log) StartTxnVerification(producerID int64, epoch int16, baseSequence int32, epochBump bool) *VerificationGuard {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.producers
	if m == nil {
		return nil
	}
	if e := m.producers[producerID]; e != nil && e.currentTxnFirstOffset >= 0 && e.epoch == epoch {
		return nil
	}
	g := m.verifying[producerID]
	switch {
	case g == nil:
		g = &VerificationGuard{producerID: producerID, epoch: epoch, lowestSeq: baseSequence, startedMs: l.now().UnixMilli()}
		m.verifying[producerID] = g
		l.changed()
	case epoch > g.epoch:
		g.epoch, g.lowestSeq = epoch, baseSequence
	case epoch == g.epoch:
		g.lowestSeq = min(g.lowestSeq, baseSequence)
	}
	if epochBump {
		g.epochBump = true
	}
	return g
}

// checkVerificationLocked refuses a transactional batch that would open a
// transaction without the producer's current guard (UnifiedLog.
// analyzeAndValidateProducerState): INVALID_TXN_STATE, or
// OUT_OF_ORDER_SEQUENCE_NUMBER for a batch after the lowest sequence whose
// verification started (ProducerAppendInfo.checkSequence).
func (l *Log) checkVerificationLocked(h *batchHeader, verify bool, guard *VerificationGuard) error {
	if !verify || !h.IsTransactional() || h.IsControl() {
		return nil
	}
	m := l.producers
	if e := m.producers[h.ProducerID]; e != nil && e.currentTxnFirstOffset >= 0 {
		return nil
	}
	current := m.verifying[h.ProducerID]
	if guard == nil || current != guard {
		return appendErrorf(kerr.InvalidTxnState, "Record was not part of an ongoing transaction")
	}
	if h.BaseSequence > current.lowestSeq {
		return appendErrorf(kerr.OutOfOrderSequenceNumber,
			"Out of order sequence number for producer %d in partition %s: %d (incoming seq. number), %d (earliest seen sequence)",
			h.ProducerID, m.topicPartition, h.BaseSequence, current.lowestSeq)
	}
	return nil
}

// AppendMarker appends a transaction marker for the producer (the leader's
// side of WriteTxnMarkers): it closes the producer's open transaction,
// indexes it if aborted, and moves the last stable offset. Errors unwrap to
// a *kerr.Error: INVALID_PRODUCER_EPOCH for an epoch below the producer's,
// TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch,
// KAFKA_STORAGE_ERROR for a failed write.
func (l *Log) AppendMarker(mk TxnMarker, leaderEpoch int32) (AppendInfo, error) {
	return l.AppendMarkerVersion(mk, leaderEpoch, 0)
}

// AppendMarkerVersion is AppendMarker for a marker of the given
// transaction version (WriteTxnMarkers v2, KIP-1228): from version 2 every
// transaction ends with a bumped epoch, so the marker's epoch must be above
// the producer's, or equal to it with no transaction open (a retried
// marker, KAFKA-19999); else INVALID_PRODUCER_EPOCH.
func (l *Log) AppendMarkerVersion(mk TxnMarker, leaderEpoch int32, transactionVersion int8) (AppendInfo, error) {
	now := l.now()
	batch := recordbatch.MarkerBatch(mk, now.UnixMilli())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return AppendInfo{}, errLogClosed
	}
	base := l.logEndOffset.Load()
	pa := l.producers.prepareUpdate(mk.ProducerID, originCoordinator)
	ct, err := pa.appendEndTxnMarker(mk.ProducerEpoch, mk.CoordinatorEpoch, mk.Commit, transactionVersion, base, now.UnixMilli())
	if err != nil {
		return AppendInfo{}, err
	}
	if err := l.maybeAssignEpochLocked(leaderEpoch, base); err != nil {
		return AppendInfo{}, err
	}
	recordbatch.Batch(batch).SetBaseOffset(base)
	recordbatch.Batch(batch).SetLeaderEpoch(leaderEpoch)
	h := parseBatchHeader(batch)
	seg, err := l.maybeRollLocked(&h, now)
	if err != nil {
		return AppendInfo{}, storageErr("roll segment", err)
	}
	if err := seg.append(batch, &h, l.config().IndexIntervalBytes); err != nil {
		l.errorLimited("marker append failed", "dir", l.dir, "offset", base, "err", err)
		return AppendInfo{}, storageErr("append", err)
	}
	l.logEndOffset.Store(h.NextOffset())
	l.changed()
	l.producers.update(pa)
	l.producers.clearVerificationForMarker(mk.ProducerID, mk.ProducerEpoch)
	var ixErr error
	if ct != nil {
		ixErr = l.completeTxnLocked(seg, ct)
	}
	l.producers.lastMapOffset = h.NextOffset()
	l.updateFirstUnstableLocked()
	info := AppendInfo{FirstOffset: base, LastOffset: base, LogAppendTime: -1, LogStartOffset: l.logStartOffset.Load(), RecordCount: 1}
	if ixErr != nil {
		// The marker is in the log; recovery rebuilds the index from it.
		l.errorLimited("transaction index append failed", "dir", l.dir, "offset", base, "err", ixErr)
		return info, storageErr("transaction index", ixErr)
	}
	l.unflushedMessages++
	if l.unflushedMessages >= l.config().FlushMessages {
		if err := l.flushLocked(now); err != nil {
			return info, storageErr("flush", err)
		}
	}
	return info, nil
}

// completeTxnLocked indexes a completed transaction if it was aborted, in
// seg (the marker's segment), and marks it complete.
func (l *Log) completeTxnLocked(seg *segment, ct *completedTxn) error {
	m := l.producers
	var err error
	if ct.aborted {
		if seg.txnIndex == nil {
			seg.txnIndex = &txnIndex{fs: l.fs, path: txnIndexPath(l.dir, seg.baseOffset)}
		}
		err = seg.txnIndex.append(AbortedTxn{ProducerID: ct.producerID, FirstOffset: ct.firstOffset,
			LastOffset: ct.lastOffset, LastStableOffset: m.lastStableOffsetFor(ct)})
	}
	m.completeTxn(ct)
	return err
}

// AbortedTransactions lists the aborted transactions overlapping the
// offsets [from, upTo) (UnifiedLog.collectAbortedTransactions): a
// read_committed fetch returns them so that the consumer skips their
// records. The search starts at the segment holding from, since a
// transaction's marker follows its records.
func (l *Log) AbortedTransactions(from, upTo int64) ([]AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return nil, errLogClosed
	}
	out := []AbortedTxn{}
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		var done bool
		out, done = l.segments[i].txnIndex.collect(from, upTo, out)
		if done {
			break
		}
	}
	return out, nil
}

// ActiveProducers describes the producers the partition tracks, ordered by
// id (DescribeProducers).
func (l *Log) ActiveProducers() []ProducerState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() || l.producers == nil {
		return nil
	}
	out := make([]ProducerState, 0, len(l.producers.producers))
	for id, e := range l.producers.producers {
		out = append(out, ProducerState{ProducerID: id, ProducerEpoch: e.epoch, LastSequence: e.lastSeq(),
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.currentTxnFirstOffset})
	}
	slices.SortFunc(out, func(a, b ProducerState) int { return cmpInt64(a.ProducerID, b.ProducerID) })
	return out
}

// hasOngoingTransaction reports whether the producer has a transaction open
// in this partition.
func (l *Log) hasOngoingTransaction(producerID int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.producers == nil {
		return false
	}
	e := l.producers.producers[producerID]
	return e != nil && e.currentTxnFirstOffset >= 0
}

// loadTxnIndexesLocked opens every segment's transaction index at Open. A
// corrupt index is emptied and the producer state replayed from the log
// start (by returning false), which rebuilds it.
func (l *Log) loadTxnIndexesLocked() (intact bool, err error) {
	intact = true
	for _, s := range l.segments {
		ix, lerr := loadTxnIndex(l.fs, txnIndexPath(l.dir, s.baseOffset), s.baseOffset, s.size)
		if ix == nil {
			return false, lerr
		}
		if lerr != nil {
			l.logger.Warn("rebuilding a corrupt transaction index", "dir", l.dir, "segment", s.baseOffset, "err", lerr)
			ix.entries = nil
			if err := ix.truncateFrom(-1); err != nil {
				ix.close()
				return false, err
			}
			intact = false
		}
		s.txnIndex = ix
	}
	return intact, nil
}

// truncateTxnIndexesLocked drops the index entries whose marker is at or
// after offset, before the producer state is replayed from there.
func (l *Log) truncateTxnIndexesLocked(offset int64) error {
	for _, s := range l.segments {
		if s.txnIndex == nil || len(s.txnIndex.entries) == 0 {
			continue
		}
		if err := s.txnIndex.truncateFrom(offset); err != nil {
			return fmt.Errorf("truncating transaction index of segment %d: %w", s.baseOffset, err)
		}
	}
	return nil
}

// replayBatchLocked applies one batch of the log to the producer state
// while it is rebuilt (LogSegment.recover / UnifiedLog.rebuildProducerState).
func (l *Log) replayBatchLocked(seg *segment, pos int64, h *batchHeader) error {
	m := l.producers
	pa := m.prepareUpdate(h.ProducerID, originReplication)
	if !h.IsControl() {
		// originReplication rejects nothing.
		if err := pa.appendDataBatch(h.ProducerEpoch, h.BaseSequence, h.lastSequence(), h.MaxTimestamp, h.BaseOffset, h.LastOffset(), h.IsTransactional()); err != nil {
			return err
		}
		m.update(pa)
		return nil
	}
	batch, err := seg.readBatch(pos, h)
	if err != nil {
		return err
	}
	mk, ok := recordbatch.ParseMarker(batch)
	if !ok {
		return nil
	}
	ct, err := pa.appendEndTxnMarker(h.ProducerEpoch, mk.CoordinatorEpoch, mk.Commit, 0, h.BaseOffset, h.MaxTimestamp)
	if err != nil {
		return err
	}
	m.update(pa)
	if ct != nil {
		return l.completeTxnLocked(seg, ct)
	}
	return nil
}

// removeProducerSnapshots deletes every producer snapshot of the log, so
// that Open replays the producer state (and the transaction indexes) from
// the log start.
func (l *Log) removeProducerSnapshots() error {
	offs, err := listProducerSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	for _, off := range offs {
		if err := removeProducerSnapshotFile(l.fs, l.dir, off); err != nil {
			return err
		}
	}
	return nil
}

// AppendAsCoordinator appends a batch a coordinator built (the group
// coordinator's transactional offset commits) as Kafka appends with
// AppendOrigin.COORDINATOR: the producer's epoch is checked, its sequence
// is not (such batches carry none), and, with verify, a transactional batch
// opening a transaction must present its verification guard.
func (l *Log) AppendAsCoordinator(records []byte, leaderEpoch int32, verify bool, guard *VerificationGuard) (AppendInfo, error) {
	return l.appendAsLeader(records, leaderEpoch, originCoordinator, verify, guard)
}

// validateFromCoordinator is validateProduce without the checks Kafka's
// LogValidator makes for client batches only (offset range and count,
// control batches, sequence numbers).
func validateFromCoordinator(records []byte, cfg *LogConfig, nowMs int64, logDir string) (validatedBatch, error) {
	batch, err := singleBatch(records)
	if err != nil {
		return validatedBatch{}, err
	}
	h := parseBatchHeader(batch)
	if got := recordbatch.Batch(batch).ComputeCRC(); got != h.CRC {
		return validatedBatch{}, corruptMessagef("record batch is corrupt (stored crc = %d, computed crc = %d)", h.CRC, got)
	}
	if h.Size() > int64(cfg.MaxMessageBytes) {
		return validatedBatch{}, appendErrorf(kerr.MessageTooLarge,
			"the record batch size is %d bytes, larger than max.message.bytes %d", h.Size(), cfg.MaxMessageBytes)
	}
	return validateRecords(batch, &h, cfg, nowMs, logDir)
}
