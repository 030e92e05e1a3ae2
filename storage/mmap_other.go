//go:build !unix

package storage

import (
	"errors"
	"os"
)

// Without mmap every index keeps its file open and reads it with pread
// (the path FaultFS files take everywhere; see index.go).

const mmapSupported = false

var errNoMmap = errors.New("mmap not supported on this system")

func mmapFile(*os.File, int, bool) ([]byte, error) { return nil, errNoMmap }
func munmap([]byte) error                          { return errNoMmap }

var msync = func([]byte) error { return errNoMmap }
