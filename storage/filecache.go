package storage

import (
	"container/list"
	"os"
	"sync"
	"time"
)

// Segment log files opened on demand. A broker with 100,000 partitions of a
// few segments each cannot hold a descriptor per segment (RLIMIT_NOFILE),
// and an idle partition should hold none for its sealed segments. So a
// segment's .log is a segFile: the active segment's stays open (appends),
// a sealed segment's is opened on first use and closed again when the
// FileCache, shared by every log of the broker, holds more than its bound
// (strait.log.segment.open.files.max), least recently used first.
//
// A file in use is never closed: every operation pins it for its duration,
// and Read pins the files of the FileSlices it returns until the caller
// calls ReadResult.Release (sendfile needs a descriptor that stays valid,
// and a closed descriptor's number may be reused by another file at once).
// A pinned file is skipped by eviction, so the bound is exceeded, never
// broken, by reads in flight. Without a FileCache (Options.FileCache nil)
// every segment keeps its descriptor while it exists, as before.
//
// Files whose name changes are kept open from then on (a segment renamed
// *.deleted for removal), or get their new path (a cleaned segment swapped
// in), so a reopen never looks under a stale name.

// FileCache bounds the descriptors of sealed segments' log files.
type FileCache struct {
	max int
	mu  sync.Mutex
	lru list.List // of *segFile: open, evictable; front is the most recently used
}

// NewFileCache returns a cache keeping at most n sealed segments' log
// files open while unpinned (at least 1).
func NewFileCache(n int) *FileCache {
	return &FileCache{max: max(1, n)}
}

// Open is the number of sealed segment log files the cache holds open.
func (c *FileCache) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// segFile is one segment's log file (see above). It implements File.
type segFile struct {
	fs FS

	mu     sync.Mutex
	cache  *FileCache // set when the segment is sealed; nil: never evicted
	path   string
	f      File // nil while closed
	refs   int  // pins
	closed bool // the segment closed it: no reopen
	keep   bool // never evicted (active, renamed, or no cache)

	elem *list.Element // in cache.lru; guarded by cache.mu
}

// newSegFile wraps a segment's open log file, kept open until
// makeEvictable.
func newSegFile(fsys FS, path string, f File) *segFile {
	return &segFile{fs: fsys, path: path, f: f, keep: true}
}

// acquire pins the file open, opening it if needed.
func (sf *segFile) acquire() (File, error) {
	sf.mu.Lock()
	if sf.closed {
		sf.mu.Unlock()
		return nil, os.ErrClosed
	}
	if sf.f == nil {
		f, err := sf.fs.OpenFile(sf.path, os.O_RDWR, 0)
		if err != nil {
			sf.mu.Unlock()
			return nil, err
		}
		sf.f = f
	}
	sf.refs++
	f, keep, cache := sf.f, sf.keep, sf.cache
	sf.mu.Unlock()
	if !keep && cache != nil {
		cache.touch(sf)
	}
	return f, nil
}

// release unpins; the last unpin of a closed segment's file closes it.
func (sf *segFile) release() {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	sf.refs--
	if sf.refs == 0 && sf.closed && sf.f != nil {
		sf.f.Close()
		sf.f = nil
	}
}

// pin returns the open *os.File for a FileSlice, pinned until unpin.
func (sf *segFile) pin() (*os.File, error) {
	f, err := sf.acquire()
	if err != nil {
		return nil, err
	}
	return f.OS(), nil
}

// makeEvictable lets cache close the file while it is not pinned (the
// segment is sealed); a nil cache keeps it open.
func (sf *segFile) makeEvictable(cache *FileCache) {
	if cache == nil {
		return
	}
	sf.mu.Lock()
	if sf.closed {
		sf.mu.Unlock()
		return
	}
	sf.cache, sf.keep = cache, false
	open := sf.f != nil
	sf.mu.Unlock()
	if open {
		cache.touch(sf)
	}
}

// kept reports whether the cache may not close the file.
func (sf *segFile) kept() bool {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.keep
}

// keepOpen opens the file if the cache closed it and keeps it open from
// then on (a segment active again after a truncation, or renamed).
func (sf *segFile) keepOpen() error {
	sf.mu.Lock()
	cache, was := sf.cache, sf.keep
	sf.mu.Unlock()
	if was || cache == nil {
		return nil
	}
	if _, err := sf.acquire(); err != nil {
		return err
	}
	sf.mu.Lock()
	sf.keep = true
	sf.mu.Unlock()
	cache.remove(sf)
	sf.release()
	return nil
}

// setPath records the file's new name (after a rename).
func (sf *segFile) setPath(path string) {
	sf.mu.Lock()
	sf.path = path
	sf.mu.Unlock()
}

// touch makes sf the most recently used, then closes the least recently
// used unpinned files past the bound.
func (c *FileCache) touch(sf *segFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sf.elem == nil {
		sf.elem = c.lru.PushFront(sf)
	} else {
		c.lru.MoveToFront(sf.elem)
	}
	if c.lru.Len() <= c.max {
		return
	}
	for e := c.lru.Back(); e != nil && c.lru.Len() > c.max; {
		prev := e.Prev()
		victim := e.Value.(*segFile)
		victim.mu.Lock()
		switch {
		case victim.keep: // made kept since it was touched: not the cache's
			c.lru.Remove(e)
			victim.elem = nil
		case victim.refs == 0:
			if victim.f != nil {
				victim.f.Close()
				victim.f = nil
			}
			c.lru.Remove(e)
			victim.elem = nil
		}
		victim.mu.Unlock()
		e = prev
	}
}

// remove takes sf out of the cache (kept open, or closed).
func (c *FileCache) remove(sf *segFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sf.elem != nil {
		c.lru.Remove(sf.elem)
		sf.elem = nil
	}
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

// ReleaseIdleActive lets the FileCache close the active segment's log file
// and unmaps its indexes (they are mapped again by the next append) once
// nothing was appended for idle, so that an idle partition holds no
// descriptor and no mapping at all. The broker calls it from its
// maintenance; without a FileCache it does nothing. It returns when a
// call would release something, were nothing appended meanwhile (false:
// never; released already, or no cache). An empty active segment is
// released without waiting.
func (l *Log) ReleaseIdleActive(now time.Time, idle time.Duration) (time.Time, bool) {
	if l.cache == nil {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
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
