package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareOffsets is DescribeShareGroupOffsets of group: of topic's partition
// 0, or of every partition the group initialized when topic is "". It
// returns the start offset by partition (by topic name and partition).
func shareOffsets(t *testing.T, cl *kgo.Client, group, topic string) map[string]map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	if topic != "" {
		gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, gt)
	}
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe share group offsets: %v %+v", err, resp)
	}
	out := map[string]map[int32]int64{}
	for _, rt := range resp.Groups[0].Topics {
		out[rt.Topic] = map[int32]int64{}
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("describe share group offsets of %s %d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			out[rt.Topic][rp.Partition] = rp.StartOffset
		}
	}
	return out
}

// A share-partition its group's coordinator has not initialized is not
// served, as Kafka's SharePartition fails to initialize without state: a
// fetch answers it with an error and acquires nothing, and
// DescribeShareGroupOffsets answers start offset -1. A member's join
// initializes the partitions of the topics it subscribes to, with start
// offset -1 still (the leader sets it at its first fetch, from
// share.auto.offset.reset), and records them: describing all of the
// group's offsets lists them.
func TestShareFetchNeedsInitializedPartition(t *testing.T) {
	srv := startShareBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-init", 2, nil)
	to0 := newClient(t, srv, kgo.RecordPartitioner(kgo.ManualPartitioner())) // every record to partition 0
	produceStrings(t, to0, "share-init", 4)
	id := topicIDOf(t, cl, "share-init")

	r := shareFetchAt(t, cl, "sg-init", id, 0)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch before any join: %+v", r)
	}
	if p := r.Topics[0].Partitions[0]; p.ErrorCode == 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("fetch of a partition never initialized: error %v, acquired %+v; want an error and nothing",
			kerr.ErrorForCode(p.ErrorCode), p.AcquiredRecords)
	}
	if got := shareOffsets(t, cl, "sg-init", "share-init"); got["share-init"][0] != -1 {
		t.Fatalf("start offset before any join: %v, want -1", got)
	}

	if code := shareJoin(t, cl, "sg-init", "share-init"); code != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(code))
	}
	all := shareOffsets(t, cl, "sg-init", "")
	if len(all) != 1 || len(all["share-init"]) != 2 || all["share-init"][0] != -1 || all["share-init"][1] != -1 {
		t.Fatalf("offsets of every initialized partition after the join: %v, want share-init 0 and 1 at -1", all)
	}
	// Nothing to acquire and no error: the partition is left out.
	if r := shareFetchAt(t, cl, "sg-init", id, 1); r.ErrorCode != 0 || len(r.Topics) != 0 {
		t.Fatalf("fetch after the join: %+v", r)
	}
	// The leader set the start from share.auto.offset.reset (latest:
	// past the records produced before) and wrote it.
	code, start := readShareState(t, cl, "sg-init", id, 0)
	if code != 0 || start != 4 {
		t.Fatalf("stored state after the first fetch: %v start %d", kerr.ErrorForCode(code), start)
	}
	if got := shareOffsets(t, cl, "sg-init", "share-init"); got["share-init"][0] != start {
		t.Fatalf("start offset after the first fetch: %v, want the stored %d", got, start)
	}
	// Records produced now are the group's.
	produceStrings(t, to0, "share-init", 3)
	if got := acquired(shareFetchAt(t, cl, "sg-init", id, 2)); len(got) != 1 || got[0].FirstOffset != 4 || got[0].LastOffset != 6 {
		t.Fatalf("acquired %+v, want 4-6", got)
	}
}
