package storage

import (
	"container/list"
	"errors"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/internal/fdlimit"
)

// Segment log files opened on demand. A broker with 100,000 partitions of a
// few segments each cannot hold a descriptor per segment (RLIMIT_NOFILE),
// nor one per active segment when it writes to all of them at once. So a
// segment's .log is a segFile, and the FileCache, shared by every log of
// the broker, closes files past two bounds (doc.go, "Open files"):
//
//   - cold files (sealed segments', and active segments' once their
//     partition has been idle: Log.ReleaseIdleActive) past the sealed
//     bound (strait.log.segment.open.files.max), least recently used
//     first;
//   - any file, active segments' included, once the cache holds more than
//     the total bound (OpenFilesBound: most of RLIMIT_NOFILE): cold ones
//     first, then the active ones by a clock (second chance: an active
//     file used since the hand last passed it is passed over once), so
//     that the partitions being written keep theirs and a load over more
//     partitions than the bound costs a close and an open per append that
//     finds its file closed, never a failed append.
//
// An active file is not moved in a list on every append (the clock needs
// a bit set under the file's own lock), so appends to different
// partitions do not contend on the cache's lock.
//
// A file in use is never closed: every operation pins it for its duration,
// and Read pins the files of the FileSlices it returns until the caller
// calls ReadResult.Release (sendfile needs a descriptor that stays valid,
// and a closed descriptor's number may be reused by another file at once).
// A pinned file is skipped by eviction, so the bounds are exceeded, never
// broken, by reads in flight. Those pins are the only ones that last (a
// fetch over 100,000 partitions would hold a file each until its response
// is written), so the cache counts the files they hold (held), and
// ReadWithinFileBound declines to hold a file that no other read holds
// once that count reaches the total bound: past it, the files held could
// not be balanced by closing unpinned ones. A file already held by
// another read adds nothing and is never declined. Should an open fail all the same for want of
// descriptors (EMFILE, ENFILE: connections or etcd took them), the cache
// closes some of its unpinned files and the open is tried again. Without a
// FileCache (Options.FileCache nil) every segment keeps its descriptor
// while it exists, as before.
//
// Files whose name changes are kept open from then on (a segment renamed
// *.deleted for removal), or get their new path (a cleaned segment swapped
// in), so a reopen never looks under a stale name.

// FileCache bounds the descriptors of segments' log files.
type FileCache struct {
	max   int // cold files kept open
	total int // files kept open in all

	mu  sync.Mutex
	lru list.List // cold *segFile, open: front is the most recently used
	hot list.List // active *segFile, open: the clock hand starts at the back

	closes atomic.Int64 // files closed by the bounds or for want of descriptors
	// held is the number of files pinned by ReadResults (a file pinned by
	// several counts once): they cannot be closed until released.
	held atomic.Int64
	// over: pinned files kept the cache past a bound at its last eviction;
	// the last unpin of a file then evicts again (trim).
	over atomic.Bool

	// belowBound is closed when the held files drop below the total bound
	// (HeldBelowBound); nil while nothing waits for that. waiting is set
	// while it is not nil, so that a release checks it without freedMu.
	freedMu    sync.Mutex
	belowBound chan struct{}
	waiting    atomic.Bool
}

// closedChan is a channel already closed: what HeldBelowBound returns when
// nothing has to be waited for.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// HeldBelowBound returns a channel closed once the files held by reads are
// below the total bound, when a read declined at it (ReadWithinFileBound)
// may be tried again; already closed when they are, or for a nil cache.
func (c *FileCache) HeldBelowBound() <-chan struct{} {
	if !c.heldFull() {
		return closedChan
	}
	c.freedMu.Lock()
	defer c.freedMu.Unlock()
	if c.belowBound == nil {
		c.belowBound = make(chan struct{})
		c.waiting.Store(true)
	}
	// A release between heldFull above and waiting's store did not see
	// it: look again (the release's decrement and this load are ordered).
	if !c.heldFull() {
		c.wakeLocked()
		return closedChan
	}
	return c.belowBound
}

// heldReleased is called after a read's file is no longer held: it wakes
// HeldBelowBound's waiters once the held files are below the bound.
func (c *FileCache) heldReleased(held int64) {
	if !c.waiting.Load() || held >= int64(c.total) {
		return
	}
	c.freedMu.Lock()
	c.wakeLocked()
	c.freedMu.Unlock()
}

func (c *FileCache) wakeLocked() {
	if c.belowBound != nil {
		close(c.belowBound)
		c.belowBound = nil
		c.waiting.Store(false)
	}
}

// NewFileCache returns a cache keeping at most n cold (sealed or idle)
// segments' log files open while unpinned (at least 1), and at most
// OpenFilesBound of this process's RLIMIT_NOFILE files in all.
func NewFileCache(n int) *FileCache {
	soft, _, _ := fdlimit.Get() // 0 on an error: unknown, no total bound
	return NewFileCacheBounds(n, OpenFilesBound(soft))
}

// NewFileCacheBounds is NewFileCache with the total bound given (at least
// 1; below sealed it bounds the cold files too).
func NewFileCacheBounds(sealed, total int) *FileCache {
	return &FileCache{max: max(1, sealed), total: max(1, total)}
}

// OpenFilesBound is the total bound of a process whose RLIMIT_NOFILE is
// limit: the limit less a quarter of it, or less min(4,096, half of it)
// when that is more, for the descriptors the cache does not hold (client
// and replica connections, the embedded etcd, index files and checkpoints
// opened for a moment). 20,000 gives 15,000: a load over 10,000 partitions
// keeps every active file open. 0 (unknown) or above 2^30 (unlimited): no
// total bound.
func OpenFilesBound(limit uint64) int {
	if limit == 0 || limit > 1<<30 {
		return math.MaxInt
	}
	l := int(limit)
	return max(1, l-max(l/4, min(4096, l/2)))
}

// Bounds are the cache's sealed and total bounds.
func (c *FileCache) Bounds() (sealed, total int) { return c.max, c.total }

// Open is the number of segment log files the cache holds open, active
// and cold (files never evicted, as a segment's renamed for deletion, are
// not counted).
func (c *FileCache) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len() + c.hot.Len()
}

// Held is the number of files pinned by ReadResults not yet released.
func (c *FileCache) Held() int { return int(c.held.Load()) }

// heldFull reports whether the files pinned by ReadResults have reached
// the total bound: an open could then not be balanced by a close. A nil
// cache never is.
func (c *FileCache) heldFull() bool { return c != nil && c.held.Load() >= int64(c.total) }

// Closes is the number of files the cache has closed to keep its bounds
// or to free descriptors.
func (c *FileCache) Closes() int64 { return c.closes.Load() }

// fileClass says which bound may close a segFile.
type fileClass uint8

const (
	classKeep fileClass = iota // never closed by a cache: no cache, being written by the cleaner, or renamed
	classHot                   // an active segment's: past the total bound only
	classCold                  // a sealed or idle active segment's: past either bound
)

// segFile is one segment's log file (see above). It implements File.
type segFile struct {
	fs FS

	mu      sync.Mutex
	cache   *FileCache // nil: never closed by a cache
	path    string
	f       File // nil while closed
	refs    int  // pins
	closed  bool // the segment closed it: no reopen
	class   fileClass
	renamed bool // kept open for good (keepOpen)
	used    bool // hot: used since the clock hand passed it
	// held: pins by ReadResults (part of refs); heldIn is the cache
	// whose held count they are in, while held > 0.
	held   int
	heldIn *FileCache

	// Guarded by cache.mu: the list the file is in, and its element.
	in   *list.List
	elem *list.Element
}

// newSegFile wraps a segment's open log file, kept open until a Log hands
// it to its cache (makeHot, makeEvictable).
func newSegFile(fsys FS, path string, f File) *segFile {
	return &segFile{fs: fsys, path: path, f: f}
}

// errFileBound: a read within the file bound would have had to hold a
// segment file no other read holds while the files held by reads have
// reached the cache's total bound (ReadWithinFileBound).
var errFileBound = errors.New("segment files held by reads are at the descriptor bound")

// acquire pins the file open, opening it if needed.
func (sf *segFile) acquire() (File, error) { return sf.acquireFor(false, false) }

// acquireFor is acquire; held counts the pin as a ReadResult's (released
// with releaseHeld), and withinBound refuses to hold a file no other read
// holds while the cache's held files have reached its total bound
// (errFileBound).
func (sf *segFile) acquireFor(held, withinBound bool) (File, error) {
	for attempt := 0; ; attempt++ {
		sf.mu.Lock()
		if sf.closed {
			sf.mu.Unlock()
			return nil, os.ErrClosed
		}
		// A file no read holds yet would add to the held files; one
		// open but not held could be closed by the cache instead (a
		// read of headers may just have opened it).
		if withinBound && sf.held == 0 && sf.cache.heldFull() {
			sf.mu.Unlock()
			return nil, errFileBound
		}
		opened := false
		if sf.f == nil {
			f, err := sf.fs.OpenFile(sf.path, os.O_RDWR, 0)
			if err != nil {
				cache := sf.cache
				sf.mu.Unlock()
				// Out of descriptors: close some of the cache's and try
				// again, rather than fail an append the cache can serve.
				if cache != nil && attempt < 3 && fdlimit.Exhausted(err) && cache.shed() > 0 {
					continue
				}
				return nil, err
			}
			sf.f, opened = f, true
		}
		sf.refs++
		sf.used = true
		if held {
			sf.held++
			if sf.held == 1 && sf.cache != nil {
				sf.heldIn = sf.cache
				sf.heldIn.held.Add(1)
			}
		}
		f, class, cache := sf.f, sf.class, sf.cache
		sf.mu.Unlock()
		if cache != nil && (opened || class == classCold) {
			cache.place(sf)
		}
		return f, nil
	}
}

// release unpins; the last unpin of a closed segment's file closes it,
// and of a file that kept the cache past a bound lets it evict again.
func (sf *segFile) release() { sf.releaseFor(false) }

// releaseHeld undoes a ReadResult's pin (acquireFor with held).
func (sf *segFile) releaseHeld() { sf.releaseFor(true) }

func (sf *segFile) releaseFor(asHeld bool) {
	var freedIn *FileCache // the cache whose held files this release lowered
	var held int64         // to this many
	sf.mu.Lock()
	sf.refs--
	if asHeld {
		sf.held--
		if sf.held == 0 && sf.heldIn != nil {
			freedIn, held = sf.heldIn, sf.heldIn.held.Add(-1)
			sf.heldIn = nil
		}
	}
	last := sf.refs == 0
	if last && sf.closed && sf.f != nil {
		sf.f.Close()
		sf.f = nil
	}
	cache := sf.cache
	sf.mu.Unlock()
	if freedIn != nil {
		freedIn.heldReleased(held)
	}
	if last && cache != nil && cache.over.Load() {
		cache.trim()
	}
}

// pin returns the open *os.File for a ReadResult's FileSlices, pinned
// until releaseHeld; withinBound: as acquireFor.
func (sf *segFile) pin(withinBound bool) (*os.File, error) {
	f, err := sf.acquireFor(true, withinBound)
	if err != nil {
		return nil, err
	}
	return f.OS(), nil
}

// makeEvictable lets cache close the file past either bound while it is
// not pinned (the segment is sealed, or its partition idle); a nil cache
// keeps it open.
func (sf *segFile) makeEvictable(cache *FileCache) { sf.setClass(cache, classCold) }

// makeHot lets cache close the file past its total bound only (the
// segment takes appends); a nil cache keeps it open.
func (sf *segFile) makeHot(cache *FileCache) { sf.setClass(cache, classHot) }

func (sf *segFile) setClass(cache *FileCache, class fileClass) {
	if cache == nil {
		return
	}
	sf.mu.Lock()
	if sf.closed || sf.renamed || (sf.class == class && sf.cache == cache) {
		sf.mu.Unlock()
		return
	}
	old := sf.cache
	sf.cache, sf.class = cache, class
	sf.mu.Unlock()
	if old != nil && old != cache {
		old.remove(sf)
	}
	cache.place(sf)
}

// reactivate makes the file of a segment taking appends active if it was
// cold: its partition was idle (Log.ReleaseIdleActive), or a truncation
// made a sealed segment the active one again.
func (sf *segFile) reactivate() {
	sf.mu.Lock()
	cold := sf.class == classCold && !sf.closed && !sf.renamed
	cache := sf.cache
	if cold {
		sf.class = classHot
	}
	sf.mu.Unlock()
	if cold {
		cache.place(sf)
	}
}

// kept reports whether the sealed bound may not close the file (it is
// active, kept for good, or has no cache).
func (sf *segFile) kept() bool {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.class != classCold
}

// keepOpen opens the file if the cache closed it and keeps it open from
// then on (a segment renamed for deletion: a reopen would look under its
// old name).
func (sf *segFile) keepOpen() error {
	if _, err := sf.acquire(); err != nil {
		return err
	}
	sf.mu.Lock()
	sf.class, sf.renamed = classKeep, true
	cache := sf.cache
	sf.mu.Unlock()
	if cache != nil {
		cache.remove(sf)
	}
	sf.release()
	return nil
}

// setPath records the file's new name (after a rename).
func (sf *segFile) setPath(path string) {
	sf.mu.Lock()
	sf.path = path
	sf.mu.Unlock()
}

// place puts sf in the list its class and state call for (a cold file at
// the front: the most recently used), then closes files past the bounds.
func (c *FileCache) place(sf *segFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sf.mu.Lock()
	var want *list.List
	if !sf.closed && sf.f != nil && sf.cache == c {
		switch sf.class {
		case classHot:
			want = &c.hot
		case classCold:
			want = &c.lru
		}
	}
	sf.mu.Unlock()
	switch {
	case sf.in != want:
		c.unlinkLocked(sf)
		if want != nil {
			sf.in, sf.elem = want, want.PushFront(sf)
		}
	case want == &c.lru:
		c.lru.MoveToFront(sf.elem)
	}
	c.evictLocked()
}

// unlinkLocked takes sf out of its list.
func (c *FileCache) unlinkLocked(sf *segFile) {
	if sf.in != nil {
		sf.in.Remove(sf.elem)
		sf.in, sf.elem = nil, nil
	}
}

// trim closes files past the bounds (after an unpin).
func (c *FileCache) trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked()
}

// remove takes sf out of the cache (kept open, or closed).
func (c *FileCache) remove(sf *segFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unlinkLocked(sf)
}

// evictLocked closes unpinned files past the bounds: cold ones past the
// sealed bound, then past the total bound cold ones first, then active
// ones.
func (c *FileCache) evictLocked() {
	if over := c.lru.Len() - c.max; over > 0 {
		c.evictFrom(&c.lru, over, false)
	}
	if over := c.lru.Len() + c.hot.Len() - c.total; over > 0 {
		over -= c.evictFrom(&c.lru, over, false)
		if over > 0 {
			c.evictFrom(&c.hot, over, true)
		}
	}
	c.over.Store(c.lru.Len() > c.max || c.lru.Len()+c.hot.Len() > c.total)
}

// evictSlack is how many files an eviction looks at beyond those it is to
// close.
const evictSlack = 64

// evictFrom closes up to n unpinned files of l from its back and returns
// how many it closed. A pinned file (in use), and with clock a file used
// since the hand last passed it (its bit then cleared), is moved to the
// front instead. It looks at n+evictSlack files at most, so that an open
// costs little even while most files are pinned (a fetch over thousands
// of partitions pins a file each): what it leaves past a bound goes at the
// next eviction, or at an unpin (over).
func (c *FileCache) evictFrom(l *list.List, n int, clock bool) int {
	closed := 0
	e := l.Back()
	for steps := min(2*l.Len()+1, n+evictSlack); e != nil && closed < n && steps > 0; steps-- {
		prev := e.Prev()
		victim := e.Value.(*segFile)
		victim.mu.Lock()
		switch {
		case victim.f == nil || victim.closed || victim.cache != c || victim.class == classKeep:
			// Closed or no longer the cache's since it was placed.
			c.unlinkLocked(victim)
		case victim.refs > 0 || (clock && victim.used):
			victim.used = false
			l.MoveToFront(e)
			if prev == nil { // the whole list looked at
				prev = l.Back()
			}
		default:
			victim.f.Close()
			victim.f = nil
			c.unlinkLocked(victim)
			c.closes.Add(1)
			closed++
		}
		victim.mu.Unlock()
		e = prev
	}
	return closed
}

// shed closes unpinned files, cold first, for an open that failed for want
// of descriptors: an eighth of those open, at least 16. It returns how
// many it closed.
func (c *FileCache) shed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := max(16, (c.lru.Len()+c.hot.Len())/8)
	closed := c.evictFrom(&c.lru, n, false)
	if closed < n {
		closed += c.evictFrom(&c.hot, n-closed, false)
	}
	return closed
}

func (sf *segFile) ReadAt(b []byte, off int64) (int, error) {
	f, err := sf.acquire()
	if err != nil {
		return 0, err
	}
	defer sf.release()
	return f.ReadAt(b, off)
}

func (sf *segFile) WriteAt(b []byte, off int64) (int, error) {
	f, err := sf.acquire()
	if err != nil {
		return 0, err
	}
	defer sf.release()
	return f.WriteAt(b, off)
}

func (sf *segFile) Truncate(size int64) error {
	f, err := sf.acquire()
	if err != nil {
		return err
	}
	defer sf.release()
	return f.Truncate(size)
}

// Sync fsyncs the file: fsync acts on the file, not the descriptor, so a
// descriptor opened again covers writes made through one the cache closed.
func (sf *segFile) Sync() error {
	f, err := sf.acquire()
	if err != nil {
		return err
	}
	defer sf.release()
	return f.Sync()
}

func (sf *segFile) Stat() (os.FileInfo, error) {
	f, err := sf.acquire()
	if err != nil {
		return nil, err
	}
	defer sf.release()
	return f.Stat()
}

// OS is the open file, nil when the cache closed it: FileSlices take a
// pinned one (pin) instead.
func (sf *segFile) OS() *os.File {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.f == nil {
		return nil
	}
	return sf.f.OS()
}

// Close closes the file now, or at its last unpin; it is not reopened.
func (sf *segFile) Close() error {
	sf.mu.Lock()
	if sf.closed {
		sf.mu.Unlock()
		return nil
	}
	sf.closed = true
	var err error
	if sf.refs == 0 && sf.f != nil {
		err = sf.f.Close()
		sf.f = nil
	}
	cache := sf.cache
	sf.mu.Unlock()
	if cache != nil {
		cache.remove(sf)
	}
	return err
}

// adoptSegmentFiles hands a freshly opened log's files to its cache: the
// sealed segments' as cold, the active segment's as active.
func (l *Log) adoptSegmentFiles() {
	if l.cache == nil {
		return
	}
	for _, s := range l.segments[:len(l.segments)-1] {
		s.log.makeEvictable(l.cache)
	}
	l.active().log.makeHot(l.cache)
}

// createActiveSegment creates the segment at base that is to take the
// appends (a roll, a truncation of the whole log) and hands its log file
// to the cache as an active one. Should the process be out of
// descriptors, the cache closes some of its files and the creation is
// tried once more.
func (l *Log) createActiveSegment(base int64, cfg *LogConfig, now time.Time) (*segment, error) {
	seg, err := openSegmentFiles(l.fs, l.dir, base, cfg, segmentCreate, true, now)
	if err != nil && l.cache != nil && fdlimit.Exhausted(err) && l.cache.shed() > 0 {
		seg, err = openSegmentFiles(l.fs, l.dir, base, cfg, segmentCreate, true, now)
	}
	if err != nil {
		return nil, err
	}
	seg.log.makeHot(l.cache)
	return seg, nil
}

// ReleaseIdleActive lets the FileCache close the active segment's log file
// under its sealed bound and unmaps its indexes (they are mapped again by
// the next append) once nothing was appended for idle, so that an idle
// partition holds no descriptor and no mapping at all. The broker calls it
// from its maintenance; without a FileCache it does nothing. It returns
// when a call would release something, were nothing appended meanwhile
// (false: never; released already, or no cache). An empty active segment
// is released without waiting.
func (l *Log) ReleaseIdleActive(now time.Time, idle time.Duration) (time.Time, bool) {
	if l.cache == nil {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return time.Time{}, false
	}
	act := l.active()
	if act != l.idleSeg || act.nextOffset != l.idleEnd {
		l.idleSeg, l.idleEnd, l.idleSince = act, act.nextOffset, now
	}
	if !act.log.kept() && !act.offsetIndex.mappedActive() && !act.timeIndex.mappedActive() {
		return time.Time{}, false
	}
	// An empty active segment (a new partition) has nothing to read and
	// goes at once: creating many partitions must not hold a descriptor
	// each for the idle time.
	if now.Sub(l.idleSince) < idle && act.size > 0 {
		return l.idleSince.Add(idle), true
	}
	if act.log.kept() {
		act.log.makeEvictable(l.cache)
	}
	for _, ix := range []*indexFile{act.offsetIndex.indexFile, act.timeIndex.indexFile} {
		if err := ix.park(); err != nil {
			l.logger.Warn("unmapping an idle segment index", "file", ix.path, "err", err)
		}
	}
	return time.Time{}, false
}
