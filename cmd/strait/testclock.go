package main

// --test-clock-file: a test harness outside the process steps the brokers'
// wall clock by writing an offset to a file (a Go duration: +90s, -30s,
// 0s), as straittest's JumpClock does inside a Go test.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/strait/strait/internal/clock"
)

// testClockPoll is how often the clock file is read.
const testClockPoll = 100 * time.Millisecond

// testClockMaxBytes bounds what is read of the file: an offset is a few
// bytes.
const testClockMaxBytes = 64

// testClock follows a clock file: the offset of clk is the file's duration,
// 0 while the file is missing; an empty file (one being written) or a
// malformed value leaves the offset as it was, the malformed value logged
// once.
type testClock struct {
	path   string
	clk    *clock.Offset
	logger *slog.Logger
	bad    string // the malformed content last logged
}

// newTestClock reads path once, so that the brokers start on its offset.
func newTestClock(path string, logger *slog.Logger) *testClock {
	tc := &testClock{path: path, clk: clock.NewOffset(), logger: logger}
	tc.poll()
	return tc
}

// run reads the file every testClockPoll until stop is closed.
func (tc *testClock) run(stop <-chan struct{}) {
	t := time.NewTicker(testClockPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			tc.poll()
		}
	}
}

// poll reads the file once and sets the offset.
func (tc *testClock) poll() {
	off, ok, err := readClockOffset(tc.path)
	if err != nil {
		if msg := err.Error(); msg != tc.bad {
			tc.bad = msg
			tc.logger.Warn("ignoring the test clock file", "file", tc.path, "err", err)
		}
		return
	}
	tc.bad = ""
	if ok && off != tc.clk.Offset() {
		tc.clk.Set(off)
		tc.logger.Info("test clock offset", "offset", off.String(), "file", tc.path)
	}
}

// errClockValue is a clock file whose content is not a duration.
var errClockValue = errors.New("want a Go duration such as +90s, -30s or 0s")

// readClockOffset is the duration the file holds: 0 when it does not
// exist; ok false when it is empty (being written: the offset stays).
func readClockOffset(path string) (d time.Duration, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, testClockMaxBytes+1))
	if err != nil {
		return 0, false, err
	}
	if len(b) > testClockMaxBytes {
		return 0, false, errClockValue
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, false, nil
	}
	if d, err = time.ParseDuration(s); err != nil {
		return 0, false, fmt.Errorf("%q: %w", s, errClockValue)
	}
	return d, true, nil
}
