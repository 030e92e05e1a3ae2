package broker

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// tryLockFile takes an exclusive lock on the whole of f without waiting:
// errDirLocked if another holder has it. It is an open-file-description
// lock (F_OFD_SETLK): it conflicts with the POSIX record lock that Java's
// FileChannel.tryLock (Kafka's FileLock) takes on Linux, so Strait and a
// Kafka broker exclude each other from one dir, and unlike a POSIX lock it
// also conflicts with a second open of the file in this process (two
// brokers of one test binary). Closing f releases it.
func tryLockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return errDirLocked
		}
		return err
	}
}
