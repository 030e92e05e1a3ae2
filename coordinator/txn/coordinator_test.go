package txn

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is an in-memory __transaction_state.
type memLog struct {
	mu      sync.Mutex
	batches map[int32][][]byte
	epoch   int32
	fail    error
}

func newMemLog() *memLog { return &memLog{batches: map[int32][][]byte{}, epoch: 1} }

func (l *memLog) Partitions() int32 { return 50 }
func (l *memLog) LeaderEpoch(int32) (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch, true
}
func (l *memLog) Append(p int32, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.batches[p] = append(l.batches[p], slices.Clone(b))
	return nil
}
func (l *memLog) ReadFrom(p int32, _ int64, fn func([]byte) error) error {
	l.mu.Lock()
	bs := slices.Clone(l.batches[p])
	l.mu.Unlock()
	for _, b := range bs {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// memBroker records markers and hands out producer ids.
type memBroker struct {
	mu      sync.Mutex
	nextID  int64
	markers []string
	block   chan struct{} // non-nil: WriteMarker waits on it
}

func (b *memBroker) NewProducerID(context.Context) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	return 1000 + b.nextID, nil
}

func (b *memBroker) WriteMarker(tp TopicPartition, m Marker) error {
	if b.block != nil {
		<-b.block
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.markers = append(b.markers, fmt.Sprintf("%s pid=%d epoch=%d commit=%v", tp, m.ProducerID, m.ProducerEpoch, m.Commit))
	return nil
}

func (b *memBroker) OffsetsPartition(group string) (TopicPartition, error) {
	return TopicPartition{"__consumer_offsets", 7}, nil
}

func (b *memBroker) written() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.markers)
}

func newTestCoordinator(t *testing.T, log *memLog, b *memBroker) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.AbortTimedOutInterval = 20 * time.Millisecond
	cfg.MarkerRetryBackoff = time.Millisecond
	c := New(cfg, log, b)
	t.Cleanup(c.Close)
	c.LoadOwned()
	waitFor(t, func() bool {
		for _, sh := range *c.shards.Load() {
			if sh.loading.Load() {
				return false
			}
		}
		return len(*c.shards.Load()) == 50
	})
	return c
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func state(t *testing.T, c *Coordinator, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	return c.DescribeTransactions(id)
}

func waitState(t *testing.T, c *Coordinator, id, want string) {
	t.Helper()
	waitFor(t, func() bool { return state(t, c, id).State == want })
}

func TestTransactionV1CommitAndFencing(t *testing.T) {
	log, b := newMemLog(), &memBroker{}
	c := newTestCoordinator(t, log, b)
	ctx := context.Background()

	pid, epoch, code := c.InitProducerID(ctx, "t1", 60000, -1, -1)
	if code != 0 || epoch != 0 {
		t.Fatalf("init: %d/%d code %d", pid, epoch, code)
	}
	parts := []TopicPartition{{"a", 0}, {"a", 1}}
	if code := c.AddPartitions("t1", pid, epoch, parts, TV0); code != 0 {
		t.Fatalf("add partitions: %d", code)
	}
	if code := c.AddOffsets("t1", pid, epoch, "g"); code != 0 {
		t.Fatalf("add offsets: %d", code)
	}
	if code := c.AddPartitions("t1", pid, epoch+1, parts, TV0); code != kerr.ProducerFenced.Code {
		t.Fatalf("add with another epoch: %d", code)
	}
	if v := c.VerifyPartitions("t1", pid, epoch, []TopicPartition{{"a", 0}, {"b", 0}}); v[TopicPartition{"a", 0}] != 0 ||
		v[TopicPartition{"b", 0}] != kerr.TransactionAbortable.Code {
		t.Fatalf("verify: %v", v)
	}
	if st := state(t, c, "t1"); st.State != "Ongoing" || len(st.Topics) != 2 {
		t.Fatalf("describe: %+v", st)
	}
	code, _, _ = c.EndTxn("t1", pid, epoch, true, TV0)
	if code != 0 {
		t.Fatalf("end: %d", code)
	}
	waitState(t, c, "t1", "CompleteCommit")
	got := b.written()
	slices.Sort(got)
	want := []string{
		fmt.Sprintf("__consumer_offsets-7 pid=%d epoch=0 commit=true", pid),
		fmt.Sprintf("a-0 pid=%d epoch=0 commit=true", pid),
		fmt.Sprintf("a-1 pid=%d epoch=0 commit=true", pid),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("markers %v, want %v", got, want)
	}
	// A retried EndTxn after completion succeeds; the other outcome is
	// INVALID_TXN_STATE.
	if code, _, _ := c.EndTxn("t1", pid, epoch, true, TV0); code != 0 {
		t.Fatalf("retried commit: %d", code)
	}
	if code, _, _ := c.EndTxn("t1", pid, epoch, false, TV0); code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit: %d", code)
	}

	// A second producer with the id bumps the epoch, fencing the first.
	pid2, epoch2, code := c.InitProducerID(ctx, "t1", 60000, -1, -1)
	if code != 0 || pid2 != pid || epoch2 != 1 {
		t.Fatalf("re-init: %d/%d code %d", pid2, epoch2, code)
	}
	if code := c.AddPartitions("t1", pid, epoch, parts, TV0); code != kerr.ProducerFenced.Code {
		t.Fatalf("fenced producer adding partitions: %d", code)
	}
	// KIP-360: the current epoch bumps, the previous one is a retry.
	if _, e, code := c.InitProducerID(ctx, "t1", 60000, pid, 1); code != 0 || e != 2 {
		t.Fatalf("KIP-360 bump: epoch %d code %d", e, code)
	}
	if _, e, code := c.InitProducerID(ctx, "t1", 60000, pid, 1); code != 0 || e != 2 {
		t.Fatalf("KIP-360 retry: epoch %d code %d", e, code)
	}
	if _, _, code := c.InitProducerID(ctx, "t1", 60000, pid, 0); code != kerr.ProducerFenced.Code {
		t.Fatalf("KIP-360 with an old epoch: %d", code)
	}
}

func TestTransactionV2EpochBumps(t *testing.T) {
	log, b := newMemLog(), &memBroker{}
	c := newTestCoordinator(t, log, b)
	pid, epoch, _ := c.InitProducerID(context.Background(), "t2", 60000, -1, -1)
	tp := []TopicPartition{{"a", 0}}
	if code := c.AddPartitions("t2", pid, epoch, tp, TV2); code != 0 {
		t.Fatal(code)
	}
	code, pid2, epoch2 := c.EndTxn("t2", pid, epoch, false, TV2)
	if code != 0 || pid2 != pid || epoch2 != epoch+1 {
		t.Fatalf("end: code %d, %d/%d", code, pid2, epoch2)
	}
	waitState(t, c, "t2", "CompleteAbort")
	if got := b.written(); len(got) != 1 || got[0] != fmt.Sprintf("a-0 pid=%d epoch=%d commit=false", pid, epoch+1) {
		t.Fatalf("markers %v: the marker carries the bumped epoch", got)
	}
	// A retry of the same EndTxn (the epoch one below) is answered again.
	if code, _, e := c.EndTxn("t2", pid, epoch, false, TV2); code != 0 || e != epoch+1 {
		t.Fatalf("retried end: code %d epoch %d", code, e)
	}
	// An abort of an empty transaction is allowed and bumps the epoch.
	if code, _, e := c.EndTxn("t2", pid, epoch+1, false, TV2); code != 0 || e != epoch+2 {
		t.Fatalf("empty abort: code %d epoch %d", code, e)
	}
	waitState(t, c, "t2", "CompleteAbort")
	if code, _, _ := c.EndTxn("t2", pid, epoch+2, true, TV2); code != kerr.InvalidTxnState.Code {
		t.Fatalf("empty commit: %d", code)
	}
}

func TestTransactionStateReloadCompletesPrepared(t *testing.T) {
	log, b := newMemLog(), &memBroker{block: make(chan struct{})}
	c := newTestCoordinator(t, log, b)
	pid, epoch, _ := c.InitProducerID(context.Background(), "t3", 60000, -1, -1)
	c.AddPartitions("t3", pid, epoch, []TopicPartition{{"a", 0}}, TV2)
	if code, _, _ := c.EndTxn("t3", pid, epoch, true, TV2); code != 0 {
		t.Fatal(code)
	}
	if st := state(t, c, "t3"); st.State != "PrepareCommit" {
		t.Fatalf("state %s while markers are blocked", st.State)
	}
	if _, _, code := c.InitProducerID(context.Background(), "t3", 60000, -1, -1); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init while committing: %d", code)
	}
	// The coordinator goes away mid-commit; another loads the partition.
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	waitFor(t, func() bool { return len(*c.shards.Load()) == 0 })
	close(b.block)
	<-closed
	b2 := &memBroker{}
	log.mu.Lock()
	log.epoch = 2
	log.mu.Unlock()
	c2 := newTestCoordinator(t, log, b2)
	waitState(t, c2, "t3", "CompleteCommit")
	if got := b2.written(); len(got) != 1 || got[0] != fmt.Sprintf("a-0 pid=%d epoch=%d commit=true", pid, epoch+1) {
		t.Fatalf("markers after reload %v", got)
	}
	lt := c2.ListTransactions(&kmsg.ListTransactionsRequest{Version: 1, DurationFilterMillis: -1, StateFilters: []string{"CompleteCommit", "Bogus"}})
	if len(lt.TransactionStates) != 1 || lt.TransactionStates[0].TransactionalID != "t3" || !slices.Equal(lt.UnknownStateFilters, []string{"Bogus"}) {
		t.Fatalf("list %+v", lt)
	}
}

func TestTransactionTimeoutAbortsAndFences(t *testing.T) {
	log, b := newMemLog(), &memBroker{}
	c := newTestCoordinator(t, log, b)
	pid, epoch, _ := c.InitProducerID(context.Background(), "t4", 50, -1, -1)
	c.AddPartitions("t4", pid, epoch, []TopicPartition{{"a", 0}}, TV2)
	waitState(t, c, "t4", "CompleteAbort")
	st := state(t, c, "t4")
	// Fenced once (epoch+1), bumped by the version-2 abort (epoch+2).
	if st.ProducerEpoch != epoch+2 {
		t.Fatalf("epoch after the timeout abort %d, want %d", st.ProducerEpoch, epoch+2)
	}
	if got := b.written(); len(got) != 1 || got[0] != fmt.Sprintf("a-0 pid=%d epoch=%d commit=false", pid, epoch+2) {
		t.Fatalf("markers %v", got)
	}
	if code, _, _ := c.EndTxn("t4", pid, epoch, true, TV2); code != kerr.ProducerFenced.Code {
		t.Fatalf("commit by the timed-out producer: %d", code)
	}
}

func TestInitProducerIDAbortsOpenTransaction(t *testing.T) {
	log, b := newMemLog(), &memBroker{}
	c := newTestCoordinator(t, log, b)
	ctx := context.Background()
	pid, epoch, _ := c.InitProducerID(ctx, "t5", 60000, -1, -1)
	c.AddPartitions("t5", pid, epoch, []TopicPartition{{"a", 0}}, TV0)
	if _, _, code := c.InitProducerID(ctx, "t5", 60000, -1, -1); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init with an open transaction: %d", code)
	}
	waitState(t, c, "t5", "CompleteAbort")
	_, e, code := c.InitProducerID(ctx, "t5", 60000, -1, -1)
	if code != 0 || e <= epoch+1 {
		t.Fatalf("init after the abort: epoch %d code %d", e, code)
	}
	if got := b.written(); len(got) != 1 {
		t.Fatalf("markers %v", got)
	}
	if code := c.AddPartitions("t5", pid, epoch, []TopicPartition{{"a", 0}}, TV0); code != kerr.ProducerFenced.Code {
		t.Fatalf("old producer: %d", code)
	}
}

func TestTransactionValueEncoding(t *testing.T) {
	tr := transit{producerID: 7, prevProducerID: 6, nextProducerID: -1, producerEpoch: 3, timeoutMs: 1000, state: Ongoing,
		partitions: map[TopicPartition]struct{}{{"b", 1}: {}, {"a", 2}: {}, {"a", 0}: {}}, startMs: 5, lastUpdateMs: 9, clientTV: TV2}
	for _, tv := range []int16{TV0, TV2} {
		m, err := decodeValue("x", encodeValue(tr, tv))
		if err != nil {
			t.Fatal(err)
		}
		if m.producerID != 7 || m.producerEpoch != 3 || m.state != Ongoing || len(m.partitions) != 3 || m.startMs != 5 || m.lastUpdateMs != 9 {
			t.Fatalf("tv %d: decoded %+v", tv, m)
		}
		if tv == TV2 && (m.prevProducerID != 6 || m.clientTV != TV2) {
			t.Fatalf("tagged fields lost: %+v", m)
		}
	}
	empty := encodeValue(transit{producerID: 1, state: Empty, partitions: map[TopicPartition]struct{}{}}, TV0)
	// version, pid, epoch, timeout, state, then a null array (-1).
	if got := int32(uint32(empty[17])<<24 | uint32(empty[18])<<16 | uint32(empty[19])<<8 | uint32(empty[20])); got != -1 {
		t.Fatalf("Empty's partitions encoded as %d, want null", got)
	}
	if PartitionFor("my-txn", 50) != PartitionFor("my-txn", 50) || PartitionFor("", 50) != 0 {
		t.Fatal("partitionFor")
	}
}
