package storage

import "errors"

// fsSyncer is the optional interface of an FS that can make every write to
// a whole filesystem durable in one call (syncfs(2) on Linux). A shutdown
// of many logs uses it instead of fsyncing each log's files
// (Log.CloseUnsynced).
type fsSyncer interface {
	// SyncFS makes every write, truncation and directory change to the
	// filesystem holding path durable, errors.ErrUnsupported where it
	// cannot.
	SyncFS(path string) error
}

// SyncFS makes every write to the filesystem holding path durable, as one
// fsync of each file and directory written there would. supported is false
// when fsys cannot (then nothing was done).
func SyncFS(fsys FS, path string) (supported bool, err error) {
	s, ok := fsys.(fsSyncer)
	if !ok {
		return false, nil
	}
	err = s.SyncFS(path)
	if errors.Is(err, errors.ErrUnsupported) {
		return false, nil
	}
	return true, err
}

// CanSyncFS reports whether fsys offers SyncFS.
func CanSyncFS(fsys FS) bool {
	s, ok := fsys.(fsSyncer)
	if !ok {
		return false
	}
	if c, ok := s.(interface{ canSyncFS() bool }); ok {
		return c.canSyncFS()
	}
	return true
}
