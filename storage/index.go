package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Index file formats (Kafka's), all big-endian, entries sorted by offset:
//
//	.index      8 bytes per entry: relative offset int32, file position int32
//	.timeindex 12 bytes per entry: timestamp int64, relative offset int32
//
// Relative offsets are from the segment's base offset. An offset-index
// entry names a batch's last offset and the position where that batch
// starts; a time-index entry names the largest timestamp seen so far in the
// segment and the last offset of the batch that carried it. Both are sparse:
// entries are added every index.interval.bytes of log.
//
// While a segment is active its index files are preallocated to
// segment.index.bytes (like Kafka's mmap'd files) and the entries are also
// kept in memory, so appends and lookups cost no I/O. When the segment is
// sealed (rolled, or the log closed) the files are trimmed to their used
// size and the memory copy is dropped: lookups then pread entries during a
// binary search, served by the page cache. Go has no portable mmap, and this
// keeps the memory held per partition bounded by its active segment.
//
// Thread-safety: none; the owning Log's lock guards every call.

const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12
)

var errCorruptIndex = errors.New("corrupt index")

// indexFile is one fixed-entry-size index file.
type indexFile struct {
	path       string
	file       File
	entrySize  int
	maxEntries int
	n          int    // entries in use
	mem        []byte // entries while active; nil when sealed
}

// openIndexFile opens (creating if absent) an index file. With fresh, the
// file is emptied. With active, its entries are loaded into memory and the
// file is extended to maxBytes. A file whose size is not a whole number of
// entries is errCorruptIndex.
func openIndexFile(fsys FS, path string, entrySize int, maxBytes int32, fresh, active bool) (*indexFile, error) {
	flag := os.O_RDWR | os.O_CREATE
	if fresh {
		flag |= os.O_TRUNC
	}
	f, err := fsys.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	ix := &indexFile{path: path, file: f, entrySize: entrySize, maxEntries: max(1, int(maxBytes)/entrySize)}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size()%int64(entrySize) != 0 {
		f.Close()
		return nil, fmt.Errorf("%w: %s has %d bytes, not a multiple of %d", errCorruptIndex, path, fi.Size(), entrySize)
	}
	ix.n = int(fi.Size() / int64(entrySize))
	if active {
		if err := ix.activate(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return ix, nil
}

// activate loads the entries into memory and preallocates the file.
func (ix *indexFile) activate() error {
	if ix.n > ix.maxEntries {
		ix.maxEntries = ix.n // segment.index.bytes shrank; the index is simply full
	}
	// Capacity grows with use: reserving segment.index.bytes up front would
	// cost 10 MiB per index per partition.
	ix.mem = make([]byte, ix.n*ix.entrySize)
	if _, err := ix.file.ReadAt(ix.mem, 0); err != nil && !(errors.Is(err, io.EOF) && len(ix.mem) == 0) {
		return err
	}
	return ix.file.Truncate(int64(ix.maxEntries * ix.entrySize))
}

func (ix *indexFile) full() bool { return ix.n >= ix.maxEntries }

// entry returns entry i, read into buf (len >= entrySize) when sealed.
func (ix *indexFile) entry(i int, buf []byte) ([]byte, error) {
	if ix.mem != nil {
		return ix.mem[i*ix.entrySize : (i+1)*ix.entrySize], nil
	}
	buf = buf[:ix.entrySize]
	if _, err := ix.file.ReadAt(buf, int64(i*ix.entrySize)); err != nil {
		return nil, err
	}
	return buf, nil
}

// search returns the largest i whose entry satisfies pred, or -1; pred must
// hold for a prefix of the entries.
func (ix *indexFile) search(pred func(e []byte) bool) (int, error) {
	var buf [timeIndexEntrySize]byte
	lo, hi := 0, ix.n // invariant: entries < lo satisfy, entries >= hi do not
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		e, err := ix.entry(mid, buf[:])
		if err != nil {
			return -1, err
		}
		if pred(e) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1, nil
}

// append writes one entry at the end; the index must be active and not full.
func (ix *indexFile) append(e []byte) error {
	if ix.mem == nil {
		return fmt.Errorf("append to sealed index %s", ix.path)
	}
	if ix.full() {
		return fmt.Errorf("append to full index %s", ix.path)
	}
	if _, err := ix.file.WriteAt(e, int64(ix.n*ix.entrySize)); err != nil {
		return err
	}
	ix.mem = append(ix.mem, e...)
	ix.n++
	return nil
}

// truncateEntries drops entries from n on (used by rebuilds and, later,
// replication truncation).
func (ix *indexFile) truncateEntries(n int) error {
	if n >= ix.n {
		return nil
	}
	old := ix.n
	ix.n = n
	if ix.mem != nil {
		// The file stays preallocated: zero the dropped entries so that
		// they do not look like data.
		ix.mem = ix.mem[:n*ix.entrySize]
		_, err := ix.file.WriteAt(make([]byte, (old-n)*ix.entrySize), int64(n*ix.entrySize))
		return err
	}
	return ix.file.Truncate(int64(n * ix.entrySize))
}

// trim cuts the file to its used size (Kafka does so on roll and close).
func (ix *indexFile) trim() error { return ix.file.Truncate(int64(ix.n * ix.entrySize)) }

// seal trims, fsyncs and drops the memory copy.
func (ix *indexFile) seal() error {
	if err := ix.trim(); err != nil {
		return err
	}
	if err := ix.file.Sync(); err != nil {
		return err
	}
	ix.mem = nil
	return nil
}

func (ix *indexFile) sync() error  { return ix.file.Sync() }
func (ix *indexFile) close() error { return ix.file.Close() }

// offsetIndex maps offsets to log file positions.
type offsetIndex struct {
	*indexFile
	baseOffset int64
}

func (oi *offsetIndex) decode(e []byte) (offset, pos int64) {
	return oi.baseOffset + int64(int32(binary.BigEndian.Uint32(e))), int64(int32(binary.BigEndian.Uint32(e[4:])))
}

// lookup returns the last entry whose offset is <= target, or the
// segment start (baseOffset, 0).
func (oi *offsetIndex) lookup(target int64) (offset, pos int64, err error) {
	i, err := oi.search(func(e []byte) bool { o, _ := oi.decode(e); return o <= target })
	if err != nil || i < 0 {
		return oi.baseOffset, 0, err
	}
	return oi.at(i)
}

// lookupPosition returns the last entry whose position is <= pos.
func (oi *offsetIndex) lookupPosition(pos int64) (offset, position int64, err error) {
	i, err := oi.search(func(e []byte) bool { _, p := oi.decode(e); return p <= pos })
	if err != nil || i < 0 {
		return oi.baseOffset, 0, err
	}
	return oi.at(i)
}

func (oi *offsetIndex) at(i int) (offset, pos int64, err error) {
	var buf [offsetIndexEntrySize]byte
	e, err := oi.entry(i, buf[:])
	if err != nil {
		return 0, 0, err
	}
	offset, pos = oi.decode(e)
	return offset, pos, nil
}

// last returns the last entry, ok=false if the index is empty.
func (oi *offsetIndex) last() (offset, pos int64, ok bool, err error) {
	if oi.n == 0 {
		return oi.baseOffset, 0, false, nil
	}
	offset, pos, err = oi.at(oi.n - 1)
	return offset, pos, err == nil, err
}

func (oi *offsetIndex) appendEntry(offset, pos int64) error {
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(int32(offset-oi.baseOffset)))
	binary.BigEndian.PutUint32(e[4:], uint32(int32(pos)))
	return oi.append(e[:])
}

// timeIndex maps timestamps to offsets.
type timeIndex struct {
	*indexFile
	baseOffset int64
	lastTs     int64 // timestamp of the last entry, -1 if none
}

func (ti *timeIndex) decode(e []byte) (ts, offset int64) {
	return int64(binary.BigEndian.Uint64(e)), ti.baseOffset + int64(int32(binary.BigEndian.Uint32(e[8:])))
}

func (ti *timeIndex) at(i int) (ts, offset int64, err error) {
	var buf [timeIndexEntrySize]byte
	e, err := ti.entry(i, buf[:])
	if err != nil {
		return 0, 0, err
	}
	ts, offset = ti.decode(e)
	return ts, offset, nil
}

// loadLast caches the last entry's timestamp.
func (ti *timeIndex) loadLast() (ts, offset int64, ok bool, err error) {
	ti.lastTs = noTimestamp
	if ti.n == 0 {
		return noTimestamp, ti.baseOffset, false, nil
	}
	ts, offset, err = ti.at(ti.n - 1)
	if err != nil {
		return 0, 0, false, err
	}
	ti.lastTs = ts
	return ts, offset, true, nil
}

// lookup returns the last entry whose timestamp is <= target, or
// (-1, baseOffset).
func (ti *timeIndex) lookup(target int64) (ts, offset int64, err error) {
	i, err := ti.search(func(e []byte) bool { t, _ := ti.decode(e); return t <= target })
	if err != nil || i < 0 {
		return noTimestamp, ti.baseOffset, err
	}
	return ti.at(i)
}

// maybeAppend adds (ts, offset) if ts is larger than the last entry's, as
// Kafka's TimeIndex.maybeAppend; a full index takes no more entries.
func (ti *timeIndex) maybeAppend(ts, offset int64) error {
	if ts <= ti.lastTs || ti.full() {
		return nil
	}
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(int32(offset-ti.baseOffset)))
	if err := ti.append(e[:]); err != nil {
		return err
	}
	ti.lastTs = ts
	return nil
}
