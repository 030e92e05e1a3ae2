package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var testKS = keyspace{prefix: "/strait"}

func topicKV(name string, id byte, rev int64) *mvccpb.KeyValue {
	t := &TopicInfo{Name: name, ID: [16]byte{15: id}}
	return &mvccpb.KeyValue{Key: []byte(testKS.topic(name)), Value: []byte(encodeTopic(t)), ModRevision: rev, CreateRevision: rev}
}

func partitionKV(name string, p int32, leader int32, rev int64) *mvccpb.KeyValue {
	v := encodePartition(PartitionInfo{Replicas: []int32{leader}, Leader: leader, ISR: []int32{leader}})
	return &mvccpb.KeyValue{Key: []byte(testKS.partition(name, p)), Value: []byte(v), ModRevision: rev, CreateRevision: rev}
}

type recorded struct {
	name    string
	id      byte
	deleted bool
}

func recordChanges(c *metadataCache) *[]recorded {
	var out []recorded
	c.listen(func(ch TopicChange) { out = append(out, recorded{ch.Topic.Name, ch.Topic.ID[15], ch.Deleted}) })
	return &out
}

func equalRecorded(a, b []recorded) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A reload (after a failed watch) must report exactly the difference.
func TestCacheReloadReportsDifference(t *testing.T) {
	c := newMetadataCache(testKS, testLogger())
	got := recordChanges(c)
	c.load([]*mvccpb.KeyValue{
		topicKV("same", 1, 2), partitionKV("same", 0, 1, 2),
		topicKV("changed", 2, 3), partitionKV("changed", 0, 1, 3),
		topicKV("deleted", 3, 4), partitionKV("deleted", 0, 1, 4),
		topicKV("recreated", 4, 5), partitionKV("recreated", 0, 1, 5),
	}, 5)
	if len(*got) != 4 {
		t.Fatalf("initial load reported %v", *got)
	}
	*got = nil
	c.load([]*mvccpb.KeyValue{
		topicKV("same", 1, 2), partitionKV("same", 0, 1, 2),
		topicKV("changed", 2, 3), partitionKV("changed", 0, 2, 9),
		topicKV("recreated", 7, 10), partitionKV("recreated", 0, 1, 10),
		topicKV("new", 8, 11), partitionKV("new", 0, 1, 11),
	}, 11)
	want := []recorded{
		{"changed", 2, false},
		{"deleted", 3, true},
		{"new", 8, false},
		{"recreated", 4, true},
		{"recreated", 7, false},
	}
	if !equalRecorded(*got, want) {
		t.Fatalf("reload reported %v\nwant              %v", *got, want)
	}
	snap := c.snapshot()
	if snap.rev != 11 || snap.tix.len() != 4 || snap.topicByID([16]byte{15: 4}) != nil ||
		snap.topic("changed").Partitions[0].Leader != 2 {
		t.Fatalf("snapshot after reload: rev %d topics %v", snap.rev, snap.topicList())
	}
}

func TestCacheAppliesRevisionsAndTracksController(t *testing.T) {
	c := newMetadataCache(testKS, testLogger())
	got := recordChanges(c)
	put := func(kv *mvccpb.KeyValue) *clientv3.Event { return &clientv3.Event{Type: clientv3.EventTypePut, Kv: kv} }
	del := func(key string, rev int64) *clientv3.Event {
		return &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}}
	}
	// Partitions before the topic key in one revision: still one creation.
	c.applyRevision(2, []*clientv3.Event{put(partitionKV("t", 1, 1, 2)), put(partitionKV("t", 0, 1, 2)), put(topicKV("t", 1, 2))})
	c.applyRevision(3, []*clientv3.Event{put(partitionKV("t", 1, 5, 3))})
	elect := func(lease string, node string, rev int64) *clientv3.Event {
		return put(&mvccpb.KeyValue{Key: []byte(testKS.election() + "/" + lease), Value: []byte(node), CreateRevision: rev, ModRevision: rev})
	}
	c.applyRevision(4, []*clientv3.Event{elect("b", "2", 4)})
	c.applyRevision(5, []*clientv3.Event{elect("a", "1", 5)})
	if id := c.snapshot().controllerID; id != 2 {
		t.Fatalf("controller = %d, want 2 (the oldest candidate)", id)
	}
	c.applyRevision(6, []*clientv3.Event{del(testKS.election()+"/b", 6)})
	if id := c.snapshot().controllerID; id != 1 {
		t.Fatalf("controller = %d after the leader left, want 1", id)
	}
	c.applyRevision(7, []*clientv3.Event{del(testKS.topic("t"), 7), del(testKS.partition("t", 0), 7), del(testKS.partition("t", 1), 7)})
	want := []recorded{{"t", 1, false}, {"t", 1, false}, {"t", 1, true}}
	if !equalRecorded(*got, want) {
		t.Fatalf("changes %v, want %v", *got, want)
	}
	if len(c.topics) != 0 {
		t.Fatalf("state kept for a deleted topic: %v", c.topics)
	}
	if err := c.waitForRevision(context.Background(), nil, 7); err != nil {
		t.Fatal(err)
	}
}

func TestCachePartitionChangeCarriesFullTopic(t *testing.T) {
	c := newMetadataCache(testKS, testLogger())
	var last TopicChange
	c.listen(func(ch TopicChange) { last = ch })
	c.load([]*mvccpb.KeyValue{topicKV("t", 1, 2), partitionKV("t", 0, 1, 2), partitionKV("t", 1, 1, 2)}, 2)
	c.applyRevision(3, []*clientv3.Event{{Type: clientv3.EventTypePut, Kv: partitionKV("t", 1, 9, 3)}})
	if len(last.Topic.Partitions) != 2 || last.Topic.Partitions[1].Leader != 9 || last.Topic.Partitions[0].Leader != 1 {
		t.Fatalf("change = %+v", last)
	}
}

// A change of some partitions names them (listeners then look at those
// only); partitions added are named too; anything else names none (nil:
// every partition), and a topic deleted and created again within one watch
// response is reported as both.
func TestCacheChangeNamesChangedPartitions(t *testing.T) {
	c := newMetadataCache(testKS, testLogger())
	var got []TopicChange
	c.listen(func(ch TopicChange) { got = append(got, ch) })
	c.load([]*mvccpb.KeyValue{topicKV("t", 1, 2), partitionKV("t", 0, 1, 2), partitionKV("t", 1, 1, 2),
		partitionKV("t", 2, 1, 2)}, 2)
	if len(got) != 1 || got[0].Partitions != nil {
		t.Fatalf("load reported %+v, want one change naming no partitions", got)
	}
	put := func(kv *mvccpb.KeyValue) *clientv3.Event { return &clientv3.Event{Type: clientv3.EventTypePut, Kv: kv} }
	got = nil
	c.applyEvents(4, []*clientv3.Event{put(partitionKV("t", 2, 7, 3)), put(partitionKV("t", 0, 8, 4)),
		put(partitionKV("t", 2, 9, 4))})
	if len(got) != 1 || !slices.Equal(got[0].Partitions, []int32{0, 2}) || got[0].Topic.Partitions[2].Leader != 9 ||
		got[0].Topic.Partitions[0].Leader != 8 || got[0].Topic.Partitions[1].Leader != 1 {
		t.Fatalf("two revisions in one response reported %+v", got)
	}
	got = nil
	c.applyRevision(5, []*clientv3.Event{put(partitionKV("t", 3, 1, 5))})
	if len(got) != 1 || !slices.Equal(got[0].Partitions, []int32{3}) || len(got[0].Topic.Partitions) != 4 {
		t.Fatalf("a partition added reported %+v", got)
	}
	got = nil
	del := &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: []byte(testKS.topic("t")), ModRevision: 6}}
	delp := &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: []byte(testKS.partition("t", 3)), ModRevision: 6}}
	c.applyEvents(7, []*clientv3.Event{del, delp, put(topicKV("t", 2, 7))})
	if len(got) != 2 || !got[0].Deleted || got[0].Topic.ID[15] != 1 || got[1].Deleted || got[1].Topic.ID[15] != 2 ||
		got[1].Partitions != nil || len(got[1].Topic.Partitions) != 3 {
		t.Fatalf("deleted and created again reported %+v", got)
	}
	snap := c.snapshot()
	if snap.topic("t").ID[15] != 2 || snap.topicByID([16]byte{15: 1}) != nil || snap.topicByID([16]byte{15: 2}) == nil {
		t.Fatalf("snapshot after the re-creation: %+v", snap.topicList())
	}
}

// The index's sorted names follow creations and deletions, whatever their
// order within one edit, and earlier indexes are left as they were.
func TestTopicIndexKeepsNamesSorted(t *testing.T) {
	mk := func(name string, id byte) *TopicInfo { return &TopicInfo{Name: name, ID: [16]byte{0: id, 15: id}} }
	x := newTopicIndex(mk("m", 1), mk("c", 2), mk("x", 3))
	ed := x.edit()
	ed.put(mk("a", 4))
	ed.remove(x.get("m"))
	ed.put(mk("n", 5))
	ed.put(mk("z", 6))
	y := ed.done()
	names := func(ix *topicIndex) []string {
		var out []string
		for _, t := range ix.sorted() {
			out = append(out, t.Name)
		}
		return out
	}
	if got := names(y); !slices.Equal(got, []string{"a", "c", "n", "x", "z"}) || y.len() != 5 {
		t.Fatalf("names %v (len %d)", got, y.len())
	}
	if got := names(x); !slices.Equal(got, []string{"c", "m", "x"}) || x.get("a") != nil || x.getByID([16]byte{0: 4, 15: 4}) != nil {
		t.Fatalf("the earlier index changed: %v", got)
	}
	ed = y.edit()
	ed.put(mk("b", 7))
	if got := names(ed.done()); !slices.Equal(got, []string{"a", "b", "c", "n", "x", "z"}) {
		t.Fatalf("one insertion: %v", got)
	}
}

// sortedNames stays sorted, and earlier lists unchanged, over thousands of
// insertions and removals in random order (chunks split and empty).
func TestSortedNamesAgainstASortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s sortedNames
	var want []string
	var early sortedNames
	for i := range 6000 {
		name := fmt.Sprintf("t%05d", rng.IntN(4000))
		if j, found := slices.BinarySearch(want, name); found {
			want = slices.Delete(want, j, j+1)
			s = s.remove(name)
		} else {
			want = slices.Insert(want, j, name)
			s = s.insert(name)
		}
		if i == 3000 {
			early = s
		}
	}
	earlyFlat := slices.Concat(early...)
	if got := slices.Concat(s...); !slices.Equal(got, want) {
		t.Fatalf("%d names, want %d; sorted: %v", len(got), len(want), slices.IsSorted(got))
	}
	for i := 1; i < 20 && len(s) > 1; i++ {
		s = s.insert(fmt.Sprintf("u%d", i))
	}
	if !slices.Equal(slices.Concat(early...), earlyFlat) {
		t.Fatal("a later insertion changed an earlier list")
	}
	for _, c := range s {
		if len(c) == 0 || len(c) > nameChunk {
			t.Fatalf("a chunk of %d names", len(c))
		}
	}
}

// from yields the names from the first one >= its argument, across chunks.
func TestSortedNamesFrom(t *testing.T) {
	var s sortedNames
	for i := range 2000 {
		s = s.insert(fmt.Sprintf("n%04d", i*2))
	}
	var got []string
	for n := range s.from("n1999") {
		got = append(got, n)
		if len(got) == 3 {
			break
		}
	}
	if !slices.Equal(got, []string{"n2000", "n2002", "n2004"}) {
		t.Fatalf("from n1999: %v", got)
	}
	got = nil
	for n := range s.from("n3998") {
		got = append(got, n)
	}
	if !slices.Equal(got, []string{"n3998"}) {
		t.Fatalf("from the last: %v", got)
	}
	for n := range s.from("z") {
		t.Fatalf("from past the end: %s", n)
	}
	if n := len(slices.Collect(s.from(""))); n != 2000 {
		t.Fatalf("from the start: %d names", n)
	}
}

// changedBetween names the topics changed between two published revisions,
// across several publishes, and gives up on a revision it no longer holds.
func TestCacheChangedBetween(t *testing.T) {
	c := newMetadataCache(testKS, testLogger())
	c.load([]*mvccpb.KeyValue{topicKV("a", 1, 2), partitionKV("a", 0, 1, 2), topicKV("b", 2, 2), partitionKV("b", 0, 1, 2)}, 2)
	put := func(kv *mvccpb.KeyValue) *clientv3.Event { return &clientv3.Event{Type: clientv3.EventTypePut, Kv: kv} }
	c.applyRevision(3, []*clientv3.Event{put(partitionKV("b", 0, 2, 3))})
	c.applyRevision(4, []*clientv3.Event{put(partitionKV("a", 0, 2, 4))})
	c.applyRevision(5, []*clientv3.Event{put(&mvccpb.KeyValue{Key: []byte(testKS.broker(7)), Value: []byte(`{"nodeId":7}`), ModRevision: 5})})
	for _, tc := range []struct {
		from, to int64
		want     []string
	}{{2, 3, []string{"b"}}, {3, 5, []string{"a"}}, {2, 5, []string{"a", "b"}}, {4, 5, nil}, {5, 5, nil}} {
		got, ok := c.changedBetween(tc.from, tc.to)
		if !ok || !slices.Equal(got, tc.want) {
			t.Errorf("changedBetween(%d, %d) = %v, %v; want %v", tc.from, tc.to, got, ok, tc.want)
		}
	}
	if _, ok := c.changedBetween(1, 5); ok {
		t.Error("changedBetween from a revision never published: ok")
	}
	for i := range int64(changeLogSize) {
		c.applyRevision(6+i, []*clientv3.Event{put(partitionKV("a", 0, 1, 6+i))})
	}
	if _, ok := c.changedBetween(2, 5+changeLogSize); ok {
		t.Error("changedBetween past what the log holds: ok")
	}
	if got, ok := c.changedBetween(5+changeLogSize-1, 5+changeLogSize); !ok || !slices.Equal(got, []string{"a"}) {
		t.Errorf("the last publish: %v, %v", got, ok)
	}
}

// colliding finds the names equal to another once '.' is '_', and forgets
// a deleted one.
func TestTopicIndexColliding(t *testing.T) {
	a, b := &TopicInfo{Name: "a.b", ID: [16]byte{1}}, &TopicInfo{Name: "a_b", ID: [16]byte{2}}
	x := newTopicIndex(a, b, &TopicInfo{Name: "ab", ID: [16]byte{3}})
	if got := x.colliding("a.b"); len(got) != 2 {
		t.Fatalf("colliding(a.b) = %v", got)
	}
	if got := x.colliding("ab"); len(got) != 0 {
		t.Fatalf("colliding(ab) = %v", got)
	}
	ed := x.edit()
	ed.remove(a)
	y := ed.done()
	if got := y.colliding("a.b"); !slices.Equal(got, []string{"a_b"}) {
		t.Fatalf("after deleting a.b: %v", got)
	}
	if got := x.colliding("a_b"); len(got) != 2 {
		t.Fatalf("the earlier index changed: %v", got)
	}
}
