// Package clock owns the time the broker reads: Kafka's Time. The broker and
// the components it builds (logs, replication, the coordinators, the
// controller's token math, SASL sessions, fetch sessions) read the wall
// clock through a Clock instead of time.Now, so that a test can jump one
// broker's clock forward or back as an NTP step or a skewed host would.
//
// A Clock answers Kafka's time.milliseconds(): the wall clock. What Kafka
// times with it (record timestamps, retention.ms, segment.ms, session and
// transaction timeouts, ISR lag, producer-id and token expiry) moves with a
// jump, as in Kafka. Schedulers and pure latency measurements keep reading
// time.Now: Kafka's scheduler runs on the monotonic clock too.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock is the broker's source of the current time.
type Clock interface {
	// Now is the current wall-clock time.
	Now() time.Time
}

// System is the operating system's clock.
type System struct{}

// Now is time.Now.
func (System) Now() time.Time { return time.Now() }

// Or returns c, or the system clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return System{}
	}
	return c
}

// Offset is the system clock plus an offset that Jump and Set move at any
// time, from any goroutine. Its readings keep the monotonic reading, moved
// by the same offset, so that the difference of two readings taken across a
// jump includes the jump, as two reads of a stepped wall clock would. The
// zero value reads the system time.
type Offset struct {
	off atomic.Int64 // nanoseconds
}

// NewOffset returns an Offset clock at the system time.
func NewOffset() *Offset { return new(Offset) }

// Now is the system time plus the offset.
func (o *Offset) Now() time.Time { return time.Now().Add(time.Duration(o.off.Load())) }

// Jump moves the clock by d (back when d is negative) and returns the new
// offset.
func (o *Offset) Jump(d time.Duration) time.Duration {
	return time.Duration(o.off.Add(int64(d)))
}

// Set puts the clock at offset d from the system time (0: back in step).
func (o *Offset) Set(d time.Duration) { o.off.Store(int64(d)) }

// Offset is the clock's current offset from the system time.
func (o *Offset) Offset() time.Duration { return time.Duration(o.off.Load()) }
