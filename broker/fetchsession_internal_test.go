package broker

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strait/strait/config"
)

func testShard(maxEntries int, evictionMs int64) *fetchSessionShard {
	return &fetchSessionShard{maxEntries: maxEntries, evictionMs: evictionMs, sessions: map[int32]*fetchSession{}}
}

func sessionParts(n int) []*cachedPartition {
	out := make([]*cachedPartition, n)
	for i := range out {
		out[i] = &cachedPartition{key: sessionPartitionKey{topic: "t", partition: int32(i)}}
	}
	return out
}

func (sh *fetchSessionShard) touch(id int32, now int64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.touchLocked(sh.sessions[id], now)
}

func assertSessions(t *testing.T, sh *fetchSessionShard, ids ...int32) {
	t.Helper()
	var got []int32
	for id := range sh.sessions {
		got = append(got, id)
	}
	slices.Sort(got)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("sessions %v, want %v", got, want)
	}
}

// TestFetchSessionCacheEviction follows Kafka's FetchSessionTest
// testSessionCache and testPrivilegedSessionHandling: a full shard evicts a
// stale session, else the smallest session old enough, if the new one is
// not smaller; a follower's session outranks a consumer's.
func TestFetchSessionCacheEviction(t *testing.T) {
	sh := testShard(3, 100)
	id1 := sh.maybeCreateSession(0, false, false, sessionParts(10))
	id2 := sh.maybeCreateSession(10, false, false, sessionParts(20))
	id3 := sh.maybeCreateSession(20, false, false, sessionParts(30))
	if id1 <= 0 || id2 <= 0 || id3 <= 0 {
		t.Fatalf("ids %d %d %d", id1, id2, id3)
	}
	if id := sh.maybeCreateSession(30, false, false, sessionParts(40)); id != 0 {
		t.Fatal("created a 4th session while none is evictable")
	}
	if id := sh.maybeCreateSession(40, false, false, sessionParts(5)); id != 0 {
		t.Fatal("created a 4th session while none is evictable")
	}
	assertSessions(t, sh, id1, id2, id3)
	sh.touch(id1, 200)
	id4 := sh.maybeCreateSession(210, false, false, sessionParts(11)) // evicts the stale id2
	assertSessions(t, sh, id1, id3, id4)
	sh.touch(id1, 400)
	sh.touch(id3, 390)
	sh.touch(id4, 400)
	id5 := sh.maybeCreateSession(410, false, false, sessionParts(50)) // evicts the smallest, id1
	assertSessions(t, sh, id3, id4, id5)
	if id := sh.maybeCreateSession(410, false, false, sessionParts(5)); id != 0 {
		t.Fatal("a smaller session evicted a larger one")
	}
	id6 := sh.maybeCreateSession(410, true, false, sessionParts(5)) // privileged: evicts id4
	assertSessions(t, sh, id3, id5, id6)

	// Privileged sessions are evictable by others only once old.
	sh = testShard(2, 100)
	p1 := sh.maybeCreateSession(0, true, false, sessionParts(10))
	p2 := sh.maybeCreateSession(5, true, false, sessionParts(10))
	if id := sh.maybeCreateSession(10, false, false, sessionParts(20)); id != 0 {
		t.Fatal("a consumer session evicted a young follower session")
	}
	sh.touch(p1, 150)
	sh.touch(p2, 150)
	for _, size := range []int{10, 20} {
		if id := sh.maybeCreateSession(160, false, false, sessionParts(size)); id != 0 {
			t.Fatalf("a consumer session of %d partitions evicted a follower session", size)
		}
	}
	// Idle for over evictionMs: stale, evicted whatever its rank (the
	// least recently used first, the lower id on a tie).
	c1 := sh.maybeCreateSession(260, false, false, sessionParts(1))
	if c1 == 0 {
		t.Fatal("a stale follower session was not evicted")
	}
	assertSessions(t, sh, max(p1, p2), c1)
}

func TestFetchSessionIDsAndEpochs(t *testing.T) {
	c := newFetchSessionCache(1000)
	for i, sh := range c.shards {
		if sh.maxEntries != 125 {
			t.Fatalf("shard %d holds %d sessions, want 125", i, sh.maxEntries)
		}
		for range 100 {
			sh.mu.Lock()
			id := sh.newSessionIDLocked()
			sh.mu.Unlock()
			if id <= 0 || c.shardOf(id) != sh {
				t.Fatalf("shard %d gave id %d (shard %v)", i, id, c.shardOf(id))
			}
		}
	}
	for _, id := range []int32{0, -5, math.MaxInt32} {
		if c.shardOf(id) != nil {
			t.Fatalf("id %d has a shard", id)
		}
	}
	for _, tc := range [][2]int32{{-1, -1}, {0, 1}, {1, 2}, {math.MaxInt32, 1}} {
		if got := nextFetchEpoch(tc[0]); got != tc[1] {
			t.Fatalf("nextFetchEpoch(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

func TestFetchSessionSlotsConfig(t *testing.T) {
	if _, _, err := config.Parse(map[string]string{"max.incremental.fetch.session.cache.slots": "-1", "log.dirs": t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "max.incremental.fetch.session.cache.slots") {
		t.Fatalf("slots -1: %v", err)
	}
	cfg, _, err := config.Parse(map[string]string{"max.incremental.fetch.session.cache.slots": " 16 ", "log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c := newFetchSessionCache(cfg.FetchSessions.CacheSlots); c.shards[0].maxEntries != 2 {
		t.Fatalf("16 slots: %d per shard, want 2", c.shards[0].maxEntries)
	}
	// Fewer slots than shards: no sessions at all, as in Kafka.
	c := newFetchSessionCache(7)
	if id := c.shards[3].maybeCreateSession(0, true, false, sessionParts(1)); id != 0 {
		t.Fatalf("7 slots made session %d", id)
	}
}
