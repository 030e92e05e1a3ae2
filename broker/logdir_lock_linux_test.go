package broker

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// posixLock takes a traditional POSIX write lock on the whole of f.
func posixLock(t *testing.T, f *os.File) {
	t.Helper()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
}

// TestDirLockExcludesAPosixLock: the lock conflicts with the POSIX record
// lock Java's FileChannel.tryLock takes (Kafka's FileLock), so a Kafka
// broker and Strait do not share a dir, and it is released by Close.
func TestDirLockExcludesAPosixLock(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	posixLock(t, f) // as the JVM does
	if _, err := lockDir(dir, 0o755); err == nil || !strings.HasPrefix(err.Error(), "Failed to acquire lock on file .lock in "+dir+".") {
		t.Fatalf("lockDir over a POSIX lock: %v", err)
	}
	f.Close()
	held, err := lockDir(dir, 0o755)
	if err != nil {
		t.Fatalf("lockDir once the POSIX lock is gone: %v", err)
	}
	if _, err := lockDir(dir, 0o755); err == nil {
		t.Fatal("a second lock of the dir in this process succeeded")
	}
	held.Close()
	again, err := lockDir(dir, 0o755)
	if err != nil {
		t.Fatalf("lockDir after the release: %v", err)
	}
	again.Close()
}
