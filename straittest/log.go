package straittest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// testLog is where the brokers of one Cluster log: t.Log, which prints only
// when the test fails or runs with -v. Goroutines of a broker may still log
// while its Close returns (etcd's last lines), and t.Log after the test has
// ended panics, so the sink is shut when the cluster's cleanup ends and
// lines after that are dropped.
type testLog struct {
	mu     sync.RWMutex
	tb     testing.TB
	closed bool
}

func (l *testLog) write(line string) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.closed {
		l.tb.Log(line)
	}
}

func (l *testLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// tbHandler is a slog.Handler that formats a record as slog's text handler
// does (without the time: t.Log lines are short) and writes it to a testLog.
type tbHandler struct {
	sink  *testLog
	level slog.Leveler
	// text formats into buf under mu; WithAttrs/WithGroup derive new text
	// handlers that share mu and buf.
	mu   *sync.Mutex
	buf  *bytes.Buffer
	text slog.Handler
}

func newTBHandler(sink *testLog, level slog.Leveler) *tbHandler {
	buf := new(bytes.Buffer)
	return &tbHandler{
		sink:  sink,
		level: level,
		mu:    new(sync.Mutex),
		buf:   buf,
		text: slog.NewTextHandler(buf, &slog.HandlerOptions{
			Level: slog.LevelDebug - 8, // the level is checked in Enabled
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) == 0 && a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			},
		}),
	}
}

func (h *tbHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *tbHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.buf.Reset()
	err := h.text.Handle(ctx, r)
	line := strings.TrimSuffix(h.buf.String(), "\n")
	h.mu.Unlock()
	if err != nil {
		return err
	}
	h.sink.write(line)
	return nil
}

func (h *tbHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.text = h.text.WithAttrs(attrs)
	return &c
}

func (h *tbHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.text = h.text.WithGroup(name)
	return &c
}

// fanout sends a record to every handler that enables its level.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (f fanout) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}
