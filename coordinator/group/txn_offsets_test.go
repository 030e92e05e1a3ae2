package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

func txnCommit(c *Coordinator, group string, producerID int64, topic string, offsets map[int32]int64) *kmsg.TxnOffsetCommitResponse {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", group, producerID, 0, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitRequestTopicPartition{Partition: p, Offset: o, LeaderEpoch: -1})
	}
	req.Topics = append(req.Topics, rt)
	return c.TxnOffsetCommit(Client{Version: 3}, req, nil)
}

// fetchStable fetches one partition's offset with require_stable.
func fetchStable(t *testing.T, c *Coordinator, group, topic string, p int32) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{p}}}}}
	resp := c.OffsetFetch(Client{Version: 8}, req)
	sp := resp.Groups[0].Topics[0].Partitions[0]
	return sp.Offset, sp.ErrorCode
}

// controlBatch is the marker the transaction coordinator writes.
func controlBatch(producerID int64, commit bool) []byte {
	k := kmsg.ControlRecordKey{Type: kmsg.ControlRecordKeyTypeAbort}
	if commit {
		k.Type = kmsg.ControlRecordKeyTypeCommit
	}
	v := kmsg.EndTxnMarker{}
	b := recordbatch.NewBuilder(time.Now().UnixMilli())
	b.ProducerID, b.ProducerEpoch, b.Transactional, b.Control = producerID, 0, true, true
	b.Add(k.AppendTo(nil), v.AppendTo(nil))
	return b.Build()
}

func TestTransactionalOffsetCommits(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 2})
	c := testCoordinator(t, log, meta)
	commit(c, 9, "g", "", -1, "t", map[int32]int64{0: 5})
	if r := txnCommit(c, "g", 7, "t", map[int32]int64{0: 10, 1: 11}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	var txnBatches int
	for _, b := range log.batches[0] {
		readBatch(b, func(h *recordbatch.Header, _, _ []byte) error {
			if h.IsTransactional() && h.ProducerID == 7 {
				txnBatches++
			}
			return nil
		})
	}
	if txnBatches != 2 {
		t.Fatalf("%d transactional records of producer 7 in the log", txnBatches)
	}
	// Pending: invisible, and unstable for require_stable readers.
	if got := fetchOffsets(t, c, "g"); got["t"][0] != 5 || len(got["t"]) != 1 {
		t.Fatalf("offsets during the transaction: %v", got)
	}
	if _, code := fetchStable(t, c, "g", "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable during the transaction: %v", kerr.ErrorForCode(code))
	}
	// A restart keeps the transaction pending.
	c.Close()
	c = testCoordinator(t, log, meta)
	if _, code := fetchStable(t, c, "g", "t", 1); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable after a restart: %v", kerr.ErrorForCode(code))
	}
	// The commit marker lands: the offsets become visible.
	if err := log.Append(0, controlBatch(7, true)); err != nil {
		t.Fatal(err)
	}
	c.CompleteTransaction(0, 7, true)
	if off, code := fetchStable(t, c, "g", "t", 0); code != 0 || off != 10 {
		t.Fatalf("after commit: offset %d code %v", off, kerr.ErrorForCode(code))
	}
	// An aborted transaction leaves nothing behind.
	txnCommit(c, "g", 8, "t", map[int32]int64{1: 99})
	if err := log.Append(0, controlBatch(8, false)); err != nil {
		t.Fatal(err)
	}
	c.CompleteTransaction(0, 8, false)
	if off, _ := fetchStable(t, c, "g", "t", 1); off != 11 {
		t.Fatalf("after abort: offset %d", off)
	}
	// A replay of the whole log agrees.
	c.Close()
	c = testCoordinator(t, log, meta)
	if got := fetchOffsets(t, c, "g"); got["t"][0] != 10 || got["t"][1] != 11 {
		t.Fatalf("after replay: %v", got)
	}
}

// A transaction marker that reaches a partition while its new coordinator
// loads it, after the load read the log's end, still settles the offsets:
// they are not left pending (OffsetFetch with require_stable would answer
// UNSTABLE_OFFSET_COMMIT for good).
func TestTransactionMarkerDuringLoad(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(1), Partitions: 2})
	c := testCoordinator(t, log, meta)
	if r := txnCommit(c, "g", 7, "t", map[int32]int64{0: 10}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	c.Close()

	cfg := DefaultConfig()
	cfg.NumPartitions, cfg.InitialRebalanceDelay = 1, 0
	cfg.Logger = c.logger
	c2 := New(cfg, log, meta)
	t.Cleanup(c2.Close)
	log.afterRead = func() {
		if err := log.Append(0, controlBatch(7, true)); err != nil {
			t.Error(err)
		}
		c2.CompleteTransaction(0, 7, true)
	}
	c2.LoadOwned()
	waitFor(t, "partition loaded", func() bool {
		s := c2.shardFor(0)
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.state == shardLoaded
	})
	if o, code := fetchStable(t, c2, "g", "t", 0); code != 0 || o != 10 {
		t.Fatalf("offset after the marker: %d %v", o, kerr.ErrorForCode(code))
	}
}
