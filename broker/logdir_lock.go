package broker

// The data directories' lock, as Kafka's LogManager.lockLogDirs: a .lock
// file in each log dir (and in the embedded etcd's data dir) held with an
// exclusive lock (logdir_lock_linux.go says which kind) from Start to the
// end of Close. A second broker on the
// same dir, in this process or another, fails Start at once with Kafka's
// message instead of waiting forever on etcd's bbolt lock; a crashed
// broker's lock goes with its process, so nothing is left to clean up.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// lockFileName is Kafka's LogManager.LockFileName.
const lockFileName = ".lock"

// errDirLocked is what tryLockFile returns when another holder has the lock.
var errDirLocked = errors.New("locked")

// lockDataDirs locks every log dir and, when etcd is embedded, its data
// dir, creating them as needed. On failure it releases what it took and
// returns Kafka's error naming the dir.
func (s *Server) lockDataDirs() error {
	type dir struct {
		path string
		perm os.FileMode
	}
	var dirs []dir
	seen := map[string]bool{}
	add := func(path string, perm os.FileMode) {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if !seen[path] {
			seen[path] = true
			dirs = append(dirs, dir{path, perm})
		}
	}
	for _, d := range s.cfg.Log.Dirs {
		add(d, 0o755)
	}
	if len(s.cfg.Etcd.Endpoints) == 0 && s.cfg.Etcd.DataDir != "" {
		add(s.cfg.Etcd.DataDir, 0o700) // etcd's own mode for its data dir
	}
	var held []*os.File
	for _, d := range dirs {
		f, err := lockDir(d.path, d.perm)
		if err != nil {
			for _, h := range held {
				h.Close()
			}
			return err
		}
		held = append(held, f)
	}
	s.dirLocks = held
	return nil
}

// unlockDataDirs releases the locks lockDataDirs took, if any.
func (s *Server) unlockDataDirs() {
	for _, f := range s.dirLocks {
		f.Close() // closing the descriptor drops its lock
	}
	s.dirLocks = nil
}

// lockDir takes the lock of dir, creating dir with perm if it is missing.
func lockDir(dir string, perm os.FileMode) (*os.File, error) {
	if err := os.MkdirAll(dir, perm); err != nil {
		return nil, fmt.Errorf("broker: creating data directory %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("broker: opening lock file in %s: %w", dir, err)
	}
	if err := tryLockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errDirLocked) {
			return nil, fmt.Errorf("Failed to acquire lock on file %s in %s. A Kafka instance in another process or thread is using this directory.", lockFileName, dir)
		}
		return nil, fmt.Errorf("broker: locking %s: %w", f.Name(), err)
	}
	return f, nil
}
