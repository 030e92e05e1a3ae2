//go:build unix

package storage

import (
	"errors"
	"syscall"
)

// fileLimit is this process's soft RLIMIT_NOFILE, 0 if unknown. The broker
// raises it to the hard limit before it makes its FileCache.
func fileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur)
}

// fdExhausted reports whether err is the process (EMFILE) or the system
// (ENFILE) out of file descriptors.
func fdExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
