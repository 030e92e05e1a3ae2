//go:build unix

package broker

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestRaiseFileLimit: a soft RLIMIT_NOFILE below the hard one is raised to
// it.
func TestRaiseFileLimit(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < 64 {
		t.Fatalf("hard RLIMIT_NOFILE %d: too low to test", rl.Max)
	}
	low := rl
	low.Cur = rl.Max / 2
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &rl) })
	soft, hard, err := raiseFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	var now unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &now); err != nil {
		t.Fatal(err)
	}
	if soft != hard || uint64(now.Cur) != uint64(rl.Max) || uint64(now.Max) != uint64(rl.Max) {
		t.Fatalf("after raising: soft %d hard %d (reported %d/%d), want both %d", now.Cur, now.Max, soft, hard, rl.Max)
	}
}
