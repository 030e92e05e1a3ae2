//go:build unix

package broker

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirWritable reports why this process cannot create files in dir (no
// permission, a read-only file system), nil if it can.
func dirWritable(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return &os.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
