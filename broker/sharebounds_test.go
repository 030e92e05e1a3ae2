package broker_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client naming ever new share group ids: the broker keeps state for at
// most 1,000 share groups (coordinator/share's MaxGroups), refuses a new
// one with GROUP_MAX_SIZE_REACHED beyond it (its join), and forgets groups
// that have had no live member and no share session for the session
// timeout when a new one needs the room. RELIABILITY.md's "Resource bounds" has the row.

// shareJoin makes member "m" join group subscribing to topic (the group's
// coordinator initializes its share-partitions, which a fetch needs) and
// returns the heartbeat's error code.
func shareJoin(t *testing.T, cl *kgo.Client, group, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = group, "m", []string{topic}
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

// shareFetchAt sends a ShareFetch at epoch 0 for group (member "m") on
// partition 0 of topic, or at epoch 1 (acquiring), or -1 (closing).
func shareFetchAt(t *testing.T, cl *kgo.Client, group string, topic [16]byte, epoch int32) *kmsg.ShareFetchResponse {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	member := "m"
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 1<<20, 1000, 1000
	if epoch != -1 {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topic
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func TestShareGroupsBoundedForManyGroupIDs(t *testing.T) {
	srv := startShareBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-many", 1, nil)
	topic := topicIDOf(t, cl, "share-many")
	const (
		perRound  = 2000 // new group ids per round
		maxGroups = 1000 // the bound
		records   = 1000 // produced per round: each admitted group holds them in flight
		// 1,000 groups x 1,000 records in flight measured 66 MiB; without
		// the bound the second round held 4,000 groups' (238 MiB).
		heapBound = 128 << 20
	)
	base := heapInuse()
	for round := range 2 {
		// Each group opens a share session: the first 1,000 of the round
		// are admitted (the previous round's groups, idle past the
		// session timeout, are forgotten to make room), the rest refused.
		var admitted []string
		for i := range perRound {
			g := "many-" + strconv.Itoa(round) + "-" + strconv.Itoa(i)
			switch code := shareJoin(t, cl, g, "share-many"); code {
			case 0:
			case kerr.GroupMaxSizeReached.Code:
				continue
			default:
				t.Fatalf("round %d group %s joining: %v", round, g, kerr.ErrorForCode(code))
			}
			r := shareFetchAt(t, cl, g, topic, 0)
			switch r.ErrorCode {
			case 0:
				admitted = append(admitted, g)
			case kerr.GroupMaxSizeReached.Code:
			default:
				t.Fatalf("round %d group %s: %v", round, g, kerr.ErrorForCode(r.ErrorCode))
			}
		}
		if len(admitted) != maxGroups {
			t.Fatalf("round %d: %d groups admitted, want %d", round, len(admitted), maxGroups)
		}
		produceStrings(t, cl, "share-many", records)
		got := 0
		for _, g := range admitted {
			r := shareFetchAt(t, cl, g, topic, 1)
			if r.ErrorCode != 0 {
				t.Fatalf("round %d group %s acquiring: %v", round, g, kerr.ErrorForCode(r.ErrorCode))
			}
			for _, ar := range acquired(r) {
				got += int(ar.LastOffset - ar.FirstOffset + 1)
			}
			if r := shareFetchAt(t, cl, g, topic, -1); r.ErrorCode != 0 {
				t.Fatalf("round %d group %s closing: %v", round, g, kerr.ErrorForCode(r.ErrorCode))
			}
		}
		if got != maxGroups*records {
			t.Fatalf("round %d: %d records acquired, want %d", round, got, maxGroups*records)
		}
		grown := int64(heapInuse()) - int64(base)
		t.Logf("round %d: heap in use grew by %.1f MiB", round, float64(grown)/(1<<20))
		if grown > heapBound {
			t.Fatalf("round %d: heap in use grew by %d bytes, over the %d bound", round, grown, heapBound)
		}
		// The groups are empty now: past the session timeout they make
		// room for the next round's.
		if _, err := srv.JumpClock(46 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// The broker still serves a share consumer.
	if code := shareJoin(t, cl, "many-last", "share-many"); code != 0 {
		t.Fatalf("a new group joining after the rounds: %v", kerr.ErrorForCode(code))
	}
	r := shareFetchAt(t, cl, "many-last", topic, 0)
	if r.ErrorCode != 0 {
		t.Fatalf("a new group after the rounds: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
