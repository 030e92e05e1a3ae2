package group

import (
	"sync"
	"testing"
	"time"
)

// A group's own session timeout and heartbeat interval (its group configs,
// through Config.ConsumerTimeouts) are read on every heartbeat: a change
// shows in the next heartbeat response and session timer, and other groups
// keep the broker's values.
func TestConsumerTimeoutsPerGroup(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(7), Partitions: 3})
	var mu sync.Mutex
	overrides := map[string][2]time.Duration{}
	set := func(group string, session, heartbeat time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		overrides[group] = [2]time.Duration{session, heartbeat}
	}
	c := testCoordinator(t, log, meta, func(cfg *Config) {
		cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval = time.Minute, 5*time.Second
		cfg.ConsumerTimeouts = func(group string) (time.Duration, time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			o := overrides[group]
			return o[0], o[1] // zero: the broker's
		}
	})
	a, b := &cgMember{id: "member-a"}, &cgMember{id: "member-b"}
	if r := a.heartbeat(t, c, "ga", []string{"t"}, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("first heartbeat: error %d, interval %d ms; want 0, 5000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	if r := b.heartbeat(t, c, "gb", []string{"t"}, nil); r.ErrorCode != 0 {
		t.Fatalf("first heartbeat of gb: error %d", r.ErrorCode)
	}
	set("ga", 300*time.Millisecond, 7*time.Second)
	if r := a.heartbeat(t, c, "ga", []string{"t"}, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("heartbeat after the change: error %d, interval %d ms; want 0, 7000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	if r := b.heartbeat(t, c, "gb", []string{"t"}, nil); r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("another group's interval: %d ms, want the broker's 5000", r.HeartbeatIntervalMillis)
	}
	// The 300 ms session timeout now runs for ga's member, not gb's minute.
	waitFor(t, "ga's member to expire", func() bool { return describeState(t, c, "ga") == "Empty" })
	if st := describeState(t, c, "gb"); st == "Empty" {
		t.Fatal("gb's member expired with the broker's one-minute session timeout")
	}
}
