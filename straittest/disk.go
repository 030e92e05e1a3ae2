package straittest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strait/strait/storage"
)

// Disk is the filesystem one broker's partition logs are written through
// (WithFaultyDisks), with faults a test arms and disarms while the broker
// runs: a full disk (writes fail with ENOSPC), writes failing with EIO,
// failing fsyncs, and latency added to each write and each fsync. It counts
// the writes and fsyncs it saw and how many of them it delayed, so a test
// can assert that the latency was applied without measuring time.
//
// The broker's etcd data is not on it: only the partition logs (log.dirs)
// go through storage.FS. Index files are read and written with pread and
// pwrite rather than mapped, so that every write passes the Disk.
//
// With WithPowerLossDisks a storage.StrictFS sits under the faults, so what
// a failed write or fsync did not store is not durable either, and
// Cluster.PowerLoss can drop what was never fsynced.
type Disk struct {
	fault  *storage.FaultFS
	slow   *slowFS
	strict *storage.StrictFS // nil without WithPowerLossDisks
}

func newDisk(powerLoss bool) *Disk {
	var base storage.FS = storage.OSFS{}
	var strict *storage.StrictFS
	if powerLoss {
		strict = storage.NewStrictFS(nil)
		base = strict
	}
	s := &slowFS{inner: base}
	return &Disk{fault: storage.NewFaultFS(s), slow: s, strict: strict}
}

// FS is the storage.FS to give a broker (config.Config.StorageFS).
func (d *Disk) FS() storage.FS { return d.fault }

// Fill makes the disk full: every write from now on fails with ENOSPC, as
// storage.FaultFS's write budget of 0 does. Heal empties it again.
func (d *Disk) Fill() { d.fault.SetWriteBudget(0) }

// SetWriteBudget lets writes store n more bytes before the disk is full; the
// write crossing the budget stores its first part. n < 0: unlimited.
func (d *Disk) SetWriteBudget(n int64) { d.fault.SetWriteBudget(n) }

// FailWrites makes every write fail with EIO (or succeed again).
func (d *Disk) FailWrites(fail bool) { d.slow.failWrites.Store(fail) }

// FailSyncs makes every fsync (of a file or a directory) fail.
func (d *Disk) FailSyncs(fail bool) { d.fault.FailSyncs(fail) }

// SetLatency delays every write by write and every fsync by sync from now on
// (0: no delay): a slow disk.
func (d *Disk) SetLatency(write, sync time.Duration) {
	d.slow.writeDelay.Store(int64(write))
	d.slow.syncDelay.Store(int64(sync))
}

// FailDir makes one directory (a log dir, say) and everything under it fail
// with EIO: stat, open, reads and writes of files opened before, fsyncs,
// renames, as a disk that died under a JBOD broker's log dir. Heal does not
// undo it.
func (d *Disk) FailDir(dir string) {
	d.slow.failedMu.Lock()
	d.slow.failedDirs = append(d.slow.failedDirs, filepath.Clean(dir))
	d.slow.failedMu.Unlock()
}

// Heal disarms every fault and the latency.
func (d *Disk) Heal() {
	d.fault.SetWriteBudget(-1)
	d.fault.FailSyncs(false)
	d.slow.failWrites.Store(false)
	d.SetLatency(0, 0)
}

// DiskStats counts what went through a Disk since it was made.
type DiskStats struct {
	Writes        int64 // writes that reached the disk (stored, failed or not)
	DelayedWrites int64 // of them, writes the write latency was applied to
	FailedWrites  int64 // writes FailWrites refused
	Syncs         int64 // file and directory fsyncs that reached the disk
	DelayedSyncs  int64 // of them, fsyncs the fsync latency was applied to
}

// Stats returns the counts so far.
func (d *Disk) Stats() DiskStats {
	s := d.slow
	return DiskStats{
		Writes:        s.writes.Load(),
		DelayedWrites: s.delayedWrites.Load(),
		FailedWrites:  s.failedWrites.Load(),
		Syncs:         s.syncs.Load(),
		DelayedSyncs:  s.delayedSyncs.Load(),
	}
}

// slowFS sits under storage.FaultFS (which owns the full disk and the fsync
// failures) and adds what FaultFS lacks: latency, EIO on writes, counts.
// Writes and fsyncs refused by FaultFS above never reach it.
type slowFS struct {
	inner storage.FS

	writeDelay, syncDelay atomic.Int64 // time.Duration
	failWrites            atomic.Bool
	writes, delayedWrites atomic.Int64
	failedWrites          atomic.Int64
	syncs, delayedSyncs   atomic.Int64

	failedMu   sync.Mutex
	failedDirs []string // FailDir
}

// failed returns EIO for an operation on path if it is in a failed dir.
func (s *slowFS) failed(op, path string) error {
	s.failedMu.Lock()
	defer s.failedMu.Unlock()
	path = filepath.Clean(path)
	for _, d := range s.failedDirs {
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return &os.PathError{Op: op, Path: path, Err: syscall.EIO}
		}
	}
	return nil
}

func (s *slowFS) write() error {
	s.writes.Add(1)
	if s.failWrites.Load() {
		s.failedWrites.Add(1)
		return &os.PathError{Op: "write", Err: syscall.EIO}
	}
	if d := time.Duration(s.writeDelay.Load()); d > 0 {
		s.delayedWrites.Add(1)
		time.Sleep(d)
	}
	return nil
}

func (s *slowFS) sync() {
	s.syncs.Add(1)
	if d := time.Duration(s.syncDelay.Load()); d > 0 {
		s.delayedSyncs.Add(1)
		time.Sleep(d)
	}
}

func (s *slowFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if err := s.failed("open", name); err != nil {
		return nil, err
	}
	f, err := s.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &slowFile{File: f, fs: s, name: name}, nil
}

func (s *slowFS) MkdirAll(path string, perm os.FileMode) error {
	if err := s.failed("mkdir", path); err != nil {
		return err
	}
	return s.inner.MkdirAll(path, perm)
}

func (s *slowFS) ReadDir(name string) ([]os.DirEntry, error) {
	if err := s.failed("readdir", name); err != nil {
		return nil, err
	}
	return s.inner.ReadDir(name)
}

func (s *slowFS) Stat(name string) (os.FileInfo, error) {
	if err := s.failed("stat", name); err != nil {
		return nil, err
	}
	return s.inner.Stat(name)
}

func (s *slowFS) Remove(name string) error {
	if err := s.failed("remove", name); err != nil {
		return err
	}
	return s.inner.Remove(name)
}

func (s *slowFS) RemoveAll(path string) error {
	if err := s.failed("remove", path); err != nil {
		return err
	}
	return s.inner.RemoveAll(path)
}

func (s *slowFS) Rename(oldpath, newpath string) error {
	if err := errors.Join(s.failed("rename", oldpath), s.failed("rename", newpath)); err != nil {
		return err
	}
	return s.inner.Rename(oldpath, newpath)
}

func (s *slowFS) SyncDir(path string) error {
	if err := s.failed("sync", path); err != nil {
		return err
	}
	s.sync()
	return s.inner.SyncDir(path)
}

type slowFile struct {
	storage.File
	fs   *slowFS
	name string
}

func (f *slowFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.failed("write", f.name); err != nil {
		return 0, err
	}
	if err := f.fs.write(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *slowFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.failed("read", f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *slowFile) Sync() error {
	if err := f.fs.failed("sync", f.name); err != nil {
		return err
	}
	f.fs.sync()
	return f.File.Sync()
}
