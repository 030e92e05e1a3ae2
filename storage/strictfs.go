package storage

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// StrictFS wraps an FS (the real files stay on it, so fetches still get a
// descriptor for sendfile) and remembers what a power loss would keep, as
// pebble's strict MemFS does. Crash then puts the files back in that state.
//
// The model:
//
//   - A file's durable content is what it held at its last successful
//     Sync (none: empty). Writes and truncations after it are lost.
//   - A directory entry (a file or directory created, renamed in or out,
//     removed) is durable once SyncDir of its parent directory succeeded
//     after the change; until then Crash undoes it. A rename is two
//     entries, one per directory: syncing only the target's parent may
//     leave the file under both names, as on a real filesystem.
//   - A new directory is an entry of its parent like a file: MkdirAll
//     without a SyncDir of the parent is lost with everything under it.
//   - Paths this FS has not seen created (the directory the test made,
//     files written by something else) are durable as they were when first
//     seen. Only names this FS saw are ever removed by Crash, so files
//     beside them that do not go through it are left alone.
//   - No partial outcomes: an unsynced write is lost whole, never torn, and
//     a synced one is kept whole. Both are legal outcomes of a power loss;
//     torn tails are covered by the recovery tests of this package.
//   - Files are not mappable (see mappable in fs.go): storage then writes
//     index entries with pwrite and syncs them with fsync, both observed
//     here. With memory-mapped indexes the durable part would be what the
//     msync or fsync covered, which this FS cannot see; recovery rebuilds
//     the indexes of every segment past the recovery point from the log
//     anyway, as Kafka does after an unclean shutdown.
//
// CutPower starts the loss: from then on writes still reach the files (the
// process keeps running on its page cache) but Sync and SyncDir succeed
// without making anything durable, so a broker killed afterwards cannot
// flush on its way down. Crash drops everything not durable on the inner
// FS, makes the FS usable again and fails every File opened before it.
//
// Durable contents are kept in memory: this FS is for tests. Safe for
// concurrent use.
type StrictFS struct {
	inner FS

	mu      sync.Mutex
	root    *strictNode
	gen     uint64 // Crash increments it; Files of an older generation fail
	powered bool   // false between CutPower and Crash
}

// strictNode is a file or a directory: what a path names, moved by Rename.
type strictNode struct {
	dir bool
	// directories
	cur  map[string]*strictNode // entries now
	dur  map[string]*strictNode // entries a crash keeps
	seen map[string]bool        // names this FS looked up or made here
	// files
	synced    []byte // content a crash keeps
	dirtyFrom int64  // lowest offset changed since the last Sync (MaxInt64: none)
}

// NewStrictFS wraps inner (nil = OSFS).
func NewStrictFS(inner FS) *StrictFS {
	if inner == nil {
		inner = OSFS{}
	}
	return &StrictFS{inner: inner, root: newStrictDir(), powered: true}
}

func newStrictDir() *strictNode {
	return &strictNode{dir: true, cur: map[string]*strictNode{}, dur: map[string]*strictNode{}, seen: map[string]bool{}}
}

// errPowerLost fails the Files opened before a Crash.
var errPowerLost = &os.PathError{Op: "io", Path: "", Err: syscall.EIO}

// split cleans an absolute path into its components.
func splitPath(name string) []string {
	name = filepath.Clean(name)
	if !filepath.IsAbs(name) {
		if abs, err := filepath.Abs(name); err == nil {
			name = abs
		}
	}
	parts := strings.Split(name, string(filepath.Separator))
	return slices.DeleteFunc(parts, func(s string) bool { return s == "" })
}

func joinPath(parts []string) string {
	return string(filepath.Separator) + filepath.Join(parts...)
}

// lookupLocked returns the node of the path's components, nil if there is
// none. A name first seen here that exists on the inner FS is taken as
// durable with its content now. Callers hold mu.
func (s *StrictFS) lookupLocked(parts []string) (*strictNode, error) {
	n := s.root
	for i, name := range parts {
		if !n.dir {
			return nil, nil
		}
		child := n.cur[name]
		if child == nil {
			var err error
			if child, err = s.discoverLocked(joinPath(parts[:i+1])); err != nil || child == nil {
				return nil, err
			}
			if !n.seen[name] {
				n.dur[name] = child
			}
			n.cur[name], n.seen[name] = child, true
		}
		n = child
	}
	return n, nil
}

// discoverLocked makes the node of a path this FS did not make: the
// directory a test created, a file another writer left.
func (s *StrictFS) discoverLocked(path string) (*strictNode, error) {
	fi, err := s.inner.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return newStrictDir(), nil
	}
	f, err := s.inner.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return &strictNode{synced: data, dirtyFrom: math.MaxInt64}, nil
}

// parentLocked returns the directory node holding the last component.
func (s *StrictFS) parentLocked(parts []string) (*strictNode, string, error) {
	if len(parts) == 0 {
		return nil, "", errors.New("strictfs: the root has no parent")
	}
	dir, err := s.lookupLocked(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if dir == nil || !dir.dir {
		return nil, "", &os.PathError{Op: "lookup", Path: joinPath(parts[:len(parts)-1]), Err: os.ErrNotExist}
	}
	return dir, parts[len(parts)-1], nil
}

func (s *StrictFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := splitPath(name)
	dir, base, err := s.parentLocked(parts)
	if err != nil {
		return nil, err
	}
	node, err := s.lookupLocked(parts)
	if err != nil {
		return nil, err
	}
	f, err := s.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if node == nil {
		// Created now: an entry a crash drops until the directory is synced.
		node = &strictNode{dirtyFrom: math.MaxInt64}
		dir.cur[base], dir.seen[base] = node, true
	}
	if flag&os.O_TRUNC != 0 {
		node.dirtyFrom = 0
	}
	return &strictFile{File: f, fs: s, node: node, gen: s.gen}, nil
}

func (s *StrictFS) MkdirAll(path string, perm os.FileMode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := splitPath(path)
	// Look each level up first: those there already are durable (or
	// known), the rest are made now.
	n := s.root
	i := 0
	for ; i < len(parts); i++ {
		child, err := s.lookupLocked(parts[:i+1])
		if err != nil {
			return err
		}
		if child == nil {
			break
		}
		n = child
	}
	if err := s.inner.MkdirAll(path, perm); err != nil {
		return err
	}
	for ; i < len(parts); i++ {
		if !n.dir {
			return &os.PathError{Op: "mkdir", Path: joinPath(parts[:i]), Err: syscall.ENOTDIR}
		}
		child := newStrictDir()
		n.cur[parts[i]], n.seen[parts[i]] = child, true
		n = child
	}
	return nil
}

func (s *StrictFS) ReadDir(name string) ([]os.DirEntry, error) { return s.inner.ReadDir(name) }
func (s *StrictFS) Stat(name string) (os.FileInfo, error)      { return s.inner.Stat(name) }

func (s *StrictFS) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := splitPath(name)
	if _, err := s.lookupLocked(parts); err != nil {
		return err
	}
	if err := s.inner.Remove(name); err != nil {
		return err
	}
	if dir, base, err := s.parentLocked(parts); err == nil {
		delete(dir.cur, base)
	}
	return nil
}

func (s *StrictFS) RemoveAll(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := splitPath(path)
	if _, err := s.lookupLocked(parts); err != nil {
		return err
	}
	if err := s.inner.RemoveAll(path); err != nil {
		return err
	}
	if dir, base, err := s.parentLocked(parts); err == nil {
		delete(dir.cur, base)
	}
	return nil
}

func (s *StrictFS) Rename(oldpath, newpath string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	op, np := splitPath(oldpath), splitPath(newpath)
	node, err := s.lookupLocked(op)
	if err != nil {
		return err
	}
	// Look the target up too, so that one the FS did not know is recorded
	// as durable before it is replaced.
	if _, err := s.lookupLocked(np); err != nil {
		return err
	}
	if err := s.inner.Rename(oldpath, newpath); err != nil {
		return err
	}
	odir, obase, err := s.parentLocked(op)
	if err != nil {
		return err
	}
	ndir, nbase, err := s.parentLocked(np)
	if err != nil {
		return err
	}
	delete(odir.cur, obase)
	if node != nil {
		ndir.cur[nbase], ndir.seen[nbase] = node, true
	}
	return nil
}

// SyncDir makes the entries of path durable as they are now.
func (s *StrictFS) SyncDir(path string) error {
	if err := s.inner.SyncDir(path); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.powered {
		return nil
	}
	dir, err := s.lookupLocked(splitPath(path))
	if err != nil {
		return err
	}
	if dir == nil || !dir.dir {
		return &os.PathError{Op: "fsync", Path: path, Err: os.ErrNotExist}
	}
	dir.dur = maps.Clone(dir.cur)
	return nil
}

// SyncFS makes everything durable, as syncfs(2) of the one filesystem this
// FS models: every directory's entries and every file's content.
func (s *StrictFS) SyncFS(path string) error {
	if _, err := SyncFS(s.inner, path); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.powered {
		return nil
	}
	return s.syncTreeLocked(s.root, nil)
}

func (s *StrictFS) canSyncFS() bool { return true }

// syncTreeLocked makes node n, at the path of parts, and all under it
// durable.
func (s *StrictFS) syncTreeLocked(n *strictNode, parts []string) error {
	if n.dir {
		n.dur = maps.Clone(n.cur)
		for name, c := range n.cur {
			if err := s.syncTreeLocked(c, append(parts[:len(parts):len(parts)], name)); err != nil {
				return err
			}
		}
		return nil
	}
	if n.dirtyFrom == math.MaxInt64 {
		return nil
	}
	f, err := s.inner.OpenFile(joinPath(parts), os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return err
	}
	n.synced, n.dirtyFrom = data, math.MaxInt64
	return nil
}

// CutPower makes every later Sync and SyncDir a no-op that succeeds, until
// Crash: the machine is losing power while the process still runs.
func (s *StrictFS) CutPower() {
	s.mu.Lock()
	s.powered = false
	s.mu.Unlock()
}

// CrashReport says what a Crash dropped.
type CrashReport struct {
	Files   int   // files whose content went back to their last fsync
	Bytes   int64 // bytes those files held past their synced content
	Entries int   // directory entries undone: made, removed or renamed since their directory's last SyncDir
	// EntryBytes is what the files under entries made since their
	// directory's last SyncDir held: gone with the entry, synced or not.
	EntryBytes int64
}

// Crash puts the inner FS back in its durable state: every file this FS
// knows to its last synced content, every entry made since the last SyncDir
// of its directory undone, every entry removed since then back. Files
// opened before it fail from now on (the process died); power is on again.
// The process using the FS must have stopped, or it writes on.
func (s *StrictFS) Crash() (CrashReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.powered = true
	var r CrashReport
	err := s.restoreLocked(nil, s.root, &r)
	return r, err
}

// restoreLocked makes the directory at parts match n.dur on the inner FS,
// depth first, and resets n to it.
func (s *StrictFS) restoreLocked(parts []string, n *strictNode, r *CrashReport) error {
	var errs []error
	names := slices.Sorted(maps.Keys(n.seen))
	for name := range n.dur {
		if !n.seen[name] {
			names = append(names, name)
		}
	}
	for _, name := range names {
		p := append(slices.Clip(parts), name)
		path := joinPath(p)
		child := n.dur[name]
		if child == nil {
			if _, err := s.inner.Stat(path); err == nil {
				r.Entries++
				r.EntryBytes += s.treeSize(path)
			}
			if err := s.inner.RemoveAll(path); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if n.cur[name] != child {
			r.Entries++
		}
		fi, err := s.inner.Stat(path)
		if err == nil && fi.IsDir() != child.dir {
			if err := s.inner.RemoveAll(path); err != nil {
				errs = append(errs, err)
			}
		}
		if child.dir {
			if err := s.inner.MkdirAll(path, 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, s.restoreLocked(p, child, r))
			continue
		}
		// A fresh node per path: a file kept under two names (a rename
		// half made durable) is two files from now on.
		kept := &strictNode{synced: slices.Clone(child.synced), dirtyFrom: math.MaxInt64}
		n.dur[name] = kept
		if now, err := s.readFile(path); err != nil || !bytes.Equal(now, kept.synced) {
			r.Files++
			r.Bytes += max(0, int64(len(now))-int64(len(kept.synced)))
		}
		errs = append(errs, s.writeFile(path, kept.synced))
	}
	n.cur = maps.Clone(n.dur)
	n.seen = map[string]bool{}
	for name := range n.dur {
		n.seen[name] = true
	}
	return errors.Join(errs...)
}

// treeSize is the size of the files at or under path on the inner FS.
func (s *StrictFS) treeSize(path string) int64 {
	fi, err := s.inner.Stat(path)
	if err != nil {
		return 0
	}
	if !fi.IsDir() {
		return fi.Size()
	}
	ents, _ := s.inner.ReadDir(path)
	var n int64
	for _, e := range ents {
		n += s.treeSize(filepath.Join(path, e.Name()))
	}
	return n
}

// readFile reads a file of the inner FS whole (its size is the test's
// own doing, so no bound of its own).
func (s *StrictFS) readFile(path string) ([]byte, error) {
	return readBoundedFile(s.inner, path, math.MaxInt64)
}

func (s *StrictFS) writeFile(path string, data []byte) error {
	f, err := s.inner.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// strictFile is a File of a StrictFS. It is not mappable: see StrictFS.
type strictFile struct {
	File
	fs   *StrictFS
	node *strictNode
	gen  uint64
}

// OS returns the inner descriptor, for sendfile: reads only.
func (f *strictFile) OS() *os.File { return f.File.OS() }

func (f *strictFile) stale() bool {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.gen != f.fs.gen
}

// dirty records that bytes from off on changed. It runs after the change,
// so a Sync either read the new bytes or leaves them dirty.
func (f *strictFile) dirty(off int64) {
	f.fs.mu.Lock()
	if f.gen == f.fs.gen {
		f.node.dirtyFrom = min(f.node.dirtyFrom, off)
	}
	f.fs.mu.Unlock()
}

func (f *strictFile) WriteAt(p []byte, off int64) (int, error) {
	if f.stale() {
		return 0, errPowerLost
	}
	n, err := f.File.WriteAt(p, off)
	f.dirty(off)
	return n, err
}

func (f *strictFile) Truncate(size int64) error {
	if f.stale() {
		return errPowerLost
	}
	err := f.File.Truncate(size)
	f.dirty(size)
	return err
}

func (f *strictFile) ReadAt(p []byte, off int64) (int, error) {
	if f.stale() {
		return 0, errPowerLost
	}
	return f.File.ReadAt(p, off)
}

// Sync makes the content durable: the synced copy takes the bytes changed
// since the last Sync.
func (f *strictFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	s := f.fs
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.gen != s.gen {
		return errPowerLost
	}
	if !s.powered {
		return nil
	}
	fi, err := f.File.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	from := min(f.node.dirtyFrom, size, int64(len(f.node.synced)))
	if from == size && int64(len(f.node.synced)) == size {
		f.node.dirtyFrom = math.MaxInt64
		return nil
	}
	// In place: the synced copy is this node's alone (Crash copies it), and
	// an append-only file then reads only its new bytes.
	data := slices.Grow(f.node.synced[:from], int(size-from))[:size]
	if _, err := f.File.ReadAt(data[from:], from); err != nil && err != io.EOF {
		return err
	}
	f.node.synced, f.node.dirtyFrom = data, math.MaxInt64
	return nil
}
