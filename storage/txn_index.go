package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/strait/strait/recordbatch"
)

// The transaction index is Kafka's `%020d.txnindex` (TransactionIndex,
// AbortedTxn): one per segment, listing the aborted transactions whose
// ABORT marker lies in that segment, in marker order. A read_committed
// fetch asks it which aborted transactions overlap the range it returns,
// so that the consumer can drop their records. Entries, big-endian, 34
// bytes each, back to back, no header:
//
//	version           int16  0
//	producerId        int64
//	firstOffset       int64  first offset of the transaction in this partition
//	lastOffset        int64  offset of the ABORT marker
//	lastStableOffset  int64  the last stable offset right after the marker
//	                         (the first offset of the oldest transaction still
//	                         open then, else the marker's offset + 1)
//
// lastStableOffset lets a search stop early: once an entry's is at or past
// the end of the fetched range, no later entry can overlap it.
//
// The file is created on the first entry (most segments never get one),
// appended to under the partition lock, fsynced when its segment is
// flushed or sealed, and rebuilt by recovery from the markers in the log
// (see rebuildTxnIndexesLocked). A torn trailing entry is dropped on load.
// The entries are also kept in memory, so a fetch reads no file. No
// descriptor stays open between uses (a segment holds only its .log's, see
// index.go): an append opens, writes and closes the file, and a sync after
// appends opens it again for the fsync (on Linux an fsync through any
// descriptor writes back the file's dirty pages and reports a writeback
// error not yet reported). Aborted transactions are rare enough for the
// extra system calls not to matter.
//
// Thread-safety: none; the owning Log's lock guards it.

const (
	txnIndexFileSuffix = ".txnindex"
	abortedTxnSize     = 34
	abortedTxnVersion  = 0
)

// AbortedTxn is one aborted transaction of a partition (Kafka's AbortedTxn).
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64 // the ABORT marker
	LastStableOffset int64
}

func (a AbortedTxn) appendTo(b []byte) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, abortedTxnVersion)
	b = be.AppendUint64(b, uint64(a.ProducerID))
	b = be.AppendUint64(b, uint64(a.FirstOffset))
	b = be.AppendUint64(b, uint64(a.LastOffset))
	return be.AppendUint64(b, uint64(a.LastStableOffset))
}

// txnIndex is one segment's transaction index.
type txnIndex struct {
	fs      FS
	path    string
	size    int64 // bytes of the file (0: absent)
	dirty   bool  // written since the last fsync
	entries []AbortedTxn
}

func txnIndexPath(dir string, base int64) string { return segmentPath(dir, base, txnIndexFileSuffix) }

// txnIndexSlackEntries is how many entries an index may hold beyond one
// per batch header its segment's bytes could hold: markers of a tail a
// crash cut off leave their entries behind (dropped by the truncation to
// the log end), and a few such should not cost a rebuild.
const txnIndexSlackEntries = 1024

// maxTxnIndexBytes bounds the index of a segment of segBytes bytes: an
// entry is written for an abort marker, a batch of at least a batch
// header, so a larger file is corrupt and is not read (it could claim any
// size, and reading it would allocate that much).
func maxTxnIndexBytes(segBytes int64) int64 {
	return (max(segBytes, 0)/recordbatch.HeaderSize + txnIndexSlackEntries) * abortedTxnSize
}

// loadTxnIndex reads the index at path if it exists; entries must have
// increasing last offsets within [segBase, segEnd), else the file is
// corrupt and an error says so (the caller rebuilds it), as is a file
// larger than an index of a segment of segBytes can be. A torn trailing
// entry is cut off.
func loadTxnIndex(fsys FS, path string, segBase, segBytes int64) (*txnIndex, error) {
	ix := &txnIndex{fs: fsys, path: path}
	b, err := readBoundedFile(fsys, path, maxTxnIndexBytes(segBytes))
	var tooLarge *fileTooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ix, nil
	case errors.As(err, &tooLarge):
		ix.size = tooLarge.size
		return ix, fmt.Errorf("%w, more than an index of a %d-byte segment holds", err, segBytes)
	case err != nil:
		return nil, err
	}
	ix.size = int64(len(b))
	if whole := len(b) / abortedTxnSize * abortedTxnSize; whole != len(b) {
		if err := ix.resize(int64(whole)); err != nil {
			return nil, err
		}
		b = b[:whole]
	}
	be := binary.BigEndian
	last := int64(-1)
	for ; len(b) >= abortedTxnSize; b = b[abortedTxnSize:] {
		if v := int16(be.Uint16(b)); v != abortedTxnVersion {
			return ix, fmt.Errorf("%s: unexpected aborted transaction version %d", path, v)
		}
		a := AbortedTxn{
			ProducerID:       int64(be.Uint64(b[2:])),
			FirstOffset:      int64(be.Uint64(b[10:])),
			LastOffset:       int64(be.Uint64(b[18:])),
			LastStableOffset: int64(be.Uint64(b[26:])),
		}
		if a.LastOffset < segBase || a.LastOffset <= last {
			return ix, fmt.Errorf("%s: aborted transaction ending at %d out of order (segment %d, previous %d)", path, a.LastOffset, segBase, last)
		}
		last = a.LastOffset
		ix.entries = append(ix.entries, a)
	}
	return ix, nil
}

// append adds an entry, creating the file if needed.
func (ix *txnIndex) append(a AbortedTxn) error {
	if n := len(ix.entries); n > 0 && ix.entries[n-1].LastOffset >= a.LastOffset {
		return fmt.Errorf("%s: aborted transaction ending at %d is not after the last one (%d)", ix.path, a.LastOffset, ix.entries[n-1].LastOffset)
	}
	f, err := ix.fs.OpenFile(ix.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	ix.dirty = true
	if _, err := f.WriteAt(a.appendTo(nil), ix.size); err != nil {
		_ = f.Truncate(ix.size)
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	ix.size += abortedTxnSize
	ix.entries = append(ix.entries, a)
	return nil
}

// truncateFrom drops the entries whose marker is at or after offset
// (Kafka's truncateTo).
// The file is cut to the entries kept, also when they are all kept but
// the file holds more (a corrupt index whose entries were dropped).
func (ix *txnIndex) truncateFrom(offset int64) error {
	i := slices.IndexFunc(ix.entries, func(a AbortedTxn) bool { return a.LastOffset >= offset })
	if i < 0 {
		i = len(ix.entries)
	}
	ix.entries = ix.entries[:i]
	return ix.resize(int64(i) * abortedTxnSize)
}

// resize truncates the file to size bytes, unless it has that size.
func (ix *txnIndex) resize(size int64) error {
	if size == ix.size {
		return nil
	}
	f, err := ix.fs.OpenFile(ix.path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		ix.size = 0
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	ix.size, ix.dirty = size, true
	return nil
}

// collect appends to out the entries overlapping [from, upTo) and reports
// whether the search is complete (an entry's last stable offset reaches
// upTo), as Kafka's collectAbortedTxns.
func (ix *txnIndex) collect(from, upTo int64, out []AbortedTxn) ([]AbortedTxn, bool) {
	if ix == nil {
		return out, false
	}
	for _, a := range ix.entries {
		if a.LastOffset >= from && a.FirstOffset < upTo {
			out = append(out, a)
		}
		if a.LastStableOffset >= upTo {
			return out, true
		}
	}
	return out, false
}

// sync fsyncs the file if it was written since the last sync.
func (ix *txnIndex) sync() error {
	if ix == nil || !ix.dirty {
		return nil
	}
	if err := syncPath(ix.fs, ix.path); err != nil {
		return err
	}
	ix.dirty = false
	return nil
}

// close releases nothing (no descriptor stays open); kept so that a
// segment's files are closed alike.
func (ix *txnIndex) close() error { return nil }

// writeTxnIndexFile writes entries as a complete index at path, fsynced
// (the cleaner's *.txnindex.cleaned); no file is written for no entries.
func writeTxnIndexFile(fsys FS, path string, entries []AbortedTxn) (*txnIndex, error) {
	ix := &txnIndex{fs: fsys, path: path}
	if len(entries) == 0 {
		return ix, nil
	}
	b := make([]byte, 0, len(entries)*abortedTxnSize)
	for _, a := range entries {
		b = a.appendTo(b)
	}
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	ix.size, ix.entries = int64(len(b)), slices.Clone(entries)
	return ix, nil
}
