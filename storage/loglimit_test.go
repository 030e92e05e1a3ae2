package storage

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestErrorLinesLimited: a failing append on many logs at once logs its
// first line, then at most one a second per message (internal/loglimit).
func TestErrorLinesLimited(t *testing.T) {
	var buf bytes.Buffer
	l := &Log{logger: slog.New(slog.NewTextHandler(&buf, nil)), dir: "d"}
	msg := "test line " + t.Name()
	for range 100 {
		l.errorLimited(msg, "dir", l.dir)
	}
	if n := strings.Count(buf.String(), msg); n != 1 {
		t.Fatalf("%d lines of 100 within a second went through, want 1:\n%s", n, buf.String())
	}
}
