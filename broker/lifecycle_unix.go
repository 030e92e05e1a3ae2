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

// raiseFileLimit raises this process's soft RLIMIT_NOFILE to its hard
// limit: every connection, segment and index file and etcd's WAL share
// the descriptors, and the default soft limit (often 1,024) runs out long
// before the hard one. Go's runtime does the same at start on most
// systems; doing it here states it and logs the values the broker runs
// with. It returns the limits after the change.
func raiseFileLimit() (soft, hard uint64, err error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
			return uint64(rl.Cur), uint64(rl.Max), err
		}
		rl = want
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}

// fileLimit is this process's RLIMIT_NOFILE.
func fileLimit() (soft, hard uint64, err error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}
