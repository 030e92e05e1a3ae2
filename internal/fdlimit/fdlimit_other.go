//go:build !unix

package fdlimit

// Get: no RLIMIT_NOFILE here; 0 means unknown.
func Get() (soft, hard uint64, err error) { return 0, 0, nil }

// Raise has no limit to raise here.
func Raise() (soft, hard uint64, err error) { return 0, 0, nil }

// Exhausted: no descriptor limit to recognise here.
func Exhausted(error) bool { return false }
