package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/strait/strait/recordbatch"
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
// segment.index.bytes; when it is sealed (rolled, or the log closed) they
// are trimmed to their used size, and fsynced (on a roll, later: by the
// Log's asynchronous flush, see log.go). The files on disk are thus
// exactly Kafka's.
//
// # Memory-mapped, no file descriptor held
//
// As in Kafka, index files hold no file descriptor: only a segment's .log
// does (fetches hand it to sendfile), so a broker needs about one
// descriptor per segment, not three, and 10,000 partitions fit under a
// 20,000 RLIMIT_NOFILE. An index file is opened only for as long as one of
// the following takes:
//
//   - Active index: the preallocated file is mapped read-write (MAP_SHARED,
//     MADV_RANDOM: see mmapFile) and the descriptor closed. Appends store
//     entries into the mapping (no system call), indexPendingEntries at a
//     time (pending), lookups read it and the pending entries, and sync
//     stores the pending entries and is msync(MS_SYNC) of the range
//     written since the last sync. Blocks are reserved with fallocate
//     ahead of the entries stored, in steps doubling from 4 KiB to 1 MiB
//     (a reopen of the file and one fallocate per step), so that a store
//     never lands on an unallocated block: on a full disk that would be
//     SIGBUS, killing the broker, while a failed fallocate (ENOSPC) fails
//     the open, roll, flush or the append that stores with an error,
//     which the Log handles as any write error. The whole
//     segment.index.bytes is not reserved up front because it would take
//     20 MiB of disk per partition (200 GB for 10,000 partitions); the
//     file's length is still the whole preallocation, the rest sparse. A
//     filesystem without fallocate leaves the file sparse, as Kafka does.
//     The mapping takes segment.index.bytes of address space (VmSize grows
//     by 20 MiB per partition) but only the pages written are resident.
//   - Seal: the mapping is unmapped, the file reopened, truncated to its
//     used size and closed (trim); it is fsynced then (seal) or, on a
//     roll, later through a descriptor opened for the fsync (syncFile).
//     Either fsync covers the stores made through the mapping: they stay
//     in the shared page cache after the unmap, so no msync is needed.
//   - Sealed index: mapped read-only on its first search (Kafka's LazyIndex)
//     and kept mapped until the segment is closed, deleted, truncated or
//     reactivated. Loading a sealed segment reads only the last entry of
//     each index (pread while the file is open for its size, then cached),
//     and a loaded active segment's indexes start parked (see park): its
//     first append maps them, so opening a log maps nothing (a restart
//     with 100,000 partitions would otherwise map 200,000 indexes, past
//     vm.max_map_count, and fail).
//
// vm.max_map_count (65530 by default) bounds the mappings of the process:
// this package holds two per active segment appended to since it was
// opened (one per index) but none for an idle partition's (park, from
// Log.ReleaseIdleActive), plus one per
// sealed segment whose offset index was searched since the log was opened
// (fetches, the cleaner) and one per sealed segment whose time index was
// (ListOffsets by timestamp); empty indexes are never mapped. 10,000
// partitions written to take 20,000 mappings, plus those of the sealed
// segments read since. These mappings are bounded below the limit
// (mapbudget.go: vm.max_map_count less a headroom, 49,146 of 65,530),
// since past it the Go runtime's own mmap fails and stops the process.
// An active index that gets no mapping stays parked: its entries are
// written with pwrite (storePending) and its truncations zeroed the
// same way. A sealed index that cannot be mapped (the bound, or mmap
// failing with ENOMEM) is searched with pread through a descriptor
// opened for that search only. Raise vm.max_map_count (Kafka's operators
// use 262144 and more) for brokers with many partitions written at once
// or many segments that are read.
//
// Mapping goes through the File (the mappable interface in fs.go), so a
// FaultFS can fail it (FailMmaps). Files of an FS that does not offer it
// (a FaultFS without MapFiles: stores into a mapping would bypass its
// write and fsync faults) are not mapped. Their indexes take the
// descriptor-based path: the file stays open, the active index's entries
// are also kept in memory and written with one pwrite each, and sealed
// lookups pread entries during the binary search.
//
// Thread-safety: the owning Log's lock guards every call. Searches of a
// sealed index may run concurrently (under the Log's read lock, or from
// the cleaner, which holds no Log lock while it reads sealed segments), so
// the mapping itself is guarded by indexFile.mu: a search holds it shared
// while it reads the mapping, and mapping, unmapping and closing take it
// exclusively, so that a search never reads unmapped memory. The pending
// entries of an active index are appended and stored under the Log's
// write lock and read by searches under its read lock at least.

const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12

	// indexPendingEntries is how many appended entries an active index on
	// the mmap path keeps in memory before storing them into its mapping
	// at once. The kernel's writeback write-protects the pages it cleans,
	// so the next store into such a page faults, and ext4's page_mkwrite
	// dirties the inode again: with 10,000 partitions written in turn,
	// each index page is cleaned between two appends, and these faults
	// took about a tenth of the broker's produce CPU (one per batch and
	// index). Stored 32 at a time, they are one per 32 batches. Searches
	// read the pending entries from memory; sync, trim (a roll, a close)
	// and truncations deal with them first. A crash loses at most these,
	// which recovery rebuilds with the rest of the indexes of the
	// segments past the recovery point (as Kafka, it does not trust them).
	indexPendingEntries = 32

	// Active index blocks are reserved in steps doubling from
	// indexReserveMin up to indexReserveMaxStep.
	indexReserveMin     = 4 << 10
	indexReserveMaxStep = 1 << 20
)

var (
	errCorruptIndex = errors.New("corrupt index")
	errIndexClosed  = errors.New("index closed")
)

// indexFile is one fixed-entry-size index file.
type indexFile struct {
	fsys       FS
	path       string
	entrySize  int
	maxEntries int
	n          int  // entries in use
	active     bool // takes appends; preallocated to maxEntries

	// The descriptor-based path (files that are not plain OS files).
	file File   // open until close
	mem  []byte // entries while active

	// The mmap path.
	useMmap bool
	// mu guards mm and closed against searches not under the Log's write
	// lock; see the comment at the top.
	mu sync.RWMutex
	// mm maps the file: while active, read-write, maxEntries entries;
	// while sealed, read-only, n entries, from the first search on (nil
	// until then, and for an empty index).
	mm     []byte
	closed bool
	// reserved is how many bytes from the start of an active file have
	// their blocks reserved (fallocate), len(mm) when the filesystem
	// cannot reserve them.
	reserved int
	// [dirtyFrom, dirtyTo) holds the bytes of an active mapping stored
	// since the last msync; dirtyTo == 0 when none.
	dirtyFrom, dirtyTo int
	// pending holds the last entries of an active index (of the n), not
	// yet stored into the file: see indexPendingEntries. Nil until the
	// first append, and for a parked index with none.
	pending []byte
	// last is entry n-1 when n > 0, so that loading a sealed segment maps
	// nothing.
	last [timeIndexEntrySize]byte
	// scratch holds the entry being appended: a local array would escape
	// through the File interface's WriteAt, one allocation per entry.
	scratch [timeIndexEntrySize]byte
}

// openIndexFile opens (creating if absent) an index file. With fresh, the
// file is emptied. With active, it is preallocated to maxBytes and mapped
// (or, off the mmap path, its entries loaded into memory). A file whose
// size is not a whole number of entries is errCorruptIndex. On the mmap
// path no descriptor stays open.
func openIndexFile(fsys FS, path string, entrySize int, maxBytes int32, fresh, active bool) (*indexFile, error) {
	flag := os.O_RDWR | os.O_CREATE
	if fresh {
		flag |= os.O_TRUNC
	}
	f, err := fsys.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	ix := &indexFile{fsys: fsys, path: path, entrySize: entrySize, maxEntries: max(1, int(maxBytes)/entrySize)}
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
	mf := mappableFile(f)
	if mf == nil {
		ix.file = f
		if active {
			if err := ix.activateFD(); err != nil {
				f.Close()
				return nil, err
			}
		}
		return ix, nil
	}
	ix.useMmap = true
	defer f.Close()
	if ix.n > 0 {
		if _, err := f.ReadAt(ix.last[:entrySize], int64((ix.n-1)*entrySize)); err != nil {
			return nil, err
		}
	}
	if active && !fresh {
		// A loaded active index starts parked: its first append maps it.
		// Restarting with 100,000 partitions would otherwise map 200,000
		// indexes, past vm.max_map_count, before any is written to.
		if err := ix.preallocateActive(mf.mapTarget(), true); err != nil {
			return nil, err
		}
		ix.active = true
	} else if active {
		if err := ix.mapActive(mf, true); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// activateFD loads the entries into memory and preallocates the file
// (descriptor-based path).
func (ix *indexFile) activateFD() error {
	if ix.n > ix.maxEntries {
		ix.maxEntries = ix.n // segment.index.bytes shrank; the index is simply full
	}
	// Capacity grows with use: reserving segment.index.bytes up front would
	// cost 10 MiB per index per partition.
	ix.mem = make([]byte, ix.n*ix.entrySize)
	if _, err := ix.file.ReadAt(ix.mem, 0); err != nil && !(errors.Is(err, io.EOF) && len(ix.mem) == 0) {
		ix.mem = nil
		return err
	}
	if err := ix.file.Truncate(int64(ix.maxEntries * ix.entrySize)); err != nil {
		ix.mem = nil
		return err
	}
	ix.active = true
	return nil
}

// mapActive preallocates f (the index file, which must not be mapped),
// reserves the blocks of the first step and maps it read-write. A failed
// reservation is an error if strict, else left to the next append (which
// fails until the disk has room): a segment whose roll failed takes
// appends again even on a full disk, failing them cleanly.
func (ix *indexFile) mapActive(mf mappable, strict bool) error {
	if err := ix.preallocateActive(mf.mapTarget(), strict); err != nil {
		return err
	}
	size := ix.maxEntries * ix.entrySize
	if !indexMaps.take() {
		ix.active = true // parked: stores pwrite (storePending)
		return nil
	}
	mm, err := mf.mmap(size, true)
	if err != nil {
		indexMaps.give()
		return &os.PathError{Op: "mmap", Path: ix.path, Err: err}
	}
	ix.mu.Lock()
	ix.mm, ix.active = mm, true
	ix.mu.Unlock()
	ix.dirtyFrom, ix.dirtyTo = size, 0
	return nil
}

// preallocateActive reserves the blocks of the first step of f (the index
// file, which must not be mapped) and makes it segment.index.bytes long,
// unmapped; mapActive maps it (an active index left unmapped is parked:
// see park). strict as mapActive's.
func (ix *indexFile) preallocateActive(f *os.File, strict bool) error {
	if ix.n > ix.maxEntries {
		ix.maxEntries = ix.n // segment.index.bytes shrank; the index is simply full
	}
	size := ix.maxEntries * ix.entrySize
	ix.reserved = 0
	// Blocks first: should the disk be full, the file is left as it was.
	if err := ix.reserveWith(f, (ix.n+1)*ix.entrySize, size); err != nil && strict {
		return err
	}
	if err := f.Truncate(int64(size)); err != nil {
		return err
	}
	ix.dirtyFrom, ix.dirtyTo = size, 0
	return nil
}

// reserveWith reserves, through f, the blocks of an active file of size
// bytes up to need bytes at least: a step more than is reserved.
func (ix *indexFile) reserveWith(f *os.File, need, size int) error {
	need = min(need, size)
	if need <= ix.reserved {
		return nil
	}
	target := max(need, ix.reserved+min(max(ix.reserved, indexReserveMin), indexReserveMaxStep))
	target = min((target+indexReserveMin-1)/indexReserveMin*indexReserveMin, size)
	ok, err := reserveBlocks(f, int64(ix.reserved), int64(target-ix.reserved))
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: ix.path, Err: err}
	}
	if !ok {
		target = size // cannot reserve: sparse, as Kafka's files
	}
	ix.reserved = target
	return nil
}

// reserve makes sure the blocks of an active mapping's first need bytes
// are reserved, reopening the file when they are not yet.
func (ix *indexFile) reserve(need int) error {
	if need <= ix.reserved {
		return nil
	}
	f, mf, err := ix.openMappable(os.O_RDWR)
	if err != nil {
		return err
	}
	defer f.Close()
	return ix.reserveWith(mf.mapTarget(), need, len(ix.mm))
}

// openMappable opens the index file for mapping or reserving blocks; the
// caller closes f (a mapping outlives its descriptor).
func (ix *indexFile) openMappable(flag int) (f File, mf mappable, err error) {
	f, err = ix.fsys.OpenFile(ix.path, flag, 0)
	if err != nil {
		return nil, nil, err
	}
	if mf = mappableFile(f); mf == nil {
		f.Close()
		return nil, nil, fmt.Errorf("index %s: not an OS file", ix.path)
	}
	return f, mf, nil
}

func (ix *indexFile) markDirty(from, to int) {
	ix.dirtyFrom = min(ix.dirtyFrom, from)
	ix.dirtyTo = max(ix.dirtyTo, to)
}

// unmap drops the mapping, if any.
func (ix *indexFile) unmap() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.mm == nil {
		return nil
	}
	err := munmap(ix.mm)
	ix.mm = nil
	indexMaps.give()
	return err
}

// mapSealed maps a sealed index read-only, unless it is mapped already.
func (ix *indexFile) mapSealed() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.mm != nil || ix.closed || ix.active || ix.n == 0 {
		return nil
	}
	if !indexMaps.take() {
		return &os.PathError{Op: "mmap", Path: ix.path, Err: errMapBudget}
	}
	f, mf, err := ix.openMappable(os.O_RDONLY)
	if err != nil {
		indexMaps.give()
		return err
	}
	defer f.Close()
	mm, err := mf.mmap(ix.n*ix.entrySize, false)
	if err != nil {
		indexMaps.give()
		return &os.PathError{Op: "mmap", Path: ix.path, Err: err}
	}
	ix.mm = mm
	return nil
}

func (ix *indexFile) full() bool { return ix.n >= ix.maxEntries }

// indexView is how a search reads an index's entries: from memory (the
// mapping, or the descriptor-based path's copy) or with pread, the
// pending ones (from stored on) from memory.
type indexView struct {
	data      []byte      // the entries, or nil: read r
	r         io.ReaderAt // the file
	n         int         // entries
	stored    int         // entries in data or r; the rest are in pending
	pending   []byte
	entrySize int
	rlocked   bool // holds ix.mu shared (data is the mapping)
	tmp       File // opened for this view only, closed by endView
}

func (v *indexView) entry(i int, buf []byte) ([]byte, error) {
	if i >= v.stored {
		i -= v.stored
		return v.pending[i*v.entrySize : (i+1)*v.entrySize], nil
	}
	if v.data != nil {
		return v.data[i*v.entrySize : (i+1)*v.entrySize], nil
	}
	buf = buf[:v.entrySize]
	if _, err := v.r.ReadAt(buf, int64(i*v.entrySize)); err != nil {
		return nil, err
	}
	return buf, nil
}

// view returns a view of the entries; the caller must call endView. A
// sealed index is mapped on its first view; should mapping fail (ENOMEM at
// vm.max_map_count), the view preads a descriptor opened for it alone.
func (ix *indexFile) view() (indexView, error) {
	v := indexView{n: ix.n, stored: ix.n, entrySize: ix.entrySize}
	if !ix.useMmap {
		if ix.mem != nil {
			v.data = ix.mem
		} else {
			v.r = ix.file
		}
		return v, nil
	}
	v.pending = ix.pending
	v.stored = ix.stored()
	ix.mu.RLock()
	if ix.mm == nil && !ix.closed && v.stored > 0 {
		ix.mu.RUnlock()
		mapErr := ix.mapSealed()
		ix.mu.RLock()
		if ix.mm == nil && !ix.closed {
			ix.mu.RUnlock()
			f, err := ix.fsys.OpenFile(ix.path, os.O_RDONLY, 0)
			if err != nil {
				return v, errors.Join(mapErr, err)
			}
			v.r, v.tmp = f, f
			return v, nil
		}
	}
	if ix.closed {
		ix.mu.RUnlock()
		return v, fmt.Errorf("%s: %w", ix.path, errIndexClosed)
	}
	v.data, v.rlocked = ix.mm, true
	if ix.mm != nil {
		v.stored = min(v.stored, len(ix.mm)/ix.entrySize)
		v.n = v.stored + len(v.pending)/ix.entrySize
	}
	return v, nil
}

func (ix *indexFile) endView(v *indexView) {
	if v.tmp != nil {
		v.tmp.Close()
	}
	if v.rlocked {
		ix.mu.RUnlock()
	}
}

// read copies entry i into buf (len >= entrySize) and returns it.
func (ix *indexFile) read(i int, buf []byte) ([]byte, error) {
	buf = buf[:ix.entrySize]
	if ix.useMmap && i >= 0 && i == ix.n-1 {
		copy(buf, ix.last[:])
		return buf, nil
	}
	v, err := ix.view()
	if err != nil {
		return nil, err
	}
	defer ix.endView(&v)
	if i < 0 || i >= v.n {
		return nil, fmt.Errorf("%s: entry %d of %d", ix.path, i, v.n)
	}
	e, err := v.entry(i, buf)
	if err != nil {
		return nil, err
	}
	copy(buf, e)
	return buf, nil
}

// search returns the largest i whose entry satisfies pred, or -1; pred must
// hold for a prefix of the entries.
func (ix *indexFile) search(pred func(e []byte) bool) (int, error) {
	return ix.searchInto(pred, nil)
}

// searchInto is search that also copies the entry found into out (when
// not nil and an entry is found).
func (ix *indexFile) searchInto(pred func(e []byte) bool, out []byte) (int, error) {
	v, err := ix.view()
	if err != nil {
		return -1, err
	}
	defer ix.endView(&v)
	var buf [timeIndexEntrySize]byte
	lo, hi := 0, v.n // invariant: entries < lo satisfy, entries >= hi do not
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		e, err := v.entry(mid, buf[:])
		if err != nil {
			return -1, err
		}
		if pred(e) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo > 0 && out != nil {
		e, err := v.entry(lo-1, buf[:])
		if err != nil {
			return -1, err
		}
		copy(out, e)
	}
	return lo - 1, nil
}

// append writes one entry at the end; the index must be active and not
// full. On the mmap path it is pending until indexPendingEntries are, then
// they are stored at once (storePending), a parked index mapped for them
// only if mapParked: the final entry of a segment being closed goes
// through a descriptor rather than mapping the index only to unmap it.
func (ix *indexFile) append(e []byte, mapParked bool) error {
	if !ix.active {
		return fmt.Errorf("append to sealed index %s", ix.path)
	}
	if ix.full() {
		return fmt.Errorf("append to full index %s", ix.path)
	}
	off := ix.n * ix.entrySize
	if !ix.useMmap {
		if _, err := ix.file.WriteAt(e, int64(off)); err != nil {
			return err
		}
		ix.mem = append(ix.mem, e...)
		ix.n++
		return nil
	}
	ix.addPending(e)
	if len(ix.pending) < indexPendingEntries*ix.entrySize {
		return nil
	}
	if err := ix.storePending(mapParked); err != nil {
		ix.dropLastPending()
		return err
	}
	return nil
}

// addPending appends e to the pending entries (mmap path).
func (ix *indexFile) addPending(e []byte) {
	if ix.pending == nil {
		ix.pending = make([]byte, 0, indexPendingEntries*ix.entrySize)
	}
	ix.pending = append(ix.pending, e...)
	copy(ix.last[:], e)
	ix.n++
}

// dropLastPending undoes addPending after the store it led to failed: the
// entries before it stay pending.
func (ix *indexFile) dropLastPending() {
	ix.pending = ix.pending[:len(ix.pending)-ix.entrySize]
	ix.n--
	if len(ix.pending) > 0 {
		copy(ix.last[:], ix.pending[len(ix.pending)-ix.entrySize:])
	}
}

// stored is how many entries are in the file (or its mapping): the
// others are pending.
func (ix *indexFile) stored() int { return ix.n - len(ix.pending)/ix.entrySize }

// storePending stores the pending entries of an active index into its
// mapping, mapping a parked one first if mapParked; a parked index that
// is not to be mapped (or gets no mapping: the bound) takes them with one
// pwrite through a descriptor opened for it. Their blocks are reserved
// first. On failure they stay pending.
func (ix *indexFile) storePending(mapParked bool) error {
	if len(ix.pending) == 0 {
		return nil
	}
	off := ix.stored() * ix.entrySize
	end := off + len(ix.pending)
	if mapParked || ix.mm != nil {
		err := ix.unpark()
		if err == nil {
			if err := ix.reserve(end); err != nil {
				return err
			}
			copy(ix.mm[off:end], ix.pending)
			ix.markDirty(off, end)
			ix.pending = ix.pending[:0]
			return nil
		}
		if !errors.Is(err, errMapBudget) {
			return err
		}
	}
	f, mf, err := ix.openMappable(os.O_RDWR)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ix.reserveWith(mf.mapTarget(), end, ix.maxEntries*ix.entrySize); err != nil {
		return err
	}
	if _, err := f.WriteAt(ix.pending, int64(off)); err != nil {
		return err
	}
	ix.markDirty(off, end)
	ix.pending = ix.pending[:0]
	return nil
}

// truncateEntries drops entries from n on (used by rebuilds and
// replication truncation). An active index stays preallocated, the dropped
// entries zeroed so that they do not look like data; a sealed one is cut.
func (ix *indexFile) truncateEntries(n int) error {
	if n >= ix.n {
		return nil
	}
	old := ix.n
	ix.n = n
	switch {
	case !ix.useMmap && ix.active:
		ix.mem = ix.mem[:n*ix.entrySize]
		_, err := ix.file.WriteAt(make([]byte, (old-n)*ix.entrySize), int64(n*ix.entrySize))
		return err
	case !ix.useMmap:
		return ix.file.Truncate(int64(n * ix.entrySize))
	case ix.active:
		// Pending entries are cut in memory; if the cut reaches stored
		// ones, the pending go and the stored are zeroed as before.
		stored := old - len(ix.pending)/ix.entrySize
		if n >= stored {
			ix.pending = ix.pending[:(n-stored)*ix.entrySize]
			if n > stored {
				copy(ix.last[:], ix.pending[len(ix.pending)-ix.entrySize:])
				return nil
			}
			if n > 0 {
				return ix.reloadLast()
			}
			return nil
		}
		ix.pending = ix.pending[:0]
		old = stored
		if err := ix.unpark(); errors.Is(err, errMapBudget) {
			return ix.truncateUnmapped(n, old)
		} else if err != nil {
			ix.n = old
			return err
		}
		clear(ix.mm[n*ix.entrySize : old*ix.entrySize])
		ix.markDirty(n*ix.entrySize, old*ix.entrySize)
		if n > 0 {
			copy(ix.last[:], ix.mm[(n-1)*ix.entrySize:n*ix.entrySize])
		}
		return nil
	}
	// Sealed: the mapping goes (it would outlast the file's end), the file
	// is cut and fsynced, and the new last entry read.
	if err := ix.unmap(); err != nil {
		return err
	}
	f, err := ix.fsys.OpenFile(ix.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(int64(n * ix.entrySize)); err != nil {
		return err
	}
	if n > 0 {
		if _, err := f.ReadAt(ix.last[:ix.entrySize], int64((n-1)*ix.entrySize)); err != nil {
			return err
		}
	}
	return f.Sync()
}

// reloadLast reads entry n-1 (stored) into last.
func (ix *indexFile) reloadLast() error {
	v, err := ix.view()
	if err != nil {
		return err
	}
	defer ix.endView(&v)
	var buf [timeIndexEntrySize]byte
	e, err := v.entry(ix.n-1, buf[:])
	if err != nil {
		return err
	}
	copy(ix.last[:], e)
	return nil
}

// truncateUnmapped is truncateEntries for a parked active index that
// cannot be mapped (errMapBudget): the dropped entries are zeroed with
// pwrite and the new last entry read back. ix.n is already n.
func (ix *indexFile) truncateUnmapped(n, old int) error {
	f, err := ix.fsys.OpenFile(ix.path, os.O_RDWR, 0)
	if err != nil {
		ix.n = old
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, (old-n)*ix.entrySize), int64(n*ix.entrySize)); err != nil {
		ix.n = old
		return err
	}
	ix.markDirty(n*ix.entrySize, old*ix.entrySize)
	if n > 0 {
		if _, err := f.ReadAt(ix.last[:ix.entrySize], int64((n-1)*ix.entrySize)); err != nil {
			return err
		}
	}
	return nil
}

// seal trims the index (see trim) and fsyncs it.
func (ix *indexFile) seal() error {
	if err := ix.trim(); err != nil {
		return err
	}
	return ix.syncFile()
}

// trim cuts the file to its used size (Kafka does so on roll and close)
// and makes the index sealed, without an fsync (a roll leaves that to the
// Log's asynchronous flush: syncFile): off the mmap path the memory copy
// is dropped; on it the mapping is, to be mapped read-only on the next
// search. On failure an active index on the mmap path stays active if the
// file could not be opened, else it is sealed (unmapped) but perhaps not
// trimmed: activate maps it again.
func (ix *indexFile) trim() error {
	if !ix.useMmap {
		if err := ix.file.Truncate(int64(ix.n * ix.entrySize)); err != nil {
			return err
		}
		ix.mem, ix.active = nil, false
		return nil
	}
	f, err := ix.fsys.OpenFile(ix.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ix.storePending(false); err != nil {
		return err
	}
	ix.pending = nil
	uerr := ix.unmap()
	ix.active = false
	ix.reserved, ix.dirtyFrom, ix.dirtyTo = 0, 0, 0
	if uerr != nil {
		return uerr
	}
	return f.Truncate(int64(ix.n * ix.entrySize))
}

// syncFile fsyncs the file of a sealed index: through its descriptor off
// the mmap path, else through one opened for the fsync (on Linux it writes
// back the inode's dirty pages whichever descriptor they were written
// through, the stores made through the mapping before it was unmapped
// included). It reads only fields fixed when the index was opened, so the
// Log's asynchronous flush calls it without the Log's lock; a file
// removed or renamed meanwhile fails it (the caller tells whether that
// matters).
func (ix *indexFile) syncFile() error {
	if !ix.useMmap {
		return ix.file.Sync()
	}
	return syncPath(ix.fsys, ix.path)
}

// activate makes a sealed index take appends again: preallocated and
// mapped read-write (or loaded into memory off the mmap path).
func (ix *indexFile) activate() error {
	if ix.active {
		return nil
	}
	if !ix.useMmap {
		return ix.activateFD()
	}
	f, mf, err := ix.openMappable(os.O_RDWR)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ix.unmap(); err != nil {
		return err
	}
	return ix.mapActive(mf, false)
}

// sync makes the entries durable: fsync off the mmap path, msync of the
// range stored since the last sync on it (a sealed index is fsynced by
// seal, by truncateEntries, or after a roll by syncFile).
func (ix *indexFile) sync() error {
	if !ix.useMmap {
		return ix.file.Sync()
	}
	if !ix.active {
		return nil
	}
	if err := ix.storePending(false); err != nil {
		return err
	}
	if ix.dirtyTo == 0 {
		return nil
	}
	if ix.mm == nil { // parked: the stores are in the page cache
		if err := syncPath(ix.fsys, ix.path); err != nil {
			return err
		}
		ix.dirtyFrom, ix.dirtyTo = ix.maxEntries*ix.entrySize, 0
		return nil
	}
	from := ix.dirtyFrom &^ (pageSize - 1)
	if err := msync(ix.mm[from:ix.dirtyTo]); err != nil {
		return &os.PathError{Op: "msync", Path: ix.path, Err: err}
	}
	ix.dirtyFrom, ix.dirtyTo = len(ix.mm), 0
	return nil
}

// park unmaps an active index of an idle segment (Log.ReleaseIdleActive),
// so that an idle partition holds no mapping (vm.max_map_count) as it
// holds no descriptor. It stays active: the file keeps its
// preallocation and reserved blocks, searches pread it (view), and the
// next append or truncation maps it again (unpark). The stores made
// through the mapping stay in the shared page cache, so sync fsyncs the
// file instead of an msync. Under the Log's write lock.
func (ix *indexFile) park() error {
	if !ix.useMmap || !ix.active || ix.mm == nil {
		return nil
	}
	// Stored now, the buffer goes with the mapping; should that fail (no
	// room for their blocks) they stay pending.
	if ix.storePending(false) == nil {
		ix.pending = nil
	}
	return ix.unmap()
}

// parked reports whether ix is active and unmapped (park).
func (ix *indexFile) parked() bool { return ix.useMmap && ix.active && ix.mm == nil }

// mappedActive reports whether ix is an active index holding a mapping.
func (ix *indexFile) mappedActive() bool { return ix.useMmap && ix.active && ix.mm != nil }

// unpark maps a parked index read-write again. Under the Log's write lock.
func (ix *indexFile) unpark() error {
	if !ix.parked() {
		return nil
	}
	if !indexMaps.take() {
		return errMapBudget
	}
	f, mf, err := ix.openMappable(os.O_RDWR)
	if err != nil {
		indexMaps.give()
		return err
	}
	defer f.Close()
	mm, err := mf.mmap(ix.maxEntries*ix.entrySize, true)
	if err != nil {
		indexMaps.give()
		return &os.PathError{Op: "mmap", Path: ix.path, Err: err}
	}
	ix.mu.Lock()
	ix.mm = mm
	ix.mu.Unlock()
	if ix.dirtyTo == 0 {
		ix.dirtyFrom = len(mm)
	}
	return nil
}

// close releases the index: the descriptor, or the mapping. An active
// index is left as it is on disk (preallocated: seal trims).
func (ix *indexFile) close() error {
	if !ix.useMmap {
		return ix.file.Close()
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.closed, ix.active = true, false
	ix.pending = nil // only trim keeps them (a close without it leaves a preallocated index, for recovery)
	if ix.mm == nil {
		return nil
	}
	err := munmap(ix.mm)
	ix.mm = nil
	indexMaps.give()
	return err
}

var pageSize = os.Getpagesize()

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
	var e [offsetIndexEntrySize]byte
	i, err := oi.searchInto(func(e []byte) bool { o, _ := oi.decode(e); return o <= target }, e[:])
	if err != nil || i < 0 {
		return oi.baseOffset, 0, err
	}
	offset, pos = oi.decode(e[:])
	return offset, pos, nil
}

// lookupPosition returns the last entry whose position is <= pos.
func (oi *offsetIndex) lookupPosition(pos int64) (offset, position int64, err error) {
	var e [offsetIndexEntrySize]byte
	i, err := oi.searchInto(func(e []byte) bool { _, p := oi.decode(e); return p <= pos }, e[:])
	if err != nil || i < 0 {
		return oi.baseOffset, 0, err
	}
	offset, position = oi.decode(e[:])
	return offset, position, nil
}

func (oi *offsetIndex) at(i int) (offset, pos int64, err error) {
	var buf [offsetIndexEntrySize]byte
	e, err := oi.read(i, buf[:])
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
	e := oi.scratch[:offsetIndexEntrySize]
	binary.BigEndian.PutUint32(e, uint32(int32(offset-oi.baseOffset)))
	binary.BigEndian.PutUint32(e[4:], uint32(int32(pos)))
	return oi.append(e, true)
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
	e, err := ti.read(i, buf[:])
	if err != nil {
		return 0, 0, err
	}
	ts, offset = ti.decode(e)
	return ts, offset, nil
}

// loadLast caches the last entry's timestamp.
func (ti *timeIndex) loadLast() (ts, offset int64, ok bool, err error) {
	ti.lastTs = recordbatch.NoTimestamp
	if ti.n == 0 {
		return recordbatch.NoTimestamp, ti.baseOffset, false, nil
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
	var e [timeIndexEntrySize]byte
	i, err := ti.searchInto(func(e []byte) bool { t, _ := ti.decode(e); return t <= target }, e[:])
	if err != nil || i < 0 {
		return recordbatch.NoTimestamp, ti.baseOffset, err
	}
	ts, offset = ti.decode(e[:])
	return ts, offset, nil
}

// maybeAppend adds (ts, offset) if ts is larger than the last entry's, as
// Kafka's TimeIndex.maybeAppend; a full index takes no more entries.
func (ti *timeIndex) maybeAppend(ts, offset int64) error {
	return ti.maybeAppendWith(ts, offset, false)
}

// maybeAppendFinal is maybeAppend for the last entry of a segment about to
// be trimmed (close): a parked index is not mapped for it; trim stores it
// with the other pending entries through a descriptor.
func (ti *timeIndex) maybeAppendFinal(ts, offset int64) error {
	return ti.maybeAppendWith(ts, offset, true)
}

func (ti *timeIndex) maybeAppendWith(ts, offset int64, final bool) error {
	if ts <= ti.lastTs || ti.full() {
		return nil
	}
	e := ti.scratch[:timeIndexEntrySize]
	binary.BigEndian.PutUint64(e, uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(int32(offset-ti.baseOffset)))
	if err := ti.append(e, !final); err != nil {
		return err
	}
	ti.lastTs = ts
	return nil
}
