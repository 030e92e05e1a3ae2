package clock

import (
	"sync"
	"testing"
	"time"
)

func TestSystemIsTimeNow(t *testing.T) {
	before := time.Now()
	got := System{}.Now()
	after := time.Now()
	if got.Before(before) || got.After(after) {
		t.Fatalf("System.Now() = %v, outside [%v, %v]", got, before, after)
	}
	if _, ok := Or(nil).(System); !ok {
		t.Fatalf("Or(nil) = %T, want System", Or(nil))
	}
	o := NewOffset()
	if Or(o) != Clock(o) {
		t.Fatal("Or(c) did not return c")
	}
}

func TestOffsetJumps(t *testing.T) {
	var o Offset // the zero value reads the system time
	near := func(got time.Time, want time.Duration) {
		t.Helper()
		d := got.Sub(time.Now()) - want
		if d < -time.Second || d > time.Second {
			t.Fatalf("clock is %v off the system time, want %v", got.Sub(time.Now()), want)
		}
		// The wall reading moves too, not only the monotonic one: what is
		// stored or compared as milliseconds (record timestamps) sees it.
		wall := time.UnixMilli(got.UnixMilli()).Sub(time.UnixMilli(time.Now().UnixMilli())) - want
		if wall < -time.Second || wall > time.Second {
			t.Fatalf("wall clock is %v off, want %v", wall+want, want)
		}
	}
	near(o.Now(), 0)
	if got := o.Jump(time.Hour); got != time.Hour {
		t.Fatalf("Jump(1h) = %v, want 1h", got)
	}
	near(o.Now(), time.Hour)
	before := o.Now()
	o.Jump(-90 * time.Minute)
	if o.Offset() != -30*time.Minute {
		t.Fatalf("Offset() = %v, want -30m", o.Offset())
	}
	near(o.Now(), -30*time.Minute)
	// Elapsed time across a jump includes it, as on a stepped wall clock.
	if el := o.Now().Sub(before); el > -89*time.Minute || el < -91*time.Minute {
		t.Fatalf("Since across a -90m jump = %v", el)
	}
	o.Set(0)
	near(o.Now(), 0)
}

func TestOffsetConcurrent(t *testing.T) {
	o := NewOffset()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				o.Jump(time.Second)
				_ = o.Now()
			}
		}()
	}
	wg.Wait()
	if o.Offset() != 4000*time.Second {
		t.Fatalf("Offset() = %v after 4000 jumps of 1s", o.Offset())
	}
}
