package storage

import (
	"context"
	"log/slog"
	"time"

	"github.com/strait/strait/internal/loglimit"
)

// Error lines that can repeat for every partition on every request go
// through errorLines: a cause shared by all the logs (a full disk, the
// process out of descriptors) fails every append at once. One limiter per
// message across the broker's logs.
var errorLines loglimit.ByMessage

// logLimited logs msg at level through the log's logger unless a line of
// msg went through less than a second ago (errorLines).
func (l *Log) logLimited(level slog.Level, msg string, args ...any) {
	held, ok := errorLines.Allow(msg, time.Now())
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
