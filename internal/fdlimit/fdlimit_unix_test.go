//go:build unix

package fdlimit

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRaise: a soft RLIMIT_NOFILE below the hard one is raised to
// it.
func TestRaise(t *testing.T) {
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
	soft, hard, err := Raise()
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

// TestExhausted: EMFILE and ENFILE, wrapped as os.OpenFile wraps them,
// are exhaustion; another error is not.
func TestExhausted(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "open", Path: "f", Err: unix.EMFILE}, true},
		{&os.PathError{Op: "open", Path: "f", Err: unix.ENFILE}, true},
		{&os.PathError{Op: "open", Path: "f", Err: unix.ENOENT}, false},
		{nil, false},
	} {
		if got := Exhausted(tc.err); got != tc.want {
			t.Errorf("Exhausted(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
