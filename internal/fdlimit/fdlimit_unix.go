//go:build unix

package fdlimit

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Get returns this process's RLIMIT_NOFILE.
func Get() (soft, hard uint64, err error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}

// Raise raises the soft limit to the hard limit: the default soft limit
// (often 1,024) runs out long before the hard one. Go's runtime does the
// same at start on most systems; doing it here states it. It returns the
// limits after the change.
func Raise() (soft, hard uint64, err error) {
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

// Exhausted reports whether err is the process (EMFILE) or the system
// (ENFILE) out of file descriptors.
func Exhausted(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)
}
