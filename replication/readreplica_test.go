package replication

import (
	"testing"
	"time"

	"github.com/strait/strait/controller"
)

// TestPreferredReadReplica: RackAwareReplicaSelector over the leader's view
// of its followers, as Kafka's findPreferredReadReplica builds it: only
// in-sync followers whose log holds the fetch offset, in the client's rack,
// the most caught up first; the leader (-1) when it is in that rack, when
// the client names none, or when no follower qualifies.
func TestPreferredReadReplica(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.topic("rr", []int32{1, 2, 3})
	p := leaderOf(t, e, "rr")
	racks := map[int32]string{1: "a", 2: "b", 3: "b"}
	rackOf := func(id int32) (string, bool) { r, ok := racks[id]; return r, ok }
	check := func(what, rack string, offset int64, want int32) {
		t.Helper()
		if got := p.PreferredReadReplica(rack, offset, rackOf); got != want {
			t.Errorf("%s: PreferredReadReplica(%q, %d) = %d, want %d", what, rack, offset, got, want)
		}
	}

	produce(t, p, 5)
	check("no follower has fetched", "b", 0, -1)
	p.FollowerFetched(2, 102, 5, 0)
	p.FollowerFetched(3, 103, 3, 0)
	check("no rack", "", 0, -1)
	check("leader's rack", "a", 0, -1)
	check("a rack without replicas", "c", 0, -1)
	check("the larger log end offset", "b", 2, 2)
	check("only follower 2 holds offset 4", "b", 4, 2)
	check("nobody holds offset 6", "b", 6, -1)

	// Equal log end offsets: the more recently caught up, then the larger id.
	e.clock.Advance(time.Second)
	p.FollowerFetched(3, 103, 5, 0)
	check("follower 3 caught up more recently", "b", 5, 3)
	e.clock.Advance(time.Second)
	p.FollowerFetched(2, 102, 5, 0)
	check("follower 2 caught up more recently", "b", 5, 2)

	// A follower whose log starts after the fetch offset cannot serve it.
	p.FollowerFetched(2, 102, 5, 3)
	check("follower 2's log starts at 3", "b", 2, 3)
	check("offset 3 is on both", "b", 3, 2)

	// A broker without an endpoint on the client's listener is never chosen.
	delete(racks, 2)
	check("follower 2 has no endpoint", "b", 3, 3)
	racks[2] = "b"

	// Out of the ISR: not a candidate.
	e.meta.setPartition("rr", 0, func(pi *controller.PartitionInfo) { pi.ISR, pi.PartitionEpoch = []int32{1, 3}, 2 })
	waitUntil(t, "the ISR without 2 to apply", func() bool { return len(p.State().ISR) == 2 })
	check("follower 2 left the ISR", "b", 3, 3)

	// Only the leader answers with a preferred replica.
	e.meta.setPartition("rr", 0, func(pi *controller.PartitionInfo) {
		pi.Leader, pi.LeaderEpoch, pi.ISR, pi.PartitionEpoch = 3, 2, []int32{3, 1}, 3
	})
	waitUntil(t, "leadership to move", func() bool { return !p.IsLeader() })
	check("a follower", "b", 3, -1)
}
