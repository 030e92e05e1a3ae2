package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// An etcd entry that ends the process says so: slog has no fatal level,
// and without the mark the broker's last line reads as an ordinary error.
func TestZapLoggerMarksFatalEntries(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	core := &slogCore{log: log, min: zapcore.WarnLevel}
	entries := []zapcore.Entry{
		{Level: zapcore.ErrorLevel, Message: "ordinary"},
		{Level: zapcore.FatalLevel, Message: "failed to purge snap db file"},
	}
	for _, e := range entries {
		if err := core.Write(e, nil); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	if strings.Contains(lines[0], "etcd.level") {
		t.Errorf("an error entry is marked: %s", lines[0])
	}
	if !strings.Contains(lines[1], `msg="etcd: failed to purge snap db file"`) || !strings.Contains(lines[1], "etcd.level=fatal") {
		t.Errorf("the fatal entry is not marked: %s", lines[1])
	}
}
