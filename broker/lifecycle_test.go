package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Lifecycle tests: Close waits for every goroutine the broker started and
// releases every descriptor (a broker, and a three-broker cluster, started
// and closed 20 times with traffic each round), and Err reports the fatal
// errors (a listener closed underneath, every log dir gone).

// lifecycleRounds is how many times the one-broker leak test starts and
// closes a broker (about 0.2 s a round), clusterRounds the three-broker one
// (7 to 8 s a round on two cores: the members' start 2 s, each close 1 s,
// and the last broker to close waits 2 s more for its lease revocation,
// which has no etcd quorum left).
const (
	lifecycleRounds = 20
	clusterRounds   = 20
)

// lifecycleProps are the settings of the leak tests' brokers: a small
// __consumer_offsets and no initial rebalance delay keep a round short.
var lifecycleProps = map[string]string{
	"offsets.topic.num.partitions":         "2",
	"transaction.state.log.num.partitions": "2",
	"group.initial.rebalance.delay.ms":     "0",
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting descriptors: %v", err)
	}
	return len(entries)
}

// goroutineStacks returns every goroutine's stack by goroutine id.
func goroutineStacks() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		header, _, _ := bytes.Cut(g, []byte("\n"))
		fields := strings.Fields(string(header))
		if len(fields) >= 2 && fields[0] == "goroutine" {
			out[fields[1]] = string(g)
		}
	}
	return out
}

// leakBaseline is the goroutines and descriptors of the process before a
// leak test's rounds.
type leakBaseline struct {
	goroutines map[string]string
	fds        int
}

func takeBaseline(t *testing.T) leakBaseline {
	return leakBaseline{goroutines: goroutineStacks(), fds: openFDs(t)}
}

// check waits up to 10 s for the goroutines and descriptors to be back at
// the baseline (within slack goroutines: the runtime's and the test
// framework's come and go) and fails printing the stacks of the goroutines
// that are not in the baseline.
func (b leakBaseline) check(t *testing.T, what string) {
	t.Helper()
	const slack = 2
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, fds := runtime.NumGoroutine(), openFDs(t)
		if g <= len(b.goroutines)+slack && fds <= b.fds {
			return
		}
		if time.Now().After(deadline) {
			var leaked []string
			for id, st := range goroutineStacks() {
				if _, ok := b.goroutines[id]; !ok {
					leaked = append(leaked, st)
				}
			}
			links, _ := os.ReadDir("/proc/self/fd")
			var names []string
			for _, l := range links {
				if dst, err := os.Readlink("/proc/self/fd/" + l.Name()); err == nil {
					names = append(names, l.Name()+" -> "+dst)
				}
			}
			t.Fatalf("%s: %d goroutines (baseline %d), %d descriptors (baseline %d)\nnew goroutines:\n%s\n\ndescriptors:\n%s",
				what, g, len(b.goroutines), fds, b.fds, strings.Join(leaked, "\n\n"), strings.Join(names, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lifecycleTraffic produces to a new topic, consumes it in a consumer
// group (a join, a sync, offset commits) and closes the clients.
func lifecycleTraffic(t *testing.T, seeds []string, topic string, rf int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 2, rf, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
	const n = 20
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("value")}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup("lifecycle-"+topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := 0
	for got < n {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// startLifecycleBroker starts one broker with its logs and etcd in dir.
func startLifecycleBroker(t *testing.T, dir string) *Server {
	t.Helper()
	return startTestBroker(t, lifecycleProps, map[string]string{"log.dirs": dir})
}

func TestLifecycleBrokerLeaksNothing(t *testing.T) {
	// A first round starts what the process keeps once used (the
	// libraries' package-level goroutines), then the baseline is taken.
	warm := startLifecycleBroker(t, t.TempDir())
	lifecycleTraffic(t, []string{warm.Addr()}, "warmup", 1)
	if err := warm.Close(); err != nil {
		t.Fatal(err)
	}
	base := takeBaseline(t)
	start := time.Now()
	for round := range lifecycleRounds {
		dir := t.TempDir()
		srv := startLifecycleBroker(t, dir)
		lifecycleTraffic(t, []string{srv.Addr()}, fmt.Sprintf("round-%d", round), 1)
		if err := srv.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		noErr(t, srv, 0, fmt.Sprintf("in round %d after a clean run", round))
		os.RemoveAll(dir)
		base.check(t, fmt.Sprintf("after round %d", round))
	}
	t.Logf("%d rounds of one broker in %v", lifecycleRounds, time.Since(start))
}

func TestLifecycleClusterLeaksNothing(t *testing.T) {
	run := func(round int) {
		c := startLifecycleCluster(t, 3)
		addrs := make([]string, len(c))
		for i, s := range c {
			addrs[i] = s.Addr()
		}
		lifecycleTraffic(t, addrs, fmt.Sprintf("round-%d", round), 3)
		// One after another, as a rolling restart: each but the last
		// closes with the etcd quorum still there.
		for i, s := range c {
			if err := s.Close(); err != nil {
				t.Fatalf("round %d: Close of broker %d: %v", round, i+1, err)
			}
		}
	}
	run(-1)
	base := takeBaseline(t)
	start := time.Now()
	for round := range clusterRounds {
		run(round)
		base.check(t, fmt.Sprintf("after round %d", round))
	}
	t.Logf("%d rounds of three brokers in %v", clusterRounds, time.Since(start))
}

// startLifecycleCluster starts n brokers whose embedded etcd members form
// one cluster, with the leak tests' small settings and fast etcd timings.
func startLifecycleCluster(t *testing.T, n int) []*Server {
	t.Helper()
	srvs, _ := startEtcdCluster(t, n, lifecycleProps, map[string]string{
		"etcd.heartbeat.interval":  "20",
		"etcd.election.timeout":    "200",
		"replica.fetch.backoff.ms": "100",
	})
	return srvs
}

// TestErrReportsClosedListener: a listener that stops for good (here
// closed underneath the broker) is fatal: Err reports it.
func TestErrReportsClosedListener(t *testing.T) {
	srv := startLifecycleBroker(t, t.TempDir())
	defer srv.Close()
	srv.listeners[0].ln.Close()
	err := awaitErr(t, srv, 10*time.Second, "the closed listener")
	if !errors.Is(err, net.ErrClosed) || !strings.Contains(err.Error(), "listener PLAINTEXT") {
		t.Fatalf("Err: %v, want the listener's error", err)
	}
}

// TestErrReportsEveryLogDirGone: with one of two log dirs removed the
// broker goes on; with both removed, Err reports it (Kafka halts once every
// log dir is offline).
func TestErrReportsEveryLogDirGone(t *testing.T) {
	setForTest(t, &logDirCheckInterval, 20*time.Millisecond)
	a, b := t.TempDir(), t.TempDir()
	srv := startTestBroker(t, lifecycleProps, map[string]string{"log.dirs": a + "," + b, "etcd.data.dir": t.TempDir()})
	defer srv.Close()
	if err := os.RemoveAll(a); err != nil {
		t.Fatal(err)
	}
	noErr(t, srv, 300*time.Millisecond, "with one log dir left")
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	if err := awaitErr(t, srv, 10*time.Second, "every log dir gone"); !strings.Contains(err.Error(), "all log dirs") {
		t.Fatalf("Err: %v, want all log dirs failed", err)
	}
}

// TestCloseDropsAClientThatDoesNotRead: a client that pipelines fetches and
// never reads their responses holds the connection's writer on a full
// socket; Close gives it connDrainTimeout, then closes the connection and
// returns, leaving no goroutine behind.
func TestCloseDropsAClientThatDoesNotRead(t *testing.T) {
	setForTest(t, &connDrainTimeout, 300*time.Millisecond)
	base := takeBaseline(t)
	srv := startLifecycleBroker(t, t.TempDir())
	closed := false
	defer func() {
		if !closed {
			srv.Close()
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.DefaultProduceTopic("big"), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "big"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	value := bytes.Repeat([]byte("x"), 900<<10)
	for range 4 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	for corr := range int32(maxInFlight) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 64<<20, -1
		tp := kmsg.NewFetchRequestTopicPartition()
		tp.PartitionMaxBytes = 64 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.Partitions = "big", []kmsg.FetchRequestTopicPartition{tp}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		frame := binary.BigEndian.AppendUint32(nil, 0)
		frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
		frame = binary.BigEndian.AppendUint16(frame, uint16(req.GetVersion()))
		frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
		frame = binary.BigEndian.AppendUint16(frame, uint16(len("slow")))
		frame = append(frame, "slow"...)
		frame = req.AppendTo(frame)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(frame); err != nil {
			t.Fatalf("request %d: %v", corr, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the writer fills the socket
	start := time.Now()
	closed = true
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v with a client that does not read", took)
	}
	nc.Close()
	base.check(t, "after Close")
}
