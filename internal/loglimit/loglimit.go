// Package loglimit keeps lines that can repeat on every request from
// flooding the log: errors a client causes (a malformed batch, a refused
// connection) and errors with a cause shared by every partition (a full
// disk, the process out of descriptors: one line each once wrote 1.6
// million lines in 20 s, filling the disk the broker needs). A limiter
// lets its first line through, then at most one a second, and reports how
// many it held back since the last one, for a "suppressed" attribute.
package loglimit

import (
	"sync"
	"time"
)

// Interval is how often a limiter lets a line through.
const Interval = time.Second

// Limiter lets one line per Interval through. The zero value is ready.
type Limiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Allow reports whether a line goes through at now, and how many were
// held back since the last one that did.
func (l *Limiter) Allow(now time.Time) (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < Interval {
		l.suppressed++
		return 0, false
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return n, true
}

// ByMessage is a Limiter per message, for lines logged from many places
// with a few constant messages (one message does not hold back another).
// The zero value is ready.
type ByMessage struct {
	mu sync.Mutex
	m  map[string]*Limiter
}

// Allow is Limiter.Allow for msg's limiter.
func (b *ByMessage) Allow(msg string, now time.Time) (suppressed int, ok bool) {
	b.mu.Lock()
	l := b.m[msg]
	if l == nil {
		if b.m == nil {
			b.m = map[string]*Limiter{}
		}
		l = &Limiter{}
		b.m[msg] = l
	}
	b.mu.Unlock()
	return l.Allow(now)
}
