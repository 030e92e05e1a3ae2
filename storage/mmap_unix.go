//go:build unix

package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// The system calls behind index mappings (see index.go). Mapping goes
// through the File (mappable in fs.go), where FaultFS.FailMmaps fails it;
// msync is a variable so that tests can fail it too.

const mmapSupported = true

// mmapFile maps the first size bytes of f, shared (stores reach the file).
// A writable (active index) mapping is MADV_RANDOM: without it the first
// store into a page faults in a read-around of read_ahead_kb (8 MiB on
// some disks) of zero pages of the preallocated file, milliseconds of CPU
// and megabytes of page cache per index, which at 10,000 partitions evict
// one another and turn every index append into a major fault. A sealed
// index keeps the default: its first search reads around its (trimmed)
// file, which the next searches then find cached.
func mmapFile(f *os.File, size int, writable bool) ([]byte, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, prot, unix.MAP_SHARED)
	if err != nil || !writable {
		return b, err
	}
	if err := unix.Madvise(b, unix.MADV_RANDOM); err != nil {
		_ = unix.Munmap(b)
		return nil, err
	}
	return b, nil
}

func munmap(b []byte) error { return unix.Munmap(b) }

// msync writes b's dirty pages back and waits (MS_SYNC); b must start on a
// page boundary.
var msync = func(b []byte) error { return unix.Msync(b, unix.MS_SYNC) }
