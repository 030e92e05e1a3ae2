package loglimit

import (
	"testing"
	"time"
)

var epoch = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)

// TestLimiter: the first line goes through, the rest of the second is held
// back, and the next line a second later carries the count.
func TestLimiter(t *testing.T) {
	var l Limiter
	if n, ok := l.Allow(epoch); !ok || n != 0 {
		t.Fatalf("first line: %v, %d; want through with 0", ok, n)
	}
	for i := range 1000 {
		if _, ok := l.Allow(epoch.Add(time.Duration(i) * time.Millisecond / 2)); ok {
			t.Fatalf("line %d within the second went through", i)
		}
	}
	if n, ok := l.Allow(epoch.Add(Interval)); !ok || n != 1000 {
		t.Fatalf("a second later: %v, %d held back; want through with 1000", ok, n)
	}
	if n, ok := l.Allow(epoch.Add(Interval + time.Millisecond)); ok || n != 0 {
		t.Fatalf("right after: %v, %d; want held back", ok, n)
	}
}

// TestByMessage: one message does not hold back another.
func TestByMessage(t *testing.T) {
	var b ByMessage
	if _, ok := b.Allow("append failed", epoch); !ok {
		t.Fatal("the first line was held back")
	}
	if _, ok := b.Allow("append failed", epoch); ok {
		t.Fatal("the second line of a message within the second went through")
	}
	if _, ok := b.Allow("marker append failed", epoch); !ok {
		t.Fatal("another message was held back")
	}
	if n, ok := b.Allow("append failed", epoch.Add(Interval)); !ok || n != 1 {
		t.Fatalf("a second later: %v, %d; want through with 1", ok, n)
	}
}
