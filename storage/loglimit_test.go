package storage

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestErrorLinesLimited: a failing append on many logs at once logs its
// first line, then at most one a second per message with the count held
// back since the last; another message is not held back by the first.
func TestErrorLinesLimited(t *testing.T) {
	ll := lineLimiter{interval: time.Second}
	now := testEpoch
	if _, ok := ll.allow("append failed", now); !ok {
		t.Fatal("the first line was held back")
	}
	for i := range 1000 {
		if _, ok := ll.allow("append failed", now.Add(time.Duration(i)*time.Millisecond/2)); ok {
			t.Fatalf("line %d within the second went through", i)
		}
	}
	if _, ok := ll.allow("marker append failed", now); !ok {
		t.Fatal("another message was held back")
	}
	if held, ok := ll.allow("append failed", now.Add(time.Second)); !ok || held != 1000 {
		t.Fatalf("a second later: %v, %d held back; want through with 1000", ok, held)
	}

	// Through a Log: the line carries the count.
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
