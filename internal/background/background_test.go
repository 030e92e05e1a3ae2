package background

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGoAfterCloseRunsNothing(t *testing.T) {
	for _, name := range []string{"Close", "Wait"} {
		t.Run(name, func(t *testing.T) {
			var g Group
			if name == "Close" {
				g.Close()
			} else {
				g.Wait()
			}
			var ran atomic.Bool
			if g.Go(func() { ran.Store(true) }) {
				t.Fatal("Go after " + name + " returned true")
			}
			g.Wait()
			time.Sleep(10 * time.Millisecond)
			if ran.Load() {
				t.Fatal("Go after " + name + " ran its function")
			}
		})
	}
}

func TestWaitWaitsForRunning(t *testing.T) {
	var g Group
	release := make(chan struct{})
	var done atomic.Int32
	for range 3 {
		if !g.Go(func() { <-release; done.Add(1) }) {
			t.Fatal("Go on an open group returned false")
		}
	}
	g.Close() // refuses new work but does not wait
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while functions were running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the functions did")
	}
	if n := done.Load(); n != 3 {
		t.Fatalf("%d functions finished before Wait returned, want 3", n)
	}
}

// TestConcurrentGoAndWait races Go against Wait (run with -race): every Go
// that returned true must have run its function by the time Wait returns.
func TestConcurrentGoAndWait(t *testing.T) {
	for range 50 {
		var g Group
		var accepted, finished atomic.Int32
		var callers sync.WaitGroup
		for range 8 {
			callers.Go(func() {
				for range 20 {
					if g.Go(func() { finished.Add(1) }) {
						accepted.Add(1)
					}
				}
			})
		}
		g.Wait()
		f := finished.Load()
		callers.Wait()
		// Every Go that returned true did so before Wait began (later ones
		// are refused), so its function had finished when Wait returned.
		if a := accepted.Load(); f != a {
			t.Fatalf("Wait returned with %d of %d accepted functions finished", f, a)
		}
	}
}
