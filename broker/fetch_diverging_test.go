package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strait/strait/replication"
)

// TestFetchDivergingEpoch: a Fetch (v12+) naming the epoch of the client's
// last fetched batch is checked against this log as Kafka's
// Partition.readRecords does: if the log has only an older epoch, or the
// epoch ends before the fetch offset, the partition is answered with the
// epoch and its end offset here as diverging_epoch, the partition's
// offsets and no records, at once; an epoch this log does not know (above
// its latest) is OFFSET_OUT_OF_RANGE; otherwise the records are read as
// usual. A client that names no epoch (-1) or fetches below v12 is not
// checked.
func TestFetchDivergingEpoch(t *testing.T) {
	srv := startTestBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v11 := kversion.Stable()
	v11.SetMaxKeyVersion(int16(kmsg.Fetch), 11)
	cl11, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.MaxVersions(v11))
	if err != nil {
		t.Fatal(err)
	}
	defer cl11.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "lfe"); err != nil || resp.Err != nil {
		t.Fatalf("creating lfe: %v %v", err, resp.Err)
	}
	var p *replication.Partition
	waitFor(t, 10*time.Second, "lfe-0 led here", func() bool {
		if lt := srv.replicas.TopicByName("lfe"); lt != nil {
			p = lt.Partition(0)
		}
		return p != nil && p.IsLeader()
	})
	// Offsets 0-2 in epoch 0, 3-4 in epoch 2.
	l := p.Log()
	if _, err := l.AppendAsLeader(plainBatch(3), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpochStartOffset(2, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(plainBatch(2), 2); err != nil {
		t.Fatal(err)
	}
	p.Appended()
	waitFor(t, 5*time.Second, "the high watermark at 5", func() bool { return l.HighWatermark() == 5 })

	fetch := func(version int16, offset int64, lastFetchedEpoch int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 2000, 1, 1<<20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "lfe", p.TopicID()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.LastFetchedEpoch, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, lastFetchedEpoch, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		via := cl
		if version == 11 {
			via = cl11
		}
		resp, err := req.RequestWith(ctx, via)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != version || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch v%d: %+v", version, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		name             string
		offset           int64
		lastFetchedEpoch int32
		divergingEpoch   int32
		divergingEnd     int64
	}{
		{"epoch 1 is not here: epoch 0 ends at 3", 5, 1, 0, 3},
		{"epoch 0 ends before the fetch offset", 4, 0, 0, 3},
	} {
		sp := fetch(18, c.offset, c.lastFetchedEpoch)
		if sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch != c.divergingEpoch || sp.DivergingEpoch.EndOffset != c.divergingEnd ||
			len(sp.RecordBatches) != 0 || sp.HighWatermark != 5 || sp.LogStartOffset != 0 {
			t.Errorf("%s: %v, diverging epoch (%d, %d), %d record bytes, high watermark %d, log start %d; "+
				"want no error, (%d, %d), none, 5, 0", c.name, kerr.ErrorForCode(sp.ErrorCode),
				sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset, len(sp.RecordBatches), sp.HighWatermark,
				sp.LogStartOffset, c.divergingEpoch, c.divergingEnd)
		}
	}
	for _, c := range []struct {
		name             string
		version          int16
		offset           int64
		lastFetchedEpoch int32
	}{
		{"epoch 0 reaches the fetch offset", 18, 3, 0},
		{"the latest epoch", 18, 0, 2},
		{"no epoch named", 18, 4, -1},
		{"Fetch v11 carries no epoch", 11, 4, 0},
	} {
		sp := fetch(c.version, c.offset, c.lastFetchedEpoch)
		if sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch != -1 || sp.DivergingEpoch.EndOffset != -1 || len(sp.RecordBatches) == 0 {
			t.Errorf("%s: %v, diverging epoch (%d, %d), %d record bytes; want records and no diverging epoch",
				c.name, kerr.ErrorForCode(sp.ErrorCode), sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset, len(sp.RecordBatches))
		}
	}
	if sp := fetch(18, 5, 7); sp.ErrorCode != kerr.OffsetOutOfRange.Code || len(sp.RecordBatches) != 0 {
		t.Errorf("an epoch above the log's: %v with %d record bytes, want OFFSET_OUT_OF_RANGE and none",
			kerr.ErrorForCode(sp.ErrorCode), len(sp.RecordBatches))
	}
}

// TestDivergingFollowerFetchNotRecorded: a follower's fetch answered with a
// diverging epoch is not a position in the leader's log: it is not
// recorded (Kafka updates the follower's fetch state only without one), so
// the high watermark cannot count records the follower does not have. The
// follower's own fetches are held off by a request hook, so that only the
// test's fetches in its name reach the leader.
func TestDivergingFollowerFetchNotRecorded(t *testing.T) {
	c := startReplicatedCluster(t, 2, map[string]string{"auto.leader.rebalance.enable": "false"})
	c.createAssignedTopic("divrec", [][]int32{{1, 2}}, nil)
	cl := c.client(kgo.DefaultProduceTopic("divrec"), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	leader, follower := c.partitionOn(0, "divrec", 0), c.partitionOn(1, "divrec", 0)
	if !leader.IsLeader() {
		t.Fatal("broker 1 does not lead divrec-0")
	}
	end := leader.Log().LogEndOffset()
	waitFor(t, 10*time.Second, "the follower in sync", func() bool {
		return follower.Log().LogEndOffset() == end && leader.Log().HighWatermark() == end
	})
	c.srvs[0].SetRequestHook(func(info RequestInfo) RequestAction {
		if info.ClientID == "broker-2" && info.Key == int16(kmsg.Fetch) {
			return RequestAction{Delay: 20 * time.Millisecond, Response: kmsg.NewPtrFetchResponse()}
		}
		return RequestAction{}
	})
	defer c.srvs[0].SetRequestHook(nil)
	var brokerEpoch int64 = -1
	for _, b := range c.srvs[0].ctrl.Brokers() {
		if b.NodeID == 2 {
			brokerEpoch = b.Epoch
		}
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	epoch := leader.LeaderEpoch()
	fetchAs2 := func(offset int64) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 2, brokerEpoch
		req.MaxBytes, req.SessionEpoch = 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "divrec", leader.TopicID()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.LastFetchedEpoch, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = offset, epoch, epoch, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch as broker 2: %+v", resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	sp := fetchAs2(end + 50)
	if sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch != epoch || sp.DivergingEpoch.EndOffset != end || len(sp.RecordBatches) != 0 {
		t.Fatalf("a fetch as broker 2 from %d at epoch %d: %v, diverging epoch (%d, %d), %d record bytes; want (%d, %d) and none",
			end+50, epoch, kerr.ErrorForCode(sp.ErrorCode), sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset,
			len(sp.RecordBatches), epoch, end)
	}
	// An acks=1 record: the high watermark may move only once broker 2
	// is known to have it.
	leaderOnly := c.client(kgo.DefaultProduceTopic("divrec"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := leaderOnly.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if leader.Log().LogEndOffset() != end+1 {
		t.Fatalf("leader log end %d, want %d", leader.Log().LogEndOffset(), end+1)
	}
	if hw := leader.Log().HighWatermark(); hw != end {
		t.Fatalf("high watermark %d after the diverging fetch and an acks=1 record, want %d (broker 2 has not fetched it)", hw, end)
	}
	// A fetch that does not diverge is recorded and moves it.
	if sp := fetchAs2(end + 1); sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch != -1 {
		t.Fatalf("a fetch as broker 2 from %d: %v, diverging epoch %d", end+1, kerr.ErrorForCode(sp.ErrorCode), sp.DivergingEpoch.Epoch)
	}
	if hw := leader.Log().HighWatermark(); hw != end+1 {
		t.Fatalf("high watermark %d after broker 2 fetched from %d, want %d", hw, end+1, end+1)
	}
}
