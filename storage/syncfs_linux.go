package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS is syncfs(2) on the filesystem holding path: since Linux 5.8 it
// reports writeback errors of that filesystem as fsync does.
func (OSFS) SyncFS(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

func (OSFS) canSyncFS() bool { return true }
