package straittest_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// logDirReplicas is where DescribeLogDirs lists topic's partition p: the
// dir of its current replica, and the dir, lag and size of its future
// replica ("" when there is none).
type logDirReplicas struct {
	current, future string
	lag, size       int64
}

func describeReplicas(t *testing.T, c *straittest.Cluster, cl *kgo.Client, id int32, topic string, p int32) logDirReplicas {
	t.Helper()
	var out logDirReplicas
	for _, d := range describeLogDirs(t, c, cl, id).Dirs {
		for _, dt := range d.Topics {
			for _, dp := range dt.Partitions {
				if dt.Topic != topic || dp.Partition != p {
					continue
				}
				if dp.IsFuture {
					out.future, out.lag, out.size = filepath.Clean(d.Dir), dp.OffsetLag, dp.Size
				} else {
					out.current = filepath.Clean(d.Dir)
				}
			}
		}
	}
	return out
}

// waitMoved waits (a minute at most) until broker id's replica of topic's
// partition p is in dir and no future replica of it is left.
func waitMoved(t *testing.T, c *straittest.Cluster, cl *kgo.Client, id int32, topic string, p int32, dir string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := describeReplicas(t, c, cl, id, topic, p)
		if r.current == filepath.Clean(dir) && r.future == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-%d not moved to %s: DescribeLogDirs says %+v", topic, p, dir, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFuture waits (20 s at most) until DescribeLogDirs shows a future
// replica of topic's partition p in dir behind the current one in from.
func waitFuture(t *testing.T, c *straittest.Cluster, cl *kgo.Client, id int32, topic string, p int32, from, dir string) logDirReplicas {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := describeReplicas(t, c, cl, id, topic, p)
		if r.future == filepath.Clean(dir) && r.current == filepath.Clean(from) && r.lag > 0 {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("no future replica of %s-%d in %s: DescribeLogDirs says %+v", topic, p, dir, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// setAlterLogDirsThrottle sets (or, with "", deletes) broker id's
// replica.alter.log.dirs.io.max.bytes.per.second and waits until the
// broker describes it so.
func setAlterLogDirsThrottle(t *testing.T, c *straittest.Cluster, id int32, v string) {
	t.Helper()
	const key = "replica.alter.log.dirs.io.max.bytes.per.second"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ac := kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: kadm.StringPtr(v)}
	if v == "" {
		ac = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}
	}
	if _, err := c.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{ac}, id); err != nil {
		t.Fatalf("AlterConfigs %s=%q: %v", key, v, err)
	}
	for {
		rcs, err := c.Admin().DescribeBrokerConfigs(ctx, id)
		if err == nil {
			got := ""
			for _, rc := range rcs {
				for _, cfg := range rc.Configs {
					if cfg.Key == key && cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig && cfg.Value != nil {
						got = *cfg.Value
					}
				}
			}
			if got == v {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s=%q not described by broker %d", key, v, id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alterLogDir sends AlterReplicaLogDirs for topic's partition p to dir and
// returns its error code.
func alterLogDir(t *testing.T, cl *kgo.Client, id int32, dir, topic string, p int32) int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	rd := kmsg.NewAlterReplicaLogDirsRequestDir()
	rd.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	rd.Topics = append(rd.Topics, rt)
	req.Dirs = append(req.Dirs, rd)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// produceBig writes records from..to-1 of 1 KiB (values "<i>:" and
// padding) to partition 0 of topic, in batches of ten (so that a move copies
// the log in several steps).
func produceBig(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := from; i < to; i += 10 {
		var recs []*kgo.Record
		for j := i; j < min(i+10, to); j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(j) + ":" + strings.Repeat("x", 1024))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %d..%d: %v", i, i+len(recs), err)
		}
	}
}

// keyOf is the number a produceBig or move-test value starts with.
func keyOf(v []byte) string { s, _, _ := strings.Cut(string(v), ":"); return s }

// A move between log dirs is live, as Kafka's: throttled by
// replica.alter.log.dirs.io.max.bytes.per.second so that it cannot finish,
// DescribeLogDirs shows the future replica in the destination with its lag
// while the partition keeps taking produce and serving fetch from its
// current dir; unthrottled, the future log catches up and is swapped in,
// and every acknowledged record reads back from the new dir.
func TestAlterReplicaLogDirsLive(t *testing.T) {
	const topic = "live-move"
	// 64 KiB copied at a time: the 600 KiB log takes several copies.
	c := straittest.StartCluster(t, 1, straittest.WithLogDirs(2), straittest.WithTopic(topic, 1, 1),
		straittest.WithConfig("replica.fetch.max.bytes", "65536"))
	c.WaitLeader(topic, 0, 20*time.Second)
	dirs := c.Broker(1).LogDirs()
	// Uncompressed, so that the log is as large as the records.
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	from := waitDirOf(dirs, topic, 0)
	to := dirs[0]
	if from == to {
		to = dirs[1]
	}
	produceBig(t, cl, topic, 0, 600)
	setAlterLogDirsThrottle(t, c, 1, "1")

	// Produce on, acks=all, for the whole move.
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for i := 600; i < 100_000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := strconv.Itoa(i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v + ":live")}).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			mu.Lock()
			acked[v] = true
			mu.Unlock()
		}
	})
	defer func() { close(stop); wg.Wait() }()

	if code := alterLogDir(t, cl, 1, to, topic, 0); code != 0 {
		t.Fatalf("move to %s: error %d", to, code)
	}
	r := waitFuture(t, c, cl, 1, topic, 0, from, to)
	t.Logf("future replica: %+v", r)
	entries, _ := os.ReadDir(to)
	found := false
	for _, e := range entries {
		found = found || (strings.HasPrefix(e.Name(), topic+"-0.") && strings.HasSuffix(e.Name(), "-future"))
	}
	if !found {
		t.Errorf("no %s-0.<id>-future directory in %s", topic, to)
	}
	// The partition takes records and serves fetches during the move.
	before := ackedCount()
	deadline := time.Now().Add(20 * time.Second)
	for ackedCount() < before+50 {
		if time.Now().After(deadline) {
			t.Fatalf("produce stalled during the move: %d acked, was %d", ackedCount(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen := consumeValues(t, c, topic, 650)
	if len(seen) < 650 {
		t.Fatalf("fetch during the move read %d distinct values", len(seen))
	}
	if r := describeReplicas(t, c, cl, 1, topic, 0); r.future != filepath.Clean(to) || r.current != filepath.Clean(from) {
		t.Fatalf("the move ended while throttled: %+v", r)
	}

	setAlterLogDirsThrottle(t, c, 1, "")
	waitMoved(t, c, cl, 1, topic, 0, to)
	if got := dirOf(dirs, topic, 0); got != to {
		t.Fatalf("after the move the partition directory is in %q, want %q", got, to)
	}
	// Records keep coming after the swap.
	before = ackedCount()
	deadline = time.Now().Add(20 * time.Second)
	for ackedCount() < before+50 {
		if time.Now().After(deadline) {
			t.Fatalf("produce stalled after the move: %d acked, was %d", ackedCount(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	mu.Lock()
	n := len(acked)
	want := make([]string, 0, n+600)
	for v := range acked {
		want = append(want, v)
	}
	mu.Unlock()
	for i := range 600 {
		want = append(want, strconv.Itoa(i))
	}
	cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	deadline = time.Now().Add(time.Minute)
	for len(got) < len(want) && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[keyOf(r.Value)] = true })
	}
	for _, v := range want {
		if !got[v] {
			t.Fatalf("acknowledged record %s not read back after the move (%d of %d read)", v, len(got), len(want))
		}
	}
	t.Logf("%d records acknowledged during the move, all read back from %s", n, to)
}

// A broker killed in the middle of a move resumes it at restart, as Kafka
// reloads its future logs: the future replica is listed again, and once
// unthrottled the move completes with every record in place.
func TestAlterReplicaLogDirsResumedAfterCrash(t *testing.T) {
	const topic = "crash-move"
	c := straittest.StartCluster(t, 1, straittest.WithLogDirs(2), straittest.WithTopic(topic, 1, 1),
		straittest.WithConfig("replica.fetch.max.bytes", "65536"))
	c.WaitLeader(topic, 0, 20*time.Second)
	dirs := c.Broker(1).LogDirs()
	// Uncompressed, so that the log is as large as the records.
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	from := waitDirOf(dirs, topic, 0)
	to := dirs[0]
	if from == to {
		to = dirs[1]
	}
	produceBig(t, cl, topic, 0, 600)
	setAlterLogDirsThrottle(t, c, 1, "1")
	if code := alterLogDir(t, cl, 1, to, topic, 0); code != 0 {
		t.Fatalf("move to %s: error %d", to, code)
	}
	waitFuture(t, c, cl, 1, topic, 0, from, to)

	c.Kill(1)
	c.Restart(1)
	c.WaitLeader(topic, 0, 20*time.Second)
	r := waitFuture(t, c, cl, 1, topic, 0, from, to)
	t.Logf("resumed future replica: %+v", r)
	produceBig(t, cl, topic, 600, 700)

	setAlterLogDirsThrottle(t, c, 1, "")
	waitMoved(t, c, cl, 1, topic, 0, to)
	entries, _ := os.ReadDir(to)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-future") {
			t.Errorf("%s left in %s", e.Name(), to)
		}
	}
	cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]int{}
	deadline := time.Now().Add(time.Minute)
	for len(got) < 700 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[keyOf(r.Value)]++ })
	}
	for i := range 700 {
		if got[strconv.Itoa(i)] != 1 {
			t.Fatalf("record %d read %d times after the resumed move", i, got[strconv.Itoa(i)])
		}
	}
}

// A follower's replica moves too: its future log copies the current one
// while the replica fetcher appends to that, and after the swap the
// replica follows again from its new dir and rejoins the ISR; every record
// is there.
func TestAlterReplicaLogDirsFollower(t *testing.T) {
	const topic = "follower-move"
	c := straittest.StartCluster(t, 3, straittest.WithLogDirs(2), straittest.WithTopic(topic, 1, 3),
		straittest.WithConfig("replica.fetch.max.bytes", "65536"))
	leader := c.WaitLeader(topic, 0, 20*time.Second)
	c.WaitISR(topic, 0, 3, 20*time.Second)
	follower := int32(1)
	if follower == leader {
		follower = 2
	}
	dirs := c.Broker(follower).LogDirs()
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	from := waitDirOf(dirs, topic, 0)
	to := dirs[0]
	if from == to {
		to = dirs[1]
	}
	produceBig(t, cl, topic, 0, 300)
	if code := alterLogDir(t, cl, follower, to, topic, 0); code != 0 {
		t.Fatalf("move to %s: error %d", to, code)
	}
	produceBig(t, cl, topic, 300, 600) // while the follower's future log copies
	waitMoved(t, c, cl, follower, topic, 0, to)
	if got := dirOf(dirs, topic, 0); got != to {
		t.Fatalf("the follower's partition directory is in %q, want %q", got, to)
	}
	produceBig(t, cl, topic, 600, 700)
	c.WaitISR(topic, 0, 3, 30*time.Second)
	// The moved follower is left alone, so that what it holds is read.
	for _, b := range c.Brokers() {
		if b.ID() != follower {
			c.Stop(b.ID())
		}
	}
	c.WaitLeader(topic, 0, 30*time.Second, follower)
	cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]int{}
	deadline := time.Now().Add(time.Minute)
	for len(got) < 700 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[keyOf(r.Value)]++ })
	}
	for i := range 700 {
		if got[strconv.Itoa(i)] == 0 {
			t.Fatalf("record %d lost after the follower's move and the leader's stop", i)
		}
	}
}
