package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/recordbatch"
)

// idempotentBatch builds a magic-v2 batch of an idempotent producer: one
// record per value, sequences from seq.
func idempotentBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Value = []byte(v)
		// The length prefix counts the bytes after itself (one varint byte
		// for these small records).
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		recs = rec.AppendTo(recs)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = pid, epoch, seq
	now := time.Now().UnixMilli()
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.LastOffsetDelta = int32(len(values) - 1)
	b.NumRecords = int32(len(values))
	b.Records = recs
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[recordbatch.PosBatchLength:], uint32(len(raw)-recordbatch.LogOverhead))
	recordbatch.Batch(raw).SetCRC()
	return raw
}

// produceRaw sends one acks=all Produce of batch to partition 0 of topic and
// returns the partition's response.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

func expectProduced(t *testing.T, sp kmsg.ProduceResponseTopicPartition, baseOffset int64) {
	t.Helper()
	if sp.ErrorCode != 0 || sp.BaseOffset != baseOffset {
		t.Fatalf("produce: error %v, base offset %d, want success at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, baseOffset)
	}
}

func expectProduceError(t *testing.T, sp kmsg.ProduceResponseTopicPartition, want *kerr.Error) {
	t.Helper()
	if sp.ErrorCode != want.Code {
		t.Fatalf("produce: error %v, want %v", kerr.ErrorForCode(sp.ErrorCode), want)
	}
}

func initProducerID(t *testing.T, cl *kgo.Client, mutate func(*kmsg.InitProducerIDRequest)) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	if mutate != nil {
		mutate(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Straight to the broker: franz-go would route a request with a
	// transactional id to the transaction coordinator (FindCoordinator).
	kresp, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	return kresp.(*kmsg.InitProducerIDResponse)
}

// TestIdempotenceInitProducerID: idempotent producers get fresh ids at
// epoch 0, one block after another (also when they pass their old id,
// KIP-360); transactional ids wait for the transaction coordinator.
func TestIdempotenceInitProducerID(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)

	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range versions.ApiKeys {
		if k.ApiKey == 22 {
			found = k.MinVersion == 0 && k.MaxVersion == 5
		}
	}
	if !found {
		t.Fatal("ApiVersions does not advertise InitProducerId v0-5")
	}

	// Past the end of the first block of 1000, into the next.
	for want := int64(0); want <= 1001; want++ {
		resp := initProducerID(t, cl, func(r *kmsg.InitProducerIDRequest) {
			if want == 1001 { // a producer asking to start over (KIP-360) gets a new id too
				r.ProducerID, r.ProducerEpoch = 5, 3
			}
		})
		if resp.ErrorCode != 0 || resp.ProducerID != want || resp.ProducerEpoch != 0 {
			t.Fatalf("InitProducerId #%d: error %v, id %d, epoch %d", want, kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
		}
	}

	txn := func(id string, timeout int32) func(*kmsg.InitProducerIDRequest) {
		return func(r *kmsg.InitProducerIDRequest) { r.TransactionalID, r.TransactionTimeoutMillis = &id, timeout }
	}
	for _, tc := range []struct {
		name   string
		mutate func(*kmsg.InitProducerIDRequest)
		want   *kerr.Error
	}{
		{"id without epoch", func(r *kmsg.InitProducerIDRequest) { r.ProducerID = 7 }, kerr.InvalidRequest},
		{"epoch without id", func(r *kmsg.InitProducerIDRequest) { r.ProducerEpoch = 7 }, kerr.InvalidRequest},
		{"empty transactional id", txn("", 60000), kerr.InvalidRequest},
		{"transaction timeout 0", txn("tx", 0), kerr.InvalidTransactionTimeout},
		{"transaction timeout too long", txn("tx", 900001), kerr.InvalidTransactionTimeout},
		{"transactional id", txn("tx", 60000), kerr.NotCoordinator},
	} {
		resp := initProducerID(t, cl, tc.mutate)
		if resp.ErrorCode != tc.want.Code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Errorf("%s: error %v, id %d, epoch %d; want %v, -1, -1", tc.name, kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, tc.want)
		}
	}
}

// TestIdempotentRetryAppendsOnce: the same Produce sent twice (a retry
// after a lost response) is answered with the same base offset and the
// records are in the log once.
func TestIdempotentRetryAppendsOnce(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.MaxVersions(byNameVersions())) // raw produces by topic name
	createTopic(t, cl, "idem", 1, nil)
	pid := initProducerID(t, cl, nil).ProducerID

	expectProduced(t, produceRaw(t, cl, "idem", idempotentBatch(pid, 0, 0, "a", "b")), 0)
	expectProduced(t, produceRaw(t, cl, "idem", idempotentBatch(-1, -1, -1, "plain")), 2)
	first := idempotentBatch(pid, 0, 2, "c", "d", "e")
	expectProduced(t, produceRaw(t, cl, "idem", first), 3)
	expectProduced(t, produceRaw(t, cl, "idem", append([]byte(nil), first...)), 3) // the retry
	expectProduced(t, produceRaw(t, cl, "idem", idempotentBatch(pid, 0, 0, "a", "b")), 0)
	expectProduced(t, produceRaw(t, cl, "idem", idempotentBatch(pid, 0, 5, "f")), 6)

	got := consumeAll(t, srv, "idem", 7)
	for i, want := range []string{"a", "b", "plain", "c", "d", "e", "f"} {
		if string(got[i].Value) != want || got[i].Offset != int64(i) {
			t.Fatalf("record %d: %q at %d, want %q", i, got[i].Value, got[i].Offset, want)
		}
	}

	// franz-go's default producer is idempotent now that InitProducerId exists.
	pcl := newClient(t, srv, kgo.DefaultProduceTopic("idem"))
	produceAll(t, pcl, testRecords("idem", 100))
	got = consumeAll(t, srv, "idem", 107)
	if r := got[106]; r.ProducerID < 0 || r.ProducerID == pid || r.ProducerEpoch != 0 {
		t.Fatalf("franz-go produced with producer id %d epoch %d, want a new idempotent producer", r.ProducerID, r.ProducerEpoch)
	}
}

// TestIdempotentOutOfOrderSequence: a sequence gap and a new epoch not
// starting at 0 are OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch is
// INVALID_PRODUCER_EPOCH; nothing is appended for them.
func TestIdempotentOutOfOrderSequence(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.MaxVersions(byNameVersions())) // raw produces by topic name
	createTopic(t, cl, "ooo", 1, nil)
	pid := initProducerID(t, cl, nil).ProducerID

	expectProduced(t, produceRaw(t, cl, "ooo", idempotentBatch(pid, 0, 0, "a")), 0)
	expectProduceError(t, produceRaw(t, cl, "ooo", idempotentBatch(pid, 0, 2, "gap")), kerr.OutOfOrderSequenceNumber)
	expectProduceError(t, produceRaw(t, cl, "ooo", idempotentBatch(pid, 1, 1, "new epoch")), kerr.OutOfOrderSequenceNumber)
	expectProduced(t, produceRaw(t, cl, "ooo", idempotentBatch(pid, 1, 0, "b")), 1)
	expectProduceError(t, produceRaw(t, cl, "ooo", idempotentBatch(pid, 0, 1, "fenced")), kerr.InvalidProducerEpoch)
	expectProduced(t, produceRaw(t, cl, "ooo", idempotentBatch(pid, 1, 1, "c")), 2)

	got := consumeAll(t, srv, "ooo", 3)
	for i, want := range []string{"a", "b", "c"} {
		if string(got[i].Value) != want {
			t.Fatalf("record %d is %q, want %q", i, got[i].Value, want)
		}
	}
}

// restartBroker closes srv and starts a broker on the same address and
// directory, so clients reconnect to it.
func restartBroker(t *testing.T, srv *broker.Server, dir string) *broker.Server {
	t.Helper()
	addr := srv.Addr()
	if err := srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return startBroker(t, dir, "listeners", "PLAINTEXT://"+addr)
}

// TestIdempotentProduceAcrossRestart: producer state survives a restart
// (the snapshot written at close): a retry of the last batch before it is
// still a duplicate, a gap still out of order, and franz-go producers that
// keep sending through the restart leave every record exactly once.
func TestIdempotentProduceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir)
	defer func() { srv.Close() }()
	cl := newClient(t, srv, kgo.MaxVersions(byNameVersions())) // raw produces by topic name
	createTopic(t, cl, "restart", 1, nil)
	pid := initProducerID(t, cl, nil).ProducerID
	expectProduced(t, produceRaw(t, cl, "restart", idempotentBatch(pid, 0, 0, "r0", "r1")), 0)
	expectProduced(t, produceRaw(t, cl, "restart", idempotentBatch(pid, 0, 2, "r2")), 2)

	// franz-go producers, sending while the broker restarts.
	const perProducer = 3000
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var produceErrs []error
	var acked atomic.Int64
	producers := make([]*kgo.Client, 2)
	for i := range producers {
		producers[i] = newClient(t, srv, kgo.DefaultProduceTopic("restart"), kgo.ProducerLinger(time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	}
	started := make(chan struct{}, len(producers))
	for i, pcl := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			for j := 0; j < perProducer; j++ {
				if j == perProducer/10 {
					started <- struct{}{}
				}
				inner.Add(1)
				pcl.Produce(context.Background(), &kgo.Record{Value: []byte(fmt.Sprintf("p%d-%d", i, j))}, func(_ *kgo.Record, err error) {
					defer inner.Done()
					acked.Add(1)
					if err != nil {
						errMu.Lock()
						produceErrs = append(produceErrs, err)
						errMu.Unlock()
					}
				})
				if j%10 == 0 {
					time.Sleep(2 * time.Millisecond) // spread the records over the restart
				}
			}
			inner.Wait()
		}()
	}
	for range producers {
		<-started
	}
	ackedBefore := acked.Load()
	srv = restartBroker(t, srv, dir)
	ackedAfter := acked.Load()
	wg.Wait()
	t.Logf("records acknowledged before the restart %d, by its end %d, of %d", ackedBefore, ackedAfter, 2*perProducer)
	if len(produceErrs) > 0 {
		t.Fatalf("%d records failed across the restart, first: %v", len(produceErrs), produceErrs[0])
	}

	leo := int64(3 + 2*perProducer)
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "restart")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := ends.Lookup("restart", 0); end.Offset != leo {
		t.Fatalf("log end offset %d after the restart, want %d: records duplicated or lost", end.Offset, leo)
	}
	got := consumeAll(t, srv, "restart", int(leo))
	next := map[string]int{}
	for _, r := range got[3:] {
		var p, j int
		if _, err := fmt.Sscanf(string(r.Value), "p%d-%d", &p, &j); err != nil {
			t.Fatalf("unexpected record %q at %d", r.Value, r.Offset)
		}
		key := fmt.Sprint(p)
		if j != next[key] {
			t.Fatalf("producer %d: record %d at offset %d, want record %d (duplicate or loss)", p, j, r.Offset, next[key])
		}
		next[key]++
	}
	for i := range producers {
		if n := next[fmt.Sprint(i)]; n != perProducer {
			t.Fatalf("producer %d: %d records in the log, want %d", i, n, perProducer)
		}
	}

	// The raw producer's state came back from the snapshot.
	expectProduced(t, produceRaw(t, cl, "restart", idempotentBatch(pid, 0, 2, "r2")), 2)
	expectProduceError(t, produceRaw(t, cl, "restart", idempotentBatch(pid, 0, 4, "gap")), kerr.OutOfOrderSequenceNumber)
	expectProduced(t, produceRaw(t, cl, "restart", idempotentBatch(pid, 0, 3, "r3")), leo)
}
