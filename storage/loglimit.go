package storage

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Error lines that can repeat for every partition on every request go
// through errorLines: a cause shared by all the logs (a full disk, the
// process out of descriptors) fails every append at once, and a line each
// once wrote 1.6 million lines in 20 s, filling the disk the broker needs.
// The first line of a message goes through, then at most one a second per
// message across the broker's logs, with the number held back since the
// last one (suppressed).
var errorLines = lineLimiter{interval: time.Second}

// lineLimiter lets one line per message and interval through.
type lineLimiter struct {
	interval time.Duration

	mu    sync.Mutex
	lines map[string]*limitedLine // keyed by message: a few constants
}

type limitedLine struct {
	last time.Time
	held int
}

// allow reports whether a line of msg goes through at now, and how many
// were held back since the last one that did.
func (ll *lineLimiter) allow(msg string, now time.Time) (held int, ok bool) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if ll.lines == nil {
		ll.lines = map[string]*limitedLine{}
	}
	l := ll.lines[msg]
	if l == nil {
		l = &limitedLine{}
		ll.lines[msg] = l
	} else if now.Sub(l.last) < ll.interval {
		l.held++
		return 0, false
	}
	held, l.held, l.last = l.held, 0, now
	return held, true
}

// logLimited logs msg at level through the log's logger unless a line of
// msg went through less than a second ago (errorLines).
func (l *Log) logLimited(level slog.Level, msg string, args ...any) {
	held, ok := errorLines.allow(msg, time.Now())
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "suppressed", held)
	}
	l.logger.Log(context.Background(), level, msg, args...)
}

func (l *Log) errorLimited(msg string, args ...any) { l.logLimited(slog.LevelError, msg, args...) }

func (l *Log) warnLimited(msg string, args ...any) { l.logLimited(slog.LevelWarn, msg, args...) }
