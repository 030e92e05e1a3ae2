// Package background owns the goroutines a component starts and must wait
// for at shutdown (as nats-server's startGoRoutine): each is started
// through Group.Go, which refuses once closing began, so that the final
// Wait sees every one of them.
package background

import "sync"

// Group runs functions on goroutines and waits for them. The zero value is
// ready to use; a Group must not be copied after first use. All methods are
// safe for concurrent use.
//
// A bare sync.WaitGroup is not enough: an Add that may start from zero while
// Wait runs is a data race (and the goroutine it counts could be missed).
// Go takes a read lock around its Add, Close a write lock to set the closed
// flag, so every Add either happens before the flag is set (and Wait counts
// it) or sees the flag and starts nothing. The read lock lets concurrent Go
// calls proceed without serializing on each other.
type Group struct {
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs fn on a new goroutine that Wait waits for and returns true; once
// Close (or Wait) has begun it runs nothing and returns false. A caller
// whose work must still happen when refused does it itself.
func (g *Group) Go(fn func()) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn()
	}()
	return true
}

// Close refuses every later Go. It does not wait: functions already started
// keep running (see Wait). Idempotent.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Wait closes the group (as Close) and waits for every function Go started
// to return. Callers that must refuse new work earlier than they can wait
// call Close first.
func (g *Group) Wait() {
	g.Close()
	g.wg.Wait()
}
