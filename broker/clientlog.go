package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/strait/strait/internal/loglimit"
)

// logLimited logs through l: at most a line a second, with the count of
// lines held back since the last one. Errors a client can cause on every
// request (a malformed batch, an unknown codec id) go through it so that a
// client cannot flood the log.
func (s *Server) logLimited(l *loglimit.Limiter, level slog.Level, msg string, args ...any) {
	if n, ok := l.Allow(time.Now()); ok {
		if n > 0 {
			args = append(args, "suppressed", n)
		}
		s.logger.Log(context.Background(), level, msg, args...)
	}
}
