package straittest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strait/strait/straittest"
)

// describeLogDirs asks broker id for its log dirs.
func describeLogDirs(t *testing.T, c *straittest.Cluster, cl *kgo.Client, id int32) *kmsg.DescribeLogDirsResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		// Once more: the client's connection may predate a restart.
		resp, err = req.RequestWith(ctx, cl.Broker(int(id)))
	}
	if err != nil {
		t.Fatalf("DescribeLogDirs to broker %d: %v", id, err)
	}
	return resp
}

// dirOf returns which of dirs holds topic's partition p (by its directory).
func dirOf(dirs []string, topic string, p int32) string {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, fmt.Sprintf("%s-%d", topic, p))); err == nil {
			return d
		}
	}
	return ""
}

// waitDirOf is dirOf once the broker has opened the partition (within 20 s),
// "" if it did not.
func waitDirOf(dirs []string, topic string, p int32) string {
	deadline := time.Now().Add(20 * time.Second)
	for {
		if d := dirOf(dirs, topic, p); d != "" || time.Now().After(deadline) {
			return d
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// produceValues produces values from..to-1 (as decimal strings) to topic,
// spread over its partitions, each acknowledged by all in-sync replicas.
func produceValues(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d..%d: %v", from, to, err)
	}
}

// consumeValues reads topic from the start until it has n records (within
// a minute) and returns how many times each value was seen.
func consumeValues(t *testing.T, c *straittest.Cluster, topic string, n int) map[string]int {
	t.Helper()
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	total := 0
	deadline := time.Now().Add(60 * time.Second)
	for total < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; total++ })
	}
	if total < n {
		t.Fatalf("consumed %d of %d records", total, n)
	}
	return seen
}

// A JBOD broker whose second disk dies keeps serving the partitions of its
// other log dir, the failed partitions' leadership moves to the other
// replicas, and clients keep producing and consuming every partition
// (Kafka 3.7+'s JBOD handling).
func TestJBODFailedLogDir(t *testing.T) {
	const topic = "jbod"
	c := straittest.StartCluster(t, 3, straittest.WithFaultyDisks(), straittest.WithLogDirs(2),
		straittest.WithTopic(topic, 6, 3))
	b1 := c.Broker(1)
	dirs := b1.LogDirs()
	// New partitions go to the dir with the fewest: 3 and 3.
	byDir := map[string][]int32{}
	for p := int32(0); p < 6; p++ {
		d := waitDirOf(dirs, topic, p)
		if d == "" {
			t.Fatalf("partition %d is in none of broker 1's log dirs %v", p, dirs)
		}
		byDir[d] = append(byDir[d], p)
	}
	if len(byDir[dirs[0]]) != 3 || len(byDir[dirs[1]]) != 3 {
		t.Fatalf("partitions by log dir: %v, want 3 in each", byDir)
	}
	// The dir to fail holds a partition broker 1 leads (preferred leaders
	// rotate: it leads 2 of the 6).
	// The raw Produce below names its topic: up to v12 (v13 goes by id).
	byName := kversion.V4_4_0()
	byName.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxVersions(byName))
	failIdx := -1
	for p := int32(0); p < 6 && failIdx < 0; p++ {
		if c.Leader(topic, p) == 1 {
			failIdx = slices.Index(dirs, dirOf(dirs, topic, p))
		}
	}
	if failIdx < 0 {
		t.Fatal("broker 1 leads no partition")
	}
	failed, kept := byDir[dirs[failIdx]], byDir[dirs[1-failIdx]]
	produceValues(t, cl, topic, 0, 600)

	b1.Disk().FailDir(dirs[failIdx])
	for _, p := range failed {
		st := c.WaitLeader(topic, p, 20*time.Second, 2, 3)
		if st == 1 {
			t.Fatalf("partition %d still led by broker 1", p)
		}
	}
	// Broker 1 no longer replicates the failed partitions: it left their ISRs.
	for _, p := range failed {
		c.WaitISR(topic, p, 2, 20*time.Second)
		if slices.Contains(c.ISR(topic, p), 1) {
			t.Fatalf("partition %d: broker 1 still in the ISR %v", p, c.ISR(topic, p))
		}
	}
	// The other dir's partitions keep broker 1 in their ISR and as leader
	// where it led.
	for _, p := range kept {
		if st := c.WaitISR(topic, p, 3, 20*time.Second); !slices.Contains(st.ISR, 1) {
			t.Fatalf("partition %d of the healthy dir: ISR %v without broker 1", p, st.ISR)
		}
	}
	if !b1.Running() {
		t.Fatal("broker 1 stopped")
	}
	// Broker 1 answers for a replica of its failed dir as Kafka does for an
	// offline replica.
	preq := produceRequest(topic)
	preq.Topics[0].Partitions[0].Partition = failed[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	presp, err := preq.RequestWith(ctx, cl.Broker(1))
	cancel()
	if err != nil {
		t.Fatalf("produce to broker 1: %v", err)
	}
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Errorf("produce to broker 1's offline replica of %d: error %d, want KAFKA_STORAGE_ERROR", failed[0], code)
	}
	resp := describeLogDirs(t, c, cl, 1)
	for _, d := range resp.Dirs {
		switch filepath.Clean(d.Dir) {
		case filepath.Clean(dirs[failIdx]):
			if d.ErrorCode != kerr.KafkaStorageError.Code {
				t.Errorf("failed dir %s: error %d, want KAFKA_STORAGE_ERROR", d.Dir, d.ErrorCode)
			}
		case filepath.Clean(dirs[1-failIdx]):
			var got []int32
			for _, dt := range d.Topics {
				for _, dp := range dt.Partitions {
					if dt.Topic == topic {
						got = append(got, dp.Partition)
					}
				}
			}
			slices.Sort(got)
			if d.ErrorCode != 0 || !slices.Equal(got, kept) {
				t.Errorf("healthy dir %s: error %d, partitions %v, want %v", d.Dir, d.ErrorCode, got, kept)
			}
		default:
			t.Errorf("unexpected dir %s", d.Dir)
		}
	}
	// AlterReplicaLogDirs answers KAFKA_STORAGE_ERROR for a move into the
	// failed dir and for a replica that was in it.
	for _, tc := range []struct {
		dir string
		p   int32
	}{{dirs[failIdx], kept[0]}, {dirs[1-failIdx], failed[0]}} {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		rd := kmsg.NewAlterReplicaLogDirsRequestDir()
		rd.Dir = tc.dir
		rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		rt.Topic, rt.Partitions = topic, []int32{tc.p}
		rd.Topics = append(rd.Topics, rt)
		req.Dirs = append(req.Dirs, rd)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		aresp, err := req.RequestWith(ctx, cl.Broker(1))
		cancel()
		if err != nil {
			t.Fatalf("AlterReplicaLogDirs: %v", err)
		}
		if code := aresp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
			t.Errorf("move of %d to %s: error %d, want KAFKA_STORAGE_ERROR", tc.p, tc.dir, code)
		}
	}
	// Clients go on: every partition takes records and every record reads back.
	produceValues(t, cl, topic, 600, 1200)
	seen := consumeValues(t, c, topic, 1200)
	for i := range 1200 {
		if seen[strconv.Itoa(i)] == 0 {
			t.Fatalf("record %d lost", i)
		}
	}
	if err := b1.Server().Err(); err != nil {
		select {
		case e := <-err:
			t.Fatalf("broker 1 failed: %v", e)
		default:
		}
	}
}

// AlterReplicaLogDirs moves a partition from one log dir to the other and
// back while an idempotent producer writes to it (acks=all): every record is
// read back exactly once, the partition serves from its new dir, and the
// requests' errors are Kafka's. On one broker, and on the leader of three
// replicas (its followers fetch across the move).
func TestAlterReplicaLogDirsUnderProduce(t *testing.T) {
	t.Run("one broker", func(t *testing.T) { testMoveUnderProduce(t, 1) })
	t.Run("leader of three", func(t *testing.T) { testMoveUnderProduce(t, 3) })
}

func testMoveUnderProduce(t *testing.T, brokers int) {
	const topic = "moving"
	c := straittest.StartCluster(t, brokers, straittest.WithLogDirs(2), straittest.WithTopic(topic, 1, int16(brokers)))
	leader := c.WaitLeader(topic, 0, 20*time.Second)
	if brokers > 1 {
		c.WaitISR(topic, 0, brokers, 20*time.Second)
	}
	dirs := c.Broker(leader).LogDirs()
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000))
	from := waitDirOf(dirs, topic, 0)
	if from == "" {
		t.Fatal("partition 0 in no log dir")
	}
	to := dirs[0]
	if from == to {
		to = dirs[1]
	}
	alter := func(dir, topic string, p int32) int16 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		rd := kmsg.NewAlterReplicaLogDirsRequestDir()
		rd.Dir = dir
		rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		rt.Topic, rt.Partitions = topic, []int32{p}
		rd.Topics = append(rd.Topics, rt)
		req.Dirs = append(req.Dirs, rd)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			t.Fatalf("AlterReplicaLogDirs: %v", err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := alter(filepath.Join(t.TempDir(), "nope"), topic, 0); code != kerr.LogDirNotFound.Code {
		t.Errorf("unknown dir: error %d, want LOG_DIR_NOT_FOUND", code)
	}
	if code := alter(to, "no-such-topic", 0); code != kerr.ReplicaNotAvailable.Code {
		t.Errorf("unknown partition: error %d, want REPLICA_NOT_AVAILABLE", code)
	}

	const n = 3000
	var wg sync.WaitGroup
	produced := make(chan error, 1)
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var err error
		for i := 0; i < n && err == nil; i += 50 {
			var recs []*kgo.Record
			for j := i; j < i+50; j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(j))})
			}
			err = cl.ProduceSync(ctx, recs...).FirstErr()
		}
		produced <- err
	})
	// Move while records arrive: after some are in, twice.
	waitOffset := func(min int64) {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			offs, err := c.Admin().ListEndOffsets(context.Background(), topic)
			if err == nil {
				if o, ok := offs.Lookup(topic, 0); ok && o.Offset >= min {
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("end offset %d not reached", min)
	}
	waitOffset(500)
	if code := alter(to, topic, 0); code != 0 {
		t.Fatalf("move to %s: error %d", to, code)
	}
	waitMoved(t, c, cl, leader, topic, 0, to)
	if got := dirOf(dirs, topic, 0); got != to {
		t.Fatalf("after the move the partition is in %q, want %q", got, to)
	}
	waitOffset(1500)
	if code := alter(from, topic, 0); code != 0 {
		t.Fatalf("move back to %s: error %d", from, code)
	}
	waitMoved(t, c, cl, leader, topic, 0, from)
	wg.Wait()
	if err := <-produced; err != nil {
		t.Fatalf("producer: %v", err)
	}
	if got := dirOf(dirs, topic, 0); got != from {
		t.Fatalf("after moving back the partition is in %q, want %q", got, from)
	}
	if brokers == 1 {
		// A restart opens the partition where it now is and removes what
		// an interrupted deletion leaves behind, and a future log that is
		// not this topic's (no partition.metadata of its own).
		leftovers := []string{filepath.Join(to, topic+"-0.0123456789abcdef0123456789abcdef-future"),
			filepath.Join(from, "gone-0.0123456789abcdef0123456789abcdef-delete")}
		for _, d := range leftovers {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		c.Restart(1)
		c.WaitLeader(topic, 0, 20*time.Second)
		for _, d := range leftovers {
			deadline := time.Now().Add(20 * time.Second)
			for _, err := os.Stat(d); err == nil; _, err = os.Stat(d) {
				if time.Now().After(deadline) {
					t.Fatalf("%s still there after the restart", d)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if got := dirOf(dirs, topic, 0); got != from {
			t.Fatalf("after the restart the partition is in %q, want %q", got, from)
		}
	}
	seen := consumeValues(t, c, topic, n)
	for i := range n {
		if k := seen[strconv.Itoa(i)]; k != 1 {
			t.Fatalf("record %d read %d times", i, k)
		}
	}
	if brokers > 1 {
		// The followers caught up with the moved leader.
		st := c.WaitISR(topic, 0, brokers, 20*time.Second)
		if st.Leader != leader {
			t.Errorf("leader %d after the moves, want %d", st.Leader, leader)
		}
	}
	// DescribeLogDirs lists it where it is, with its size.
	resp := describeLogDirs(t, c, cl, leader)
	for _, d := range resp.Dirs {
		for _, dt := range d.Topics {
			if dt.Topic != topic {
				continue
			}
			if filepath.Clean(d.Dir) != filepath.Clean(from) || dt.Partitions[0].Size <= 0 || dt.Partitions[0].IsFuture {
				t.Errorf("DescribeLogDirs: %s/%d in %s, size %d, future %v", topic, dt.Partitions[0].Partition, d.Dir, dt.Partitions[0].Size, dt.Partitions[0].IsFuture)
			}
		}
	}
}
