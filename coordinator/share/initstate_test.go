package share

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareGroupStatePartitionMetadataValue v0 as Kafka 4.4's schema lays it
// out (flexible): InitializingTopics and InitializedTopics, compact arrays
// of {TopicId uuid, TopicName compact string, Partitions compact []int32,
// tags}; DeletingTopics, a compact array of {TopicId, TopicName, tags};
// then the value's tags. Strait writes these bytes and reads them back.
func TestStatePartitionMetadataKafkaBytes(t *testing.T) {
	want := kbin.AppendInt16(nil, 0)
	// InitializingTopics: "uu" (id 2) partition 1.
	want = kbin.AppendUvarint(want, 2) // one element
	want = append(want, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	want = append(want, 3, 'u', 'u') // compact string: length+1
	want = append(want, 2, 0, 0, 0, 1)
	want = append(want, 0) // tags
	// InitializedTopics: "t" (id 1) partitions 0 and 2.
	want = append(want, 2)
	want = append(want, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	want = append(want, 2, 't')
	want = append(want, 3, 0, 0, 0, 0, 0, 0, 0, 2)
	want = append(want, 0)
	// DeletingTopics: "vvv" (id 3).
	want = append(want, 2)
	want = append(want, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	want = append(want, 4, 'v', 'v', 'v')
	want = append(want, 0)
	want = append(want, 0) // the value's tags

	names := map[byte]string{1: "t", 2: "uu", 3: "vvv"}
	name := func(id [16]byte) string { return names[id[0]] }
	m := &spMeta{initializing: topicParts{{2}: {1}}, initialized: topicParts{{1}: {2, 0}}, deleting: map[[16]byte]bool{{3}: true}}
	if got := m.encode(name); string(got) != string(want) {
		t.Fatalf("encoded %x\nKafka's %x", got, want)
	}
	back, err := decodeSPMeta(want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.initializing, topicParts{{2}: {1}}) || !reflect.DeepEqual(back.initialized, topicParts{{1}: {0, 2}}) ||
		!reflect.DeepEqual(back.deleting, map[[16]byte]bool{{3}: true}) {
		t.Fatalf("decoded %+v", back)
	}
	// Empty, as Kafka writes a group with nothing initialized.
	if got := newSPMeta().encode(name); string(got) != string([]byte{0, 0, 1, 1, 1, 0}) {
		t.Fatalf("empty value %x", got)
	}
	// A value with a tagged field Kafka may add later is read.
	tagged := append(want[:len(want)-1:len(want)-1], 1, 5, 2, 0xab, 0xcd)
	if _, err := decodeSPMeta(tagged); err != nil {
		t.Fatalf("tagged value: %v", err)
	}
	// Truncated or inflated counts are refused, never a panic.
	for n := range len(want) - 1 {
		if _, err := decodeSPMeta(want[:n]); err == nil {
			t.Fatalf("truncated at %d: accepted", n)
		}
	}
	if _, err := decodeSPMeta([]byte{0, 0, 0xff, 0xff, 0xff, 0x0f}); err == nil {
		t.Fatal("a huge count was accepted")
	}
}

// A heartbeat that subscribes to partitions not yet initialized records
// them as initializing with its other records, has them initialized
// (Config.InitializeState, state epoch the group epoch), then records those
// that succeeded as initialized; those that failed are tried again at the
// next heartbeat. A coordinator taking over loads the record; deleting the
// group names only the initialized partitions and marks their topics
// deleting.
func TestShareInitializeRecordedAndLoaded(t *testing.T) {
	topics := map[string]int32{"t": 3, "uu": 2}
	log := &memLog{}
	clk := &fakeClock{now: t0}
	a := newPersistedCoordinator(topics, log, clk)
	type call struct {
		epoch  int32
		parts  map[[16]byte][]int32
		starts map[[16]byte]int64
	}
	var calls []call
	failT2 := true // partition 2 of "t" fails the first time
	a.cfg.InitializeState = func(group string, epoch int32, topics []InitTopic) map[[16]byte][]int32 {
		cl := call{epoch, map[[16]byte][]int32{}, map[[16]byte]int64{}}
		ok := map[[16]byte][]int32{}
		for _, tp := range topics {
			cl.parts[tp.ID], cl.starts[tp.ID] = tp.Partitions, tp.Start
			for _, p := range tp.Partitions {
				if tp.ID == [16]byte{1} && p == 2 && failT2 {
					continue
				}
				ok[tp.ID] = append(ok[tp.ID], p)
			}
		}
		calls = append(calls, cl)
		failT2 = false
		return ok
	}
	r := heartbeat(a, "g", "m1", 0, "t")
	if r.ErrorCode != 0 || len(calls) != 1 || calls[0].epoch != r.MemberEpoch ||
		!reflect.DeepEqual(calls[0].parts, map[[16]byte][]int32{{1}: {0, 1, 2}}) || calls[0].starts[[16]byte{1}] != -1 {
		t.Fatalf("join: code %d, initialize calls %+v", r.ErrorCode, calls)
	}
	// The join's write carries the initializing record, the next one the
	// initialized partitions.
	var spms []*spMeta
	for _, rec := range log.recs {
		if k, _ := decodeGroupKey(rec.Key); k.typ == KeyStatePartitionMetadata {
			m, err := decodeSPMeta(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			spms = append(spms, m)
		}
	}
	if len(spms) != 2 || !reflect.DeepEqual(spms[0].initializing, topicParts{{1}: {0, 1, 2}}) || len(spms[0].initialized) != 0 ||
		len(spms[1].initializing) != 0 || !reflect.DeepEqual(spms[1].initialized, topicParts{{1}: {0, 1}}) {
		t.Fatalf("records %+v", spms)
	}
	// The next heartbeat tries the failed partition again (from offset 0,
	// as a known topic's new partition), and a new subscription's
	// partitions (from share.auto.offset.reset: -1).
	r = heartbeat(a, "g", "m1", r.MemberEpoch, "t", "uu")
	if r.ErrorCode != 0 || len(calls) != 2 || !reflect.DeepEqual(calls[1].parts, map[[16]byte][]int32{{1}: {2}, {2}: {0, 1}}) ||
		!reflect.DeepEqual(calls[1].starts, map[[16]byte]int64{{1}: 0, {2}: -1}) {
		t.Fatalf("second heartbeat: code %d, initialize calls %+v", r.ErrorCode, calls)
	}
	heartbeat(a, "g", "m1", r.MemberEpoch)
	if len(calls) != 2 {
		t.Fatalf("a heartbeat with everything initialized initialized %+v", calls[2:])
	}
	want := map[[16]byte][]int32{{1}: {0, 1, 2}, {2}: {0, 1}}
	if got := a.InitializedPartitions("g"); !reflect.DeepEqual(got, want) {
		t.Fatalf("initialized %v, want %v", got, want)
	}

	// Loaded by another coordinator: the same partitions, and no
	// initialization at its next heartbeat.
	b := newPersistedCoordinator(topics, &memLog{}, clk)
	b.cfg.InitializeState = func(string, int32, []InitTopic) map[[16]byte][]int32 {
		t.Fatal("the loaded group initialized again")
		return nil
	}
	b.Load(0, log.recs)
	if got := b.InitializedPartitions("g"); !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded initialized %v, want %v", got, want)
	}
	heartbeat(b, "g", "m1", r.MemberEpoch)

	// Deleting the offsets of "uu": its partitions, the topic deleting
	// until EndDelete.
	parts, code := a.BeginDelete("g", [][16]byte{{2}})
	if code != 0 || !reflect.DeepEqual(parts, map[[16]byte][]int32{{2}: {0, 1}}) {
		t.Fatalf("begin delete of uu: %v %v", parts, code)
	}
	a.mu.Lock()
	deleting := a.groups["g"].spm.deleting[[16]byte{2}]
	a.mu.Unlock()
	if !deleting {
		t.Fatal("uu not recorded as deleting")
	}
	if err := a.EndDelete("g", [][16]byte{{2}}); err != nil {
		t.Fatal(err)
	}
	if got := a.InitializedPartitions("g"); !reflect.DeepEqual(got, map[[16]byte][]int32{{1}: {0, 1, 2}}) {
		t.Fatalf("initialized after deleting uu: %v", got)
	}
	// A failed write of the deleting record: nothing to delete, the error
	// answered.
	log.fail = kerr.NotCoordinator
	if _, code := a.BeginDelete("g", nil); code != kerr.NotCoordinator.Code {
		t.Fatalf("begin delete with a failing log: %v", code)
	}
	log.fail = nil
	// The group's deletion: every partition of "t" (left deleting by the
	// failed attempt, so all its partitions), none of "uu".
	parts, code = a.BeginDelete("g", nil)
	if code != 0 || !reflect.DeepEqual(parts, map[[16]byte][]int32{{1}: {0, 1, 2}}) {
		t.Fatalf("begin delete of the group: %v %v", parts, code)
	}
}

// A deleted topic leaves the groups' record of initialized partitions, as
// Kafka's maybeCleanupShareGroupState: the groups concerned are returned
// and Flush writes their record.
func TestShareTopicDeletedLeavesTheRecord(t *testing.T) {
	topics := map[string]int32{"t": 2, "uu": 1}
	log := &memLog{}
	clk := &fakeClock{now: t0}
	a := newPersistedCoordinator(topics, log, clk)
	heartbeat(a, "g", "m1", 0, "t", "uu")
	heartbeat(a, "h", "m1", 0, "t")
	if got := a.TopicDeleted([16]byte{2}); !reflect.DeepEqual(got, []string{"g"}) {
		t.Fatalf("groups changed by deleting uu: %v, want [g]", got)
	}
	if err := a.Flush("g"); err != nil {
		t.Fatal(err)
	}
	b := newPersistedCoordinator(topics, &memLog{}, clk)
	b.Load(0, log.recs)
	if got := b.InitializedPartitions("g"); !reflect.DeepEqual(got, map[[16]byte][]int32{{1}: {0, 1}}) {
		t.Fatalf("loaded after the topic's deletion: %v, want t only", got)
	}
}
