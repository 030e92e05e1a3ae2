package partition

// The workload, Jepsen style: two idempotent acks=all producers writing
// unique values ("i<producer>-p<partition>-<seq>") to every partition, one
// transactional producer committing or aborting small transactions
// ("t<txn>-p<partition>"), and a read_committed group consumer consuming and
// committing all along. Every operation is recorded with its times; the
// checker (check_test.go) compares the history with fresh reads at the end.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type ackRec struct {
	part int32
	off  int64
	val  string
	sent time.Time
	at   time.Time
}

// batchWrite is one successful produce batch: which broker wrote it, when.
type batchWrite struct {
	part   int32
	broker int32
	at     time.Time
}

type seenRec struct {
	off int64
	val string
}

type txnOutcome int

const (
	txnCommitted txnOutcome = iota
	txnAborted
	txnUnknown
)

type workload struct {
	t        *testing.T
	c        *cluster
	topic    string
	parts    int32
	producer int // idempotent producers
	withTxn  bool
	withCons bool
	// acks1 adds a producer with acks=1 whose records nobody checks: its
	// appends make a leader recompute its high watermark while the acks=all
	// produces are parked (a leader that acknowledged alone would show).
	acks1 bool

	mu       sync.Mutex
	sent     map[string]time.Time // every value attempted, to its send time
	acked    []ackRec
	failed   int
	failErrs map[string]int
	writes   []batchWrite
	txns     map[string]txnOutcome // txn value -> outcome of its transaction
	txnCount [3]int
	seen     map[int32][]seenRec // the group consumer, in poll order
	consErrs map[string]int

	stop    chan struct{}
	wg      sync.WaitGroup
	stopped atomic.Bool
}

type writeHook struct{ w *workload }

func (h writeHook) OnProduceBatchWritten(meta kgo.BrokerMetadata, _ string, part int32, _ kgo.ProduceBatchMetrics) {
	h.w.mu.Lock()
	h.w.writes = append(h.w.writes, batchWrite{part: part, broker: meta.NodeID, at: time.Now()})
	h.w.mu.Unlock()
}

func newWorkload(t *testing.T, c *cluster, topic string, parts int32, producers int, withTxn, withCons bool) *workload {
	return &workload{t: t, c: c, topic: topic, parts: parts, producer: producers, withTxn: withTxn, withCons: withCons,
		sent: map[string]time.Time{}, failErrs: map[string]int{}, txns: map[string]txnOutcome{},
		seen: map[int32][]seenRec{}, consErrs: map[string]int{}, stop: make(chan struct{})}
}

// clientOpts lower the back-off and metadata age so that the figures measure
// the brokers, not the client's waits (as compat-tests/cluster does).
func (w *workload) clientOpts() []kgo.Opt {
	var extra []kgo.Opt
	if os.Getenv("STRAIT_PARTITION_KGO_LOG") == "1" { // client logs, to debug a run
		extra = append(extra, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	}
	return append(extra,
		kgo.SeedBrokers(w.c.Seeds()...),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.DialTimeout(time.Second),
		kgo.RequestTimeoutOverhead(2*time.Second),
		// A produce waits at most 4 s at the broker (default 10 s): a
		// client stuck on a cut-off leader gives up and re-routes within
		// the faults' 5-11 s, so the failover times measure the cluster.
		kgo.ProduceRequestTimeout(4*time.Second),
	)
}

func (w *workload) start() {
	for i := 0; i < w.producer; i++ {
		w.wg.Add(1)
		go w.runProducer(i)
	}
	if w.withTxn {
		w.wg.Add(1)
		go w.runTxn()
	}
	if w.withCons {
		w.wg.Add(1)
		go w.runConsumer()
	}
	if w.acks1 {
		w.wg.Add(1)
		go w.runAcks1()
	}
}

func (w *workload) runAcks1() {
	defer w.wg.Done()
	cl, err := kgo.NewClient(append(w.clientOpts(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(5*time.Second))...)
	if err != nil {
		w.t.Error(err)
		return
	}
	defer cl.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var inflight atomic.Int32
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		if inflight.Load() >= 100 {
			continue
		}
		inflight.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: w.topic, Partition: int32(n) % w.parts, Value: []byte(fmt.Sprintf("a1-%d", n))},
			func(*kgo.Record, error) { inflight.Add(-1) })
	}
}

func (w *workload) halt() {
	if w.stopped.CompareAndSwap(false, true) {
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *workload) runProducer(id int) {
	defer w.wg.Done()
	cl, err := kgo.NewClient(append(w.clientOpts(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond),
		kgo.WithHooks(writeHook{w}))...)
	if err != nil {
		w.t.Error(err)
		return
	}
	defer cl.Close()
	var inflight [64]atomic.Int32
	seq := make([]int, w.parts)
	tick := time.NewTicker(4 * time.Millisecond)
	defer tick.Stop()
	p := int32(0)
loop:
	for {
		select {
		case <-w.stop:
			break loop
		case <-tick.C:
		}
		p = (p + 1) % w.parts
		if inflight[p].Load() >= 200 { // bounded while a partition cannot take writes
			continue
		}
		val := fmt.Sprintf("i%d-p%d-%d", id, p, seq[p])
		seq[p]++
		w.produceOne(cl, p, val, &inflight[p])
	}
	// What is still in flight gets 30 s after the last fault was healed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cl.Flush(ctx)
	cancel()
}

func (w *workload) produceOne(cl *kgo.Client, p int32, val string, inflight *atomic.Int32) {
	sent := time.Now()
	w.mu.Lock()
	w.sent[val] = sent
	w.mu.Unlock()
	inflight.Add(1)
	cl.Produce(context.Background(), &kgo.Record{Topic: w.topic, Partition: p, Value: []byte(val)}, func(r *kgo.Record, err error) {
		inflight.Add(-1)
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.failed++
			w.failErrs[err.Error()]++
			return
		}
		w.acked = append(w.acked, ackRec{part: r.Partition, off: r.Offset, val: val, sent: sent, at: now})
	})
}

// runTxn runs transactions of one record per partition, committing about
// two in three. A transaction whose end is not confirmed is "unknown"; after
// one, the client is replaced (a new one with the same transactional id
// fences the old producer and aborts what it left open).
func (w *workload) runTxn() {
	defer w.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(append(w.clientOpts(),
			kgo.TransactionalID(w.topic+"-txn"),
			kgo.TransactionTimeout(10*time.Second),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		if err != nil {
			w.t.Error(err)
		}
		return cl
	}
	cl := newClient()
	if cl == nil {
		return
	}
	defer func() { cl.Close() }()
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		case <-time.After(150 * time.Millisecond):
		}
		commit := rng.IntN(3) != 0
		vals := make([]string, w.parts)
		for p := range vals {
			vals[p] = fmt.Sprintf("t%d-p%d", n, p)
		}
		outcome := w.oneTxn(cl, vals, commit)
		w.mu.Lock()
		for _, v := range vals {
			w.txns[v] = outcome
		}
		w.txnCount[outcome]++
		w.mu.Unlock()
		if outcome == txnUnknown {
			cl.Close()
			if cl = newClient(); cl == nil {
				return
			}
		}
	}
}

func (w *workload) oneTxn(cl *kgo.Client, vals []string, commit bool) txnOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return txnUnknown
	}
	w.mu.Lock()
	for _, v := range vals {
		w.sent[v] = time.Now()
	}
	w.mu.Unlock()
	var produceErr error
	var emu sync.Mutex
	for p, v := range vals {
		cl.Produce(ctx, &kgo.Record{Topic: w.topic, Partition: int32(p), Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				emu.Lock()
				produceErr = errors.Join(produceErr, err)
				emu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil || produceErr != nil {
		commit = false
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if !commit {
		// Records that never reached a broker are dropped before aborting.
		if err := cl.AbortBufferedRecords(ctx); err != nil {
			return txnUnknown
		}
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		return txnUnknown
	}
	if commit {
		return txnCommitted
	}
	return txnAborted
}

func (w *workload) runConsumer() {
	defer w.wg.Done()
	cl, err := kgo.NewClient(append(w.clientOpts(),
		kgo.ConsumerGroup(w.topic+"-group"),
		kgo.ConsumeTopics(w.topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(time.Second),
		kgo.SessionTimeout(10*time.Second),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		w.t.Error(err)
		return
	}
	defer cl.Close()
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		w.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				w.consErrs[err.Error()]++
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			w.seen[r.Partition] = append(w.seen[r.Partition], seenRec{off: r.Offset, val: string(r.Value)})
		})
		w.mu.Unlock()
	}
}

// sentinels writes one last record per partition (after every fault is
// healed) and returns its offset+1 per partition: the end a fresh reader
// must reach, which is a data record and not a transaction marker.
func (w *workload) sentinels() map[int32]int64 {
	w.t.Helper()
	cl, err := kgo.NewClient(append(w.clientOpts(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		w.t.Fatal(err)
	}
	defer cl.Close()
	ends := map[int32]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := int32(0); p < w.parts; p++ {
		r := &kgo.Record{Topic: w.topic, Partition: p, Value: []byte(fmt.Sprintf("end-p%d", p))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			w.t.Fatalf("sentinel record for partition %d after healing: %v", p, err)
		}
		ends[p] = r.Offset + 1
	}
	return ends
}

// readAll reads every partition from offset 0 up to its sentinel with a fresh
// client at the given isolation level: partition -> offset -> value.
func readAll(t *testing.T, c *cluster, topic string, ends map[int32]int64, committed bool) map[int32]map[int64]string {
	t.Helper()
	parts := map[string]map[int32]kgo.Offset{topic: {}}
	for p := range ends {
		parts[topic][p] = kgo.NewOffset().At(0)
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(iso),
		kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[int32]map[int64]string{}
	done := map[int32]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for len(done) < len(ends) {
		if time.Now().After(deadline) {
			t.Fatalf("fresh read (read_committed %v) did not reach every sentinel in 90 s: done %v of %v", committed, done, ends)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if out[r.Partition] == nil {
				out[r.Partition] = map[int64]string{}
			}
			out[r.Partition][r.Offset] = string(r.Value)
			if r.Offset+1 >= ends[r.Partition] {
				done[r.Partition] = true
			}
		})
	}
	return out
}
