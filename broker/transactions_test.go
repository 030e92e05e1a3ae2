package broker_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/recordbatch"
)

// txnClient is a transactional franz-go producer.
func txnClient(t *testing.T, srv *broker.Server, id string, timeout time.Duration, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, srv, append([]kgo.Opt{
		kgo.TransactionalID(id), kgo.TransactionTimeout(timeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(20),
	}, opts...)...)
}

// produceTxn runs one transaction of values to topic and commits or aborts it.
func produceTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	var recs []*kgo.Record
	for i, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// readValues consumes topic from the start with the isolation level until
// it has seen n values or wait passed, then checks nothing more arrives.
func readValues(t *testing.T, srv *broker.Server, topic string, level kgo.IsolationLevel, n int, wait time.Duration) []string {
	t.Helper()
	cl := newClient(t, srv, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var out []string
	for len(out) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("fetch %s/%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	// Nothing beyond n may show up.
	extra, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	cl.PollFetches(extra).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	slices.Sort(out)
	return out
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func sorted(vs ...[]string) []string {
	out := slices.Concat(vs...)
	slices.Sort(out)
	return out
}

// ensureTxnStateTopic has FindCoordinator create __transaction_state, as
// the first transactional client does, and waits for its coordinator.
func ensureTxnStateTopic(t *testing.T, cl *kgo.Client) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{"probe"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := req.RequestWith(context.Background(), cl)
		if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no transaction coordinator: %v %+v", err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTransactionsReadCommitted(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	admin := newClient(t, srv)
	const topic = "txn-rc"
	createTopic(t, admin, topic, 2, nil)
	ensureTxnStateTopic(t, admin)

	p := txnClient(t, srv, "tx-rc", time.Minute)
	committed1, aborted, committed2 := values("c1-", 10), values("ab-", 10), values("c2-", 10)
	produceTxn(t, p, topic, true, committed1...)
	produceTxn(t, p, topic, false, aborted...)
	produceTxn(t, p, topic, true, committed2...)

	// An open transaction holds the last stable offset back.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	open := values("open-", 4)
	for i, v := range open {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(admin)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committedEnds, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 2; part++ {
		hw, _ := ends.Lookup(topic, part)
		lso, _ := committedEnds.Lookup(topic, part)
		// Per partition: 15 records and 3 markers before the open transaction.
		if lso.Offset != 18 || hw.Offset != 20 {
			t.Fatalf("partition %d: read_committed end %d, read_uncommitted end %d; want 18 and 20", part, lso.Offset, hw.Offset)
		}
	}
	described, err := adm.DescribeTransactions(ctx, "tx-rc")
	if err != nil {
		t.Fatal(err)
	}
	d := described["tx-rc"]
	if d.Err != nil || d.State != "Ongoing" || len(d.Topics[topic]) != 2 {
		t.Fatalf("describe transactions: %+v", d)
	}
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil || len(listed) != 1 {
		t.Fatalf("list transactions: %+v %v", listed, err)
	}
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var ps []kadm.DescribedProducer
	producers.EachProducer(func(dp kadm.DescribedProducer) { ps = append(ps, dp) })
	if len(ps) != 1 || ps[0].CurrentTxnStartOffset != 18 || ps[0].ProducerID != d.ProducerID {
		t.Fatalf("describe producers: %+v", ps)
	}

	if got, want := readValues(t, srv, topic, kgo.ReadCommitted(), 20, 10*time.Second), sorted(committed1, committed2); !slices.Equal(got, want) {
		t.Fatalf("read_committed saw %v, want %v", got, want)
	}
	if got, want := readValues(t, srv, topic, kgo.ReadUncommitted(), 34, 10*time.Second), sorted(committed1, aborted, committed2, open); !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted saw %v, want %v", got, want)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got, want := readValues(t, srv, topic, kgo.ReadCommitted(), 24, 10*time.Second), sorted(committed1, committed2, open); !slices.Equal(got, want) {
		t.Fatalf("read_committed after the last commit saw %v, want %v", got, want)
	}
}

// TestTransactionTimeoutAbortsDeadProducer: a producer that disappears
// mid-transaction is aborted after its timeout; its records never show up
// to read_committed readers, and the partition moves on.
func TestTransactionTimeoutAbortsDeadProducer(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "transaction.abort.timed.out.transaction.cleanup.interval.ms", "100")
	defer srv.Close()
	admin := newClient(t, srv)
	const topic = "txn-timeout"
	createTopic(t, admin, topic, 2, nil)
	ensureTxnStateTopic(t, admin)

	dead := txnClient(t, srv, "tx-dead", time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	lost := values("lost-", 6)
	for i, v := range lost {
		if err := dead.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dead.Close() // no EndTransaction: the producer is gone

	alive := txnClient(t, srv, "tx-alive", time.Minute)
	kept := values("kept-", 6)
	produceTxn(t, alive, topic, true, kept...)

	if got := readValues(t, srv, topic, kgo.ReadCommitted(), 6, 20*time.Second); !slices.Equal(got, sorted(kept)) {
		t.Fatalf("read_committed saw %v, want %v", got, sorted(kept))
	}
	adm := kadm.NewClient(admin)
	described, err := adm.DescribeTransactions(ctx, "tx-dead")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["tx-dead"]; d.State != "CompleteAbort" {
		t.Fatalf("the dead producer's transaction is %q, want CompleteAbort", d.State)
	}
}

// TestTransactionsSurviveRestart closes the broker while a transaction is
// open and one is committed: after the restart the committed records are
// visible, the open transaction times out and is aborted, and a new
// producer with the same transactional id starts cleanly.
func TestTransactionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	props := []string{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "100"}
	srv := startBroker(t, dir, props...)
	admin := newClient(t, srv)
	const topic = "txn-restart"
	createTopic(t, admin, topic, 2, nil)
	ensureTxnStateTopic(t, admin)

	committer := txnClient(t, srv, "tx-committer", time.Minute)
	committed := values("committed-", 8)
	produceTxn(t, committer, topic, true, committed...)

	hanging := txnClient(t, srv, "tx-hanging", 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hanging.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i, v := range values("hanging-", 4) {
		if err := hanging.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	hanging.Close()
	committer.Close()
	admin.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = startBroker(t, dir, props...)
	defer srv.Close()
	if got := readValues(t, srv, topic, kgo.ReadCommitted(), 8, 20*time.Second); !slices.Equal(got, sorted(committed)) {
		t.Fatalf("read_committed after restart saw %v, want %v", got, sorted(committed))
	}
	again := txnClient(t, srv, "tx-hanging", time.Minute)
	more := values("after-", 4)
	produceTxn(t, again, topic, true, more...)
	if got := readValues(t, srv, topic, kgo.ReadCommitted(), 12, 20*time.Second); !slices.Equal(got, sorted(committed, more)) {
		t.Fatalf("read_committed saw %v, want %v", got, sorted(committed, more))
	}
}

// TestWriteTxnMarkersAbortsHangingTransaction is what
// `kafka-transactions.sh abort` does: find the hanging transaction's
// producer with DescribeProducers and write an abort marker with
// WriteTxnMarkers.
func TestWriteTxnMarkersAbortsHangingTransaction(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	admin := newClient(t, srv)
	const topic = "txn-hanging"
	createTopic(t, admin, topic, 1, nil)
	ensureTxnStateTopic(t, admin)

	p := txnClient(t, srv, "tx-hang", 10*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("hung")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(admin)
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var hung kadm.DescribedProducer
	producers.EachProducer(func(dp kadm.DescribedProducer) { hung = dp })
	if hung.CurrentTxnStartOffset != 0 {
		t.Fatalf("producer %+v: want a transaction open at 0", hung)
	}

	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = hung.ProducerID, int16(hung.ProducerEpoch), hung.CoordinatorEpoch, false
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0, 7}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := rawRequest(t, srv, req).(*kmsg.WriteTxnMarkersResponse)
	codes := map[int32]int16{}
	for _, rp := range resp.Markers[0].Topics[0].Partitions {
		codes[rp.Partition] = rp.ErrorCode
	}
	if codes[0] != 0 || codes[7] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("write markers: %v", codes)
	}
	committedEnds, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if lso, _ := committedEnds.Lookup(topic, 0); lso.Offset != 2 {
		t.Fatalf("read_committed end after the abort marker %d, want 2", lso.Offset)
	}
	if got := readValues(t, srv, topic, kgo.ReadCommitted(), 0, time.Second); len(got) != 0 {
		t.Fatalf("read_committed saw the aborted %v", got)
	}
}

// TestTransactionalProduceNeedsTheCoordinator: a transactional batch for a
// partition the transaction never added is refused (KIP-890), as is one
// from an unknown producer.
func TestTransactionalProduceNeedsTheCoordinator(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	const topic = "txn-verify"
	createTopic(t, cl, topic, 1, nil)
	ensureTxnStateTopic(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	init := kmsg.NewPtrInitProducerIDRequest()
	id := "tx-raw"
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
	var ir *kmsg.InitProducerIDResponse
	for {
		var err error
		if ir, err = init.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
		if ir.ErrorCode != kerr.CoordinatorLoadInProgress.Code && ir.ErrorCode != kerr.NotCoordinator.Code {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ir.ErrorCode != 0 {
		t.Fatalf("init producer id: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	batch := idempotentBatch(ir.ProducerID, ir.ProducerEpoch, 0, "v")
	batch[22] |= 0x10 // transactional
	fixCRC(batch)
	for _, tc := range []struct {
		version int16
		want    *kerr.Error
	}{
		{10, kerr.InvalidTxnState}, // TRANSACTION_ABORTABLE, which old clients do not know
		{11, kerr.TransactionAbortable},
		{12, nil}, // transaction version 2: the produce adds the partition
	} {
		req := produceRequestFor(topic, batch)
		req.TransactionID = &id
		req.SetVersion(tc.version)
		resp := rawRequest(t, srv, req).(*kmsg.ProduceResponse)
		sp := resp.Topics[0].Partitions[0]
		if (tc.want == nil && sp.ErrorCode != 0) || (tc.want != nil && sp.ErrorCode != tc.want.Code) {
			t.Fatalf("produce v%d of an unadded partition: %v, want %v", tc.version, kerr.ErrorForCode(sp.ErrorCode), tc.want)
		}
	}
	desc, err := kadm.NewClient(cl).DescribeTransactions(ctx, id)
	if err != nil || desc[id].State != "Ongoing" || !strings.Contains(fmt.Sprint(desc[id].Topics), topic) {
		t.Fatalf("describe after an implicit add: %+v %v", desc[id], err)
	}
}

func produceRequestFor(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fixCRC(batch []byte) { recordbatch.Batch(batch).SetCRC() }

// rawRequest sends req at its version on a new connection and decodes the
// answer.
func rawRequest(t *testing.T, srv *broker.Server, req kmsg.Request) kmsg.Response {
	t.Helper()
	rc := dialRaw(t, srv)
	rc.send(encodeRequest(req, 1))
	_, body, err := rc.readResponse()
	if err != nil {
		t.Fatal(err)
	}
	if req.IsFlexible() {
		body = body[1:] // the response header's tagged fields
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T: %v", resp, err)
	}
	return resp
}

// TestTransactionalProducerStream is the producer half of franz-go's
// transactional ETL: many records in transactions of 10000 committed with
// EndAndBeginTransaction (safe and unsafe alternately), compressed, read
// back exactly once by a read_committed consumer.
func TestTransactionalProducerStream(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	admin := newClient(t, srv)
	const topic, n = "txn-stream", 30000
	createTopic(t, admin, topic, 4, nil)
	ensureTxnStateTopic(t, admin)

	p := newClient(t, srv, kgo.TransactionalID("tx-stream"), kgo.TransactionTimeout(time.Minute),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.MaxBufferedRecords(10000))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	unsafe := false
	for i := 0; i < n; i++ {
		if i > 0 && i%10000 == 0 {
			how := kgo.EndBeginTxnSafe
			if unsafe {
				how = kgo.EndBeginTxnUnsafe
			}
			unsafe = !unsafe
			if err := p.EndAndBeginTransaction(ctx, how, kgo.TryCommit, func(_ context.Context, err error) error { return err }); err != nil {
				t.Fatalf("end and begin at %d: %v", i, err)
			}
		}
		p.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte("v")}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("produce: %v", err)
	default:
	}
	c := newClient(t, srv, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := make(map[string]bool, n)
	for len(seen) < n && ctx.Err() == nil {
		fs := c.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Key)] {
				t.Fatalf("record %s read twice", r.Key)
			}
			seen[string(r.Key)] = true
		})
	}
	if len(seen) != n {
		t.Fatalf("read %d records, want %d", len(seen), n)
	}
}

// TestGroupTransactSessionETL is franz-go's transactional ETL in small:
// two GroupTransactSessions in one group consume a topic read_committed and
// copy every record to another topic in transactions that also commit the
// group's offsets (TxnOffsetCommit). Every record arrives exactly once, and
// the group's committed offsets end at the source's end.
func TestGroupTransactSessionETL(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms", "0")
	defer srv.Close()
	admin := newClient(t, srv)
	const src, dst, group, n = "etl-src", "etl-dst", "etl-group", 4000
	createTopic(t, admin, src, 4, nil)
	createTopic(t, admin, dst, 4, nil)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: src, Key: []byte(strconv.Itoa(i)), Value: []byte("v")}
	}
	produceAll(t, admin, recs)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	copied := make(chan int, n*2)
	run := func(name string, quitAfter int) {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(srv.Addr()),
			kgo.TransactionalID("etl-"+name), kgo.TransactionTimeout(30*time.Second),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(src),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(6*time.Second), kgo.FetchMaxWait(100*time.Millisecond),
			// Small fetches: many transactions, some across rebalances.
			kgo.FetchMaxBytes(4000), kgo.FetchMaxPartitionBytes(2000),
		)
		if err != nil {
			t.Error(err)
			return
		}
		defer sess.Close()
		txns := 0
		for ctx.Err() == nil {
			pollCtx, pollCancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := sess.PollFetches(pollCtx)
			pollCancel()
			if len(fs.Records()) == 0 {
				if len(copied) >= n {
					return
				}
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Errorf("%s begin: %v", name, err)
				return
			}
			var keys []int
			fs.EachRecord(func(r *kgo.Record) {
				k, _ := strconv.Atoi(string(r.Key))
				keys = append(keys, k)
				sess.Produce(ctx, &kgo.Record{Topic: dst, Key: r.Key, Value: r.Value}, nil)
			})
			committed, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				t.Errorf("%s end: %v", name, err)
				return
			}
			if committed {
				for _, k := range keys {
					copied <- k
				}
			}
			if txns++; quitAfter >= 0 && txns >= quitAfter {
				return
			}
		}
	}
	done := make(chan struct{})
	go func() { run("a", 3); run("a2", -1); close(done) }()
	run("b", -1)
	<-done

	got := readValues(t, srv, dst, kgo.ReadCommitted(), n, 30*time.Second)
	if len(got) != n {
		t.Fatalf("the destination has %d records, want %d", len(got), n)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = "v"
	}
	if !slices.Equal(got, want) {
		t.Fatalf("unexpected values in the destination")
	}
	c := newClient(t, srv, kgo.ConsumeTopics(dst), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]bool{}
	for len(seen) < n && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if seen[string(r.Key)] {
				t.Fatalf("record %s copied twice", r.Key)
			}
			seen[string(r.Key)] = true
		})
	}
	adm := kadm.NewClient(admin)
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(lo kadm.ListedOffset) {
		o, ok := offsets.Lookup(src, lo.Partition)
		if !ok || o.At != lo.Offset {
			t.Errorf("partition %d: committed %+v, end %d", lo.Partition, o, lo.Offset)
		}
	})
}
