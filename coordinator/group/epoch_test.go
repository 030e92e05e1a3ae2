package group

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchLoaded is fetchOffsets once the group's partition answers (a load
// in progress answers COORDINATOR_LOAD_IN_PROGRESS first).
func fetchLoaded(t *testing.T, c *Coordinator, group string) map[string]map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group}}
	waitFor(t, "the group's partition loaded", func() bool {
		return c.OffsetFetch(Client{Version: 8}, req).Groups[0].ErrorCode == 0
	})
	return fetchOffsets(t, c, group)
}

// A broker that loses its __consumer_offsets partition and leads it again
// before it hears of the loss (both changes in one metadata view, or the
// notification of the first one late) loads the partition again: the
// leader in between wrote to it, and the groups held from the earlier term
// lack that. Kafka's coordinator runtime compares the leader epoch; the
// transaction coordinator here does too. Before, the group coordinator
// asked only whether it led the partition and kept serving the old state.
func TestLoadedAgainAtANewLeaderEpoch(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 2})
	log.setLeader(0, true, 4)
	c := testCoordinator(t, log, meta)
	if r := commit(c, 9, "g", "", -1, "t", map[int32]int64{0: 5}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}

	// Epoch 5 is another broker's: it commits offset 50 and a
	// transaction's offset (pending, then committed by its marker).
	log.setLeader(0, false, 5)
	other := func(offset int64) {
		t.Helper()
		rec := offsetCommitRecord("g", "t", 0, offsetEntry{offset: offset, leaderEpoch: -1, commitTime: 1, expireTime: -1})
		if err := log.Append(0, buildBatch([]record{rec}, c.now())); err != nil {
			t.Fatal(err)
		}
	}
	other(50)
	pending := offsetCommitRecord("g", "t", 1, offsetEntry{offset: 70, leaderEpoch: -1, commitTime: 1, expireTime: -1})
	if err := log.Append(0, buildProducerBatch([]record{pending}, c.now(), 7, 0)); err != nil {
		t.Fatal(err)
	}

	// Led here again at epoch 6, the change not yet told to LoadOwned:
	// the next request finds the epoch changed and the partition is read
	// again.
	log.setLeader(0, true, 6)
	if got := fetchLoaded(t, c, "g"); got["t"][0] != 50 || len(got["t"]) != 1 {
		t.Fatalf("offsets after leading again: %v, want t-0 at 50 (the other leader's commit) and t-1 pending", got)
	}
	// The transaction the other leader's term left open is pending here:
	// its marker, landing now, commits it.
	if _, code := fetchStable(t, c, "g", "t", 1); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable on the open transaction's offset: %v", kerr.ErrorForCode(code))
	}
	if err := log.Append(0, controlBatch(7, true)); err != nil {
		t.Fatal(err)
	}
	c.CompleteTransaction(0, 7, true)
	if o, code := fetchStable(t, c, "g", "t", 1); code != 0 || o != 70 {
		t.Fatalf("after the marker: offset %d, %v", o, kerr.ErrorForCode(code))
	}

	// The same through LoadOwned, the broker's reaction to a leadership
	// change, for a loss and regain it saw as one change.
	log.setLeader(0, false, 7)
	other(60)
	log.setLeader(0, true, 8)
	c.LoadOwned()
	if got := fetchLoaded(t, c, "g"); got["t"][0] != 60 {
		t.Fatalf("offsets after LoadOwned at a new epoch: %v, want t-0 at 60", got)
	}

	// A group of a shard left from an earlier term writes nothing: its
	// timers would otherwise write records made from the state it missed.
	g, code := c.lockGroup("g", false)
	if code != 0 || g == nil {
		t.Fatalf("group: %v", kerr.ErrorForCode(code))
	}
	log.setLeader(0, true, 9)
	err := g.appendRecords([]record{offsetCommitRecord("g", "t", 0, offsetEntry{offset: 1, leaderEpoch: -1, expireTime: -1})})
	g.mu.Unlock()
	if !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("a write from the shard of epoch 8 at epoch 9: %v", err)
	}
	if got := fetchLoaded(t, c, "g"); got["t"][0] != 60 {
		t.Fatalf("offsets at epoch 9: %v", got)
	}
}
