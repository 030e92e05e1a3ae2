//go:build !unix

package broker

// dirWritable cannot check without access(2): the dir is taken as writable.
func dirWritable(string) error { return nil }

// raiseFileLimit has no RLIMIT_NOFILE to raise here.
func raiseFileLimit() (soft, hard uint64, err error) { return 0, 0, nil }

// fileLimit is unknown here: no descriptor reserve.
func fileLimit() (soft, hard uint64, err error) { return 0, 0, nil }
