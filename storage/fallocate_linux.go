package storage

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fallocate reserves the blocks of [off, off+n) of f (mode 0: the file
// grows if the range ends past it). A variable so that tests can make it
// fail as a full disk would.
var fallocate = func(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}

// reserveBlocks reserves the blocks of [off, off+n) of f. supported is
// false, with no error, on a filesystem without fallocate: the range then
// stays sparse.
func reserveBlocks(f *os.File, off, n int64) (supported bool, err error) {
	err = fallocate(f, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return false, nil
	}
	return true, err
}
