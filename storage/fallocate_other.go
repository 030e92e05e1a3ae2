//go:build !linux

package storage

import "os"

// reserveBlocks: no fallocate outside Linux (Darwin's F_PREALLOCATE and
// BSD's posix_fallocate are not wired up), so preallocated index files
// stay sparse there, as Kafka's are everywhere.
func reserveBlocks(*os.File, int64, int64) (supported bool, err error) { return false, nil }
