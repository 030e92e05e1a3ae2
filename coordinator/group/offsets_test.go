package group

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetCommitValidation(t *testing.T) {
	c := testCoordinator(t, newMemLog(2), newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 2}))
	code := func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }

	if got := code(commit(c, 8, "g", "", -1, "missing", map[int32]int64{0: 1})); got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(got))
	}
	if got := code(commit(c, 8, "g", "", -1, "t", map[int32]int64{7: 1})); got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %v", kerr.ErrorForCode(got))
	}
	if got := code(commit(c, 8, "nogroup", "m", 4, "t", map[int32]int64{0: 1})); got != kerr.IllegalGeneration.Code {
		t.Fatalf("v8 commit to an unknown group: %v", kerr.ErrorForCode(got))
	}
	if got := code(commit(c, 9, "nogroup", "m", 4, "t", map[int32]int64{0: 1})); got != kerr.GroupIDNotFound.Code {
		t.Fatalf("v9 commit to an unknown group: %v", kerr.ErrorForCode(got))
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = "g", -1
	big := strings.Repeat("x", 5000)
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 5, Metadata: &big}, {Partition: 1, Offset: 6},
	}}}
	resp := c.OffsetCommit(Client{Version: 8}, req)
	if p := resp.Topics[0].Partitions; p[0].ErrorCode != kerr.OffsetMetadataTooLarge.Code || p[1].ErrorCode != 0 {
		t.Fatalf("metadata too large: %+v", p)
	}
	if got := fetchOffsets(t, c, "g"); !reflect.DeepEqual(got, map[string]map[int32]int64{"t": {1: 6}}) {
		t.Fatalf("offsets %v", got)
	}

	// A classic member commits with its generation only.
	m, j := joinGroup(t, c, "cg", "range")
	recv(t, j)
	if got := code(commit(c, 8, "cg", m, 5, "t", map[int32]int64{0: 1})); got != kerr.IllegalGeneration.Code {
		t.Fatalf("wrong generation: %v", kerr.ErrorForCode(got))
	}
	if got := code(commit(c, 8, "cg", m, 1, "t", map[int32]int64{0: 1})); got != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit while awaiting sync: %v", kerr.ErrorForCode(got))
	}
	recv(t, syncAsync(c, "cg", m, 1, nil))
	if got := code(commit(c, 8, "cg", m, 1, "t", map[int32]int64{0: 1})); got != 0 {
		t.Fatalf("member commit: %v", kerr.ErrorForCode(got))
	}
	if got := code(commit(c, 8, "cg", "", -1, "t", map[int32]int64{0: 1})); got != kerr.UnknownMemberID.Code {
		t.Fatalf("admin commit to a non-empty group: %v", kerr.ErrorForCode(got))
	}

	// Appends that fail map to coordinator errors.
	log := c.log.(*memLog)
	log.mu.Lock()
	log.fail = kerr.NotLeaderForPartition
	log.mu.Unlock()
	if got := code(commit(c, 8, "g", "", -1, "t", map[int32]int64{0: 9})); got != kerr.NotCoordinator.Code {
		t.Fatalf("failed append: %v", kerr.ErrorForCode(got))
	}
	log.mu.Lock()
	log.fail = errors.New("disk gone")
	log.mu.Unlock()
	if got := code(commit(c, 8, "g", "", -1, "t", map[int32]int64{0: 9})); got != kerr.NotCoordinator.Code {
		t.Fatalf("failed append: %v", kerr.ErrorForCode(got))
	}
}

func TestOffsetsAndGroupsReplayed(t *testing.T) {
	log := newMemLog(3)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 3}, TopicMeta{Name: "u", ID: topicID(2), Partitions: 1})
	c := testCoordinator(t, log, meta)
	commit(c, 9, "simple", "", -1, "t", map[int32]int64{0: 10, 1: 20})
	commit(c, 9, "simple", "", -1, "u", map[int32]int64{0: 30})
	commit(c, 9, "doomed", "", -1, "t", map[int32]int64{2: 1})

	m, j := joinGroup(t, c, "live", "range")
	recv(t, j)
	recv(t, syncAsync(c, "live", m, 1, map[string][]byte{m: []byte("assignment")}))
	commit(c, 9, "live", m, 1, "t", map[int32]int64{2: 99})

	// OffsetDelete of a topic nobody consumes; DeleteGroups of another.
	dreq := kmsg.NewPtrOffsetDeleteRequest()
	dreq.Group = "simple"
	dreq.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "u", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if resp := c.OffsetDelete(Client{}, dreq); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", resp)
	}
	// The live group consumes t: its offsets cannot be deleted.
	dreq.Group = "live"
	dreq.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 2}}}}
	if resp := c.OffsetDelete(Client{}, dreq); resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("offset delete of a subscribed topic: %+v", resp)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"doomed", "live", "never"}
	dg := c.DeleteGroups(Client{}, del)
	if dg.Groups[0].ErrorCode != 0 || dg.Groups[1].ErrorCode != kerr.NonEmptyGroup.Code || dg.Groups[2].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: %+v", dg.Groups)
	}
	c.Close()

	// A new coordinator over the same log sees the same state: offsets,
	// and the live group with its member and generation.
	c2 := testCoordinator(t, log, meta)
	if got := fetchOffsets(t, c2, "simple"); !reflect.DeepEqual(got, map[string]map[int32]int64{"t": {0: 10, 1: 20}}) {
		t.Fatalf("simple group offsets after replay: %v", got)
	}
	if got := fetchOffsets(t, c2, "live"); !reflect.DeepEqual(got, map[string]map[int32]int64{"t": {2: 99}}) {
		t.Fatalf("live group offsets after replay: %v", got)
	}
	if got := fetchOffsets(t, c2, "doomed"); len(got) != 0 {
		t.Fatalf("deleted group offsets after replay: %v", got)
	}
	if code := heartbeat(c2, "live", m, 1, nil); code != 0 {
		t.Fatalf("member heartbeat after replay: %v", kerr.ErrorForCode(code))
	}
	s := recv(t, syncAsync(c2, "live", m, 1, nil))
	if string(s.MemberAssignment) != "assignment" {
		t.Fatalf("assignment after replay %q", s.MemberAssignment)
	}
	lg := c2.ListGroups(Client{Version: 5}, &kmsg.ListGroupsRequest{StatesFilter: []string{"stable"}})
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "live" {
		t.Fatalf("stable groups: %+v", lg.Groups)
	}
	// Every offset record is key v1 / value v3, as Kafka 4 writes them.
	for _, r := range log.records(t) {
		if v, _ := decodeKeyVersion(r.key); v == keyOffsetCommit && r.value != nil {
			var ov kmsg.OffsetCommitValue
			if err := ov.ReadFrom(r.value); err != nil || ov.Version != offsetValueVersion || ov.LeaderEpoch != 3 || ov.Metadata != "meta" {
				t.Fatalf("offset value %+v %v", ov, err)
			}
		}
	}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func TestOffsetsExpire(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 2})
	c := testCoordinator(t, log, meta, func(cfg *Config) { cfg.Now = clock.Now; cfg.OffsetsRetention = time.Hour })
	commit(c, 9, "old", "", -1, "t", map[int32]int64{0: 1})
	clock.advance(30 * time.Minute)
	commit(c, 9, "young", "", -1, "t", map[int32]int64{0: 1})
	m, j := joinGroup(t, c, "active", "range")
	recv(t, j)
	recv(t, syncAsync(c, "active", m, 1, nil))
	commit(c, 9, "active", m, 1, "t", map[int32]int64{1: 7})

	clock.advance(45 * time.Minute)
	c.ExpireOffsets()
	if got := fetchOffsets(t, c, "old"); len(got) != 0 {
		t.Fatalf("old offsets kept: %v", got)
	}
	if got := fetchOffsets(t, c, "young"); len(got) != 1 {
		t.Fatalf("young offsets expired: %v", got)
	}
	// A stable consumer group keeps the offsets of topics it consumes.
	clock.advance(2 * time.Hour)
	c.ExpireOffsets()
	if got := fetchOffsets(t, c, "active"); len(got) != 1 {
		t.Fatalf("active group offsets expired: %v", got)
	}
	lg := c.ListGroups(Client{Version: 5}, kmsg.NewPtrListGroupsRequest())
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "active" {
		t.Fatalf("groups after expiry: %+v", lg.Groups)
	}
	// Tombstones are in the log: a replay agrees.
	c.Close()
	c2 := testCoordinator(t, log, meta, func(cfg *Config) { cfg.Now = clock.Now })
	if got := fetchOffsets(t, c2, "old"); len(got) != 0 {
		t.Fatalf("expired offsets replayed: %v", got)
	}
}

func TestOffsetFetchOldVersions(t *testing.T) {
	c := testCoordinator(t, newMemLog(1), newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 2}))
	commit(c, 2, "g", "", -1, "t", map[int32]int64{0: 42})
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "g"
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	resp := c.OffsetFetch(Client{Version: 1}, req)
	ps := resp.Topics[0].Partitions
	if ps[0].Offset != 42 || ps[1].Offset != -1 || ps[0].ErrorCode != 0 {
		t.Fatalf("v1 fetch: %+v", ps)
	}
	// v2+: a null topic list asks for everything.
	req.Topics = nil
	resp = c.OffsetFetch(Client{Version: 7}, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("v7 fetch all: %+v", resp.Topics)
	}
}

func TestOffsetsOfDeletedTopicsAreDeleted(t *testing.T) {
	log := newMemLog(2)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 1}, TopicMeta{Name: "u", ID: topicID(2), Partitions: 2})
	c := testCoordinator(t, log, meta)
	commit(c, 9, "g", "", -1, "t", map[int32]int64{0: 1})
	commit(c, 9, "g", "", -1, "u", map[int32]int64{0: 1, 1: 2})
	c.TopicDeleted("u")
	waitFor(t, "offsets of u deleted", func() bool { return len(fetchOffsets(t, c, "g")) == 1 })
	c.Close()
	c2 := testCoordinator(t, log, meta)
	if got := fetchOffsets(t, c2, "g"); !reflect.DeepEqual(got, map[string]map[int32]int64{"t": {0: 1}}) {
		t.Fatalf("offsets after replay: %v", got)
	}
}
