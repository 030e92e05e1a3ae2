package storage

import (
	"math"
	"slices"
)

// Compaction and transactions, as Kafka's Cleaner with its
// CleanedTransactionMetadata:
//
//   - the cleanable range ends at the last stable offset (cleanCandidate),
//     so an undecided transaction's records are never compacted;
//   - records of aborted transactions never enter the offset map (an
//     aborted value must not shadow a committed one) and their batches are
//     dropped, except a producer's last batch, kept empty for its sequence;
//   - transaction markers are kept whole, always: Kafka removes a marker
//     once its transaction's records are gone and delete.retention.ms has
//     passed, which Strait does not do yet (markers cost one 78-byte batch
//     per transaction and partition);
//   - the cleaned segment's transaction index holds the entries of the
//     segments it replaces, since their markers all survive.

// abortedSet is the aborted transactions of a log by producer, each
// producer's sorted by first offset.
type abortedSet map[int64][]AbortedTxn

// abortedSince collects the log's aborted transactions whose marker is at
// or after from.
func (l *Log) abortedSince(from int64) (abortedSet, error) {
	all, err := l.AbortedTransactions(from, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	set := abortedSet{}
	for _, a := range all {
		set[a.ProducerID] = append(set[a.ProducerID], a)
	}
	for _, txns := range set {
		slices.SortFunc(txns, func(a, b AbortedTxn) int { return cmpInt64(a.FirstOffset, b.FirstOffset) })
	}
	return set, nil
}

// contains reports whether a data batch belongs to an aborted transaction.
func (s abortedSet) contains(h *batchHeader) bool {
	if len(s) == 0 || !h.IsTransactional() || h.IsControl() {
		return false
	}
	txns := s[h.ProducerID]
	i, _ := slices.BinarySearchFunc(txns, h.BaseOffset, func(a AbortedTxn, off int64) int { return cmpInt64(a.FirstOffset, off) })
	// txns[i-1] is the last starting at or before the batch (or txns[i]
	// starts exactly at it).
	if i < len(txns) && txns[i].FirstOffset == h.BaseOffset {
		return true
	}
	return i > 0 && txns[i-1].LastOffset >= h.BaseOffset
}

// cleanedTxnIndex writes the transaction index of a cleaned segment made
// of group (named *.txnindex.cleaned, swapped in with the other files).
func (l *Log) cleanedTxnIndex(cleaned *segment, group []*segment) error {
	var entries []AbortedTxn
	l.mu.RLock()
	for _, s := range group {
		if s.txnIndex != nil {
			entries = append(entries, s.txnIndex.entries...)
		}
	}
	l.mu.RUnlock()
	ix, err := writeTxnIndexFile(l.fs, txnIndexPath(l.dir, cleaned.baseOffset)+cleanedFileSuffix, entries)
	if err != nil {
		return err
	}
	cleaned.txnIndex = ix
	return nil
}

// swappedTxnIndex points a swapped-in cleaned segment's index at its final
// name.
func (s *segment) swappedTxnIndex() {
	if s.txnIndex != nil {
		s.txnIndex.path = txnIndexPath(s.dir, s.baseOffset)
	}
}
