package controller

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// benignEtcdErrors are messages etcd logs at error level that are expected in
// Strait's setup; they are demoted to debug so a healthy start logs nothing.
var benignEtcdErrors = []string{
	// A fresh single member has no term in its backend yet on the first check.
	"failed to update storage version",
}

// slogCore is a zapcore.Core writing to a slog.Logger, so etcd's zap logs end
// up in the broker's log. Only entries at or above min are passed on.
type slogCore struct {
	log   *slog.Logger
	min   zapcore.Level
	attrs []slog.Attr
	// quiet is set while the controller shuts down: etcd reports its closing
	// listeners as errors, which are not.
	quiet *atomic.Bool
}

// newZapLogger returns a zap logger for etcd (server or client) that logs to
// log, dropping entries below min.
func newZapLogger(log *slog.Logger, min zapcore.Level, quiet *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log, min: min, quiet: quiet})
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.min }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	clone := *c
	clone.attrs = append(slices.Clip(c.attrs), fieldsToAttrs(fields)...)
	return &clone
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slogLevel(e.Level)
	if (c.quiet != nil && c.quiet.Load()) || isBenignEtcdError(e.Message) {
		level = min(level, slog.LevelDebug)
	}
	if !c.log.Enabled(context.Background(), level) {
		return nil
	}
	attrs := append(slices.Clip(c.attrs), fieldsToAttrs(fields)...)
	if e.Level >= zapcore.DPanicLevel {
		// zap panics or exits the process after this entry (etcd's
		// lg.Fatal, e.g. on EMFILE): say so, since slog has no such level
		// and the line is the broker's last.
		attrs = append(attrs, slog.String("etcd.level", e.Level.String()))
	}
	c.log.LogAttrs(context.Background(), level, "etcd: "+e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func isBenignEtcdError(msg string) bool {
	for _, m := range benignEtcdErrors {
		if strings.HasPrefix(msg, m) {
			return true
		}
	}
	return false
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

func fieldsToAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	return attrs
}
