package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strait/strait/internal/clock"
)

// writeClockFile writes the clock file whole (a temporary file renamed),
// as a harness should.
func writeClockFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A file's offset, a missing file, an empty one, a malformed one (logged
// once, ignored), read one poll at a time.
func TestTestClockPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	var logs syncBuffer
	tc := newTestClock(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if tc.clk.Offset() != 0 {
		t.Fatalf("no file: offset %v", tc.clk.Offset())
	}
	for _, step := range []struct {
		content string
		want    time.Duration
	}{
		{"+90s\n", 90 * time.Second},
		{"", 90 * time.Second}, // being written: unchanged
		{"-30s", -30 * time.Second},
		{"soon", -30 * time.Second},
		{"soon", -30 * time.Second},
		{"soon", -30 * time.Second},
		{strings.Repeat("1", 100), -30 * time.Second},
		{" 1h2m ", time.Hour + 2*time.Minute},
		{"0s", 0},
	} {
		writeClockFile(t, path, step.content)
		tc.poll()
		if got := tc.clk.Offset(); got != step.want {
			t.Fatalf("after %q: offset %v, want %v", step.content, got, step.want)
		}
	}
	// "soon" three times in a row, then the long value: two lines.
	if n := strings.Count(logs.String(), "ignoring the test clock file"); n != 2 {
		t.Errorf("%d lines about malformed values, want 2:\n%s", n, logs.String())
	}
	writeClockFile(t, path, "5m")
	tc.poll()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	tc.poll()
	if got := tc.clk.Offset(); got != 0 {
		t.Fatalf("file removed: offset %v, want 0", got)
	}
}

// strait --test-clock-file gives the brokers a clock that follows the
// file while it serves.
func TestRunTestClockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	writeClockFile(t, path, "+1h")
	srv := newFake()
	useFake(t, srv)
	var stderr syncBuffer
	signals := make(chan os.Signal, 1)
	code := runAsync([]string{"--test-clock-file", path}, nil, &stderr, signals)
	waitFor(t, "ready line", func() bool { return strings.Contains(stderr.String(), "strait ready") })
	clk, ok := srv.cfg.Clock.(*clock.Offset)
	if !ok {
		t.Fatalf("broker clock %T, want *clock.Offset", srv.cfg.Clock)
	}
	if d := time.Until(clk.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("broker clock %v ahead, want 1h (read before the broker starts)", d)
	}
	writeClockFile(t, path, "-30s")
	waitFor(t, "the clock to follow the file", func() bool { return clk.Offset() == -30*time.Second })
	signals <- syscall.SIGTERM
	if c := <-code; c != 0 {
		t.Fatalf("exit %d:\n%s", c, stderr.String())
	}

	// Without the flag the broker reads the system clock (nil).
	srv = newFake()
	useFake(t, srv)
	code = runAsync(nil, nil, &stderr, signals)
	waitFor(t, "second ready line", func() bool { return strings.Count(stderr.String(), "strait ready") == 2 })
	signals <- syscall.SIGTERM
	if c := <-code; c != 0 {
		t.Fatalf("exit %d", c)
	}
	if srv.cfg.Clock != nil {
		t.Fatalf("clock %T without --test-clock-file", srv.cfg.Clock)
	}
}
