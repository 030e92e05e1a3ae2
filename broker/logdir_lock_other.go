//go:build !unix

package broker

import "os"

// tryLockFile cannot lock without flock(2): the dir is taken as free.
func tryLockFile(*os.File) error { return nil }
