package straittest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// sessionEnd is how a member session of the ETL job ended.
type sessionEnd int

const (
	jobDone        sessionEnd = iota
	quitSession               // quit after its transactions: a new one joins
	restartSession            // unusable: a new one of the same transactional id joins
)

// partOffset is one consumed input record.
type partOffset struct {
	part   int32
	offset int64
}

// Exactly-once across coordinator moves: a consume-transform-produce job
// (transactional KIP-848 consumers, read_committed, as franz-go's TestTxnEtl
// runs it: each member session quits after some transactions, aborting its
// last, and a new one joins) copies a topic written by a transactional
// producer (every fifth transaction aborted) while the broker coordinating
// the group and then the one coordinating the transactions are killed -9
// and restarted, three rounds of each. Checked as TestTxnEtl checks it: no
// input offset (control records included) is part of two committed
// transactions, the committed transactions consumed exactly the committed
// input, and the output read read_committed holds every committed input
// key exactly once and nothing of the aborted input.
func TestTxnEtlAcrossCoordinatorKills(t *testing.T) {
	const in, out, group, partitions, rounds = "eos-in", "eos-out", "eos-etl", 6, 3
	c := straittest.StartCluster(t, 3, straittest.WithTopic(in, partitions, 3), straittest.WithTopic(out, partitions, 3),
		straittest.WithConfigs(map[string]string{
			"leader.imbalance.check.interval.seconds": "1",
			"group.consumer.heartbeat.interval.ms":    "250",
			"group.consumer.session.timeout.ms":       "20000",
		}))
	for p := int32(0); p < partitions; p++ {
		c.WaitISR(in, p, 3, 30*time.Second)
		c.WaitISR(out, p, 3, 30*time.Second)
	}
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The input: keys 0, 1, 2, ... produced in transactions of 20 records
	// until the kill rounds are over; every fifth transaction is aborted,
	// so read_committed consumers skip its records. A transaction whose end
	// fails (its coordinator was killed) has an unknown outcome: the
	// producer starts over with a new client, and what the input holds is
	// read back read_committed once the producer is done.
	stopProducing := make(chan struct{})
	var uncertain atomic.Int64
	var pwg sync.WaitGroup
	pwg.Go(func() {
		newProducer := func() *kgo.Client {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("eos-src"),
				kgo.DefaultProduceTopic(in), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
				kgo.UnknownTopicRetries(-1))
			if err != nil {
				t.Error(err)
			}
			return cl
		}
		prod := newProducer()
		defer func() { prod.Close() }()
		restarts := 0
		for n := 0; n < 100_000; n++ {
			select {
			case <-stopProducing:
				return
			default:
			}
			err := prod.BeginTransaction()
			var produceErr error
			if err == nil {
				batch := make([]*kgo.Record, 20)
				for i := range batch {
					batch[i] = &kgo.Record{Key: []byte(strconv.Itoa(n*20 + i))}
				}
				produceErr = prod.ProduceSync(ctx, batch...).FirstErr()
				commit := produceErr == nil && n%5 != 4
				err = prod.EndTransaction(ctx, kgo.TransactionEndTry(commit))
			}
			if err != nil || produceErr != nil {
				uncertain.Add(1)
				if restarts++; restarts > 50 {
					t.Errorf("input transaction %d: produce %v, end %v (%d producer restarts)", n, produceErr, err, restarts)
					return
				}
				t.Logf("input transaction %d: produce %v, end %v: starting a new producer", n, produceErr, err)
				prod.Close()
				prod = newProducer()
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	// The job: each consumer moves what one poll returned in a
	// transaction; only a committed transaction counts what it consumed.
	var (
		mu            sync.Mutex
		partOffsets   = map[partOffset]bool{}
		doubles       []string
		errs          []string
		consumed      atomic.Int64
		total         atomic.Int64 // set once the input is complete
		txns          atomic.Int64
		aborted       atomic.Int64
		produceAborts atomic.Int64 // aborted by the job: a produce failed
		dialAborts    atomic.Int64
		uncertainRecs atomic.Int64 // records of job transactions of unknown outcome
		done          atomic.Bool
		// notCommitted are the job's transactions the client saw end
		// without a commit, kept to tell, should the committed ones not
		// account for the input, an outcome the client was wrong about
		// (the output holds their keys) from input skipped (it does not).
		notCommitted []endedTxn
	)
	total.Store(-1)
	fail := func(format string, args ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// transact is one member's session (TestTxnEtl's transact): it quits
	// after txnsBeforeQuit committed transactions, aborting the next, so
	// members keep leaving and joining (rebalances) through the kills. It
	// reports whether the job is done.
	transact := func(txid string, txnsBeforeQuit int) sessionEnd {
		elog := &endLog{}
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Addrs()...), kgo.WithLogger(elog),
			kgo.TransactionalID(txid), kgo.TransactionTimeout(60*time.Second),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.ServerSideBalancer(),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DefaultProduceTopic(out), kgo.UnknownTopicRetries(-1))
		if err != nil {
			t.Error(err)
			return jobDone
		}
		defer sess.Close()
		ntxns := 0
		for n := 0; n < 1_000_000 && ctx.Err() == nil; n++ {
			if done.Load() {
				return jobDone
			}
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := sess.PollRecords(pctx, 50)
			pcancel()
			for _, fe := range fs.Errors() {
				if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
					t.Logf("%s: fetch error %s[%d]: %v", txid, fe.Topic, fe.Partition, fe.Err)
				}
			}
			if err := sess.Begin(); err != nil {
				fail("%s: begin: %v", txid, err)
				return restartSession
			}
			var recs []partOffset
			data := 0
			var produceErrs atomic.Int64
			fs.EachRecord(func(r *kgo.Record) {
				recs = append(recs, partOffset{r.Partition, r.Offset})
				if r.Attrs.IsControl() {
					return
				}
				data++
				sess.Produce(ctx, &kgo.Record{Key: r.Key}, func(_ *kgo.Record, err error) {
					if err != nil && err != kgo.ErrAborting {
						produceErrs.Add(1)
						t.Logf("%s: transactional produce: %v", txid, err)
					}
				})
			})
			quit := ntxns >= txnsBeforeQuit
			elog.reset()
			// kgo leaves a failed produce to the application: End would
			// commit the offsets of a record whose output is not written
			// (the Java client instead makes such a transaction abortable).
			// The promises have run once Flush returns.
			if err := sess.Client().Flush(ctx); err != nil {
				fail("%s: flush: %v", txid, err)
				return restartSession
			}
			wantCommit := !quit && produceErrs.Load() == 0
			if !quit && !wantCommit {
				produceAborts.Add(1)
			}
			committed, err := sess.End(ctx, kgo.TransactionEndTry(wantCommit))
			if !committed && len(recs) > 0 {
				why := fmt.Sprintf("want commit %v, end error %v; kgo: %s", wantCommit, err, elog.String())
				cause := endCause(wantCommit, err, why)
				if cause == "other" {
					t.Logf("%s: transaction not committed for a reason not sorted: %s", txid, why)
				}
				mu.Lock()
				notCommitted = append(notCommitted, endedTxn{txid, why, cause, recs})
				mu.Unlock()
			}
			switch {
			case err != nil && errors.Is(err, syscall.ECONNREFUSED):
				// kgo gives up on a killed coordinator it cannot dial
				// before the cluster moves its partitions: the outcome
				// is unknown (the new coordinator finishes a commit whose
				// prepare it finds). A new session of the same
				// transactional id fences whatever is left open.
				dialAborts.Add(1)
				uncertainRecs.Add(int64(data))
				return restartSession
			case err != nil:
				fail("%s: end transaction: %v", txid, err)
				t.Logf("%s: kgo's last lines before the end error:\n    %s", txid, elog.Recent())
				return restartSession
			case !committed && quit:
				return quitSession
			case !committed:
				aborted.Add(1)
				continue
			}
			ntxns++
			if len(recs) == 0 {
				continue
			}
			txns.Add(1)
			mu.Lock()
			for _, po := range recs {
				if partOffsets[po] {
					doubles = append(doubles, fmt.Sprintf("%s p%d o%d", txid, po.part, po.offset))
				}
				partOffsets[po] = true
			}
			mu.Unlock()
			consumed.Add(int64(data))
		}
		return jobDone
	}
	var wg sync.WaitGroup
	var sessions atomic.Int64
	for i := range 3 {
		wg.Go(func() {
			for j := 0; j < 1000 && ctx.Err() == nil; {
				sessions.Add(1)
				switch transact(fmt.Sprintf("eos-etl-%d-%d", i, j), 20+10*i) {
				case jobDone:
					return
				case quitSession:
					j++
				}
			}
		})
	}

	// progress waits for the job to commit n more records.
	progress := func(n int64, why string) {
		t.Helper()
		want := consumed.Load() + n
		deadline := time.Now().Add(60 * time.Second)
		for consumed.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the job committed %d of %d records", why, consumed.Load(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	coordinator := func(txn bool) int32 {
		t.Helper()
		for range 100 {
			fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
			if txn {
				co := adm.FindTxnCoordinators(fctx, "eos-src")["eos-src"]
				fcancel()
				if co.Err == nil {
					return co.NodeID
				}
			} else {
				co := adm.FindGroupCoordinators(fctx, group)[group]
				fcancel()
				if co.Err == nil {
					return co.NodeID
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("no coordinator found (transactions: %v)", txn)
		return -1
	}

	// Before each kill every replica is back in sync, so the killed broker
	// is never the last in-sync replica of a partition (that would leave
	// the partition without a leader until it returns, a different test).
	inSync := func() {
		t.Helper()
		for p := int32(0); p < partitions; p++ {
			c.WaitISR(in, p, 3, 60*time.Second)
			c.WaitISR(out, p, 3, 60*time.Second)
		}
		c.WaitISR("__consumer_offsets", 0, 3, 60*time.Second)
		c.WaitISR("__transaction_state", 0, 3, 60*time.Second)
	}
	progress(300, "before the kills")
	for round := range rounds {
		for _, txn := range []bool{false, true} {
			what := "group"
			if txn {
				what = "transaction"
			}
			inSync()
			id := coordinator(txn)
			c.Kill(id)
			t.Logf("round %d: killed %s coordinator %d at %d records", round, what, id, consumed.Load())
			progress(200, fmt.Sprintf("round %d, %s coordinator %d killed", round, what, id))
			c.Restart(id)
			progress(200, fmt.Sprintf("round %d, %s coordinator %d restarted", round, what, id))
		}
	}
	close(stopProducing)
	pwg.Wait()
	inputKeys := readCommitted(t, c, in, partitions)
	total.Store(int64(len(inputKeys)))
	// The job is done when the group's committed offsets reach the end of
	// the input (what its committed transactions consumed, known or not).
	waitCommittedToEnd(t, c, group, in, partitions)
	done.Store(true)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d input transactions had an unknown outcome", uncertain.Load())
	t.Logf("%d input records, %d consumed in %d committed transactions by %d member sessions (%d aborted; %d more, of %d records, of unknown outcome: kgo could not dial the killed coordinator)",
		total.Load(), consumed.Load(), txns.Load(), sessions.Load(), aborted.Load(), dialAborts.Load(), uncertainRecs.Load())
	causes := map[string]int{}
	for _, e := range notCommitted {
		causes[e.cause]++
	}
	t.Logf("job transactions with records that did not commit, by cause: %v; %d aborted by the job as a produce failed", causes, produceAborts.Load())
	if len(errs) > 0 {
		t.Errorf("job errors: %v", errs[:min(len(errs), 10)])
	}
	if len(doubles) > 0 {
		t.Fatalf("%d input offsets in two committed transactions: %v", len(doubles), doubles[:min(len(doubles), 20)])
	}
	// Checked after the output is read, to say which input records the
	// committed transactions did not consume and whether the output has
	// them.
	countWrong := consumed.Load() > total.Load() || consumed.Load()+uncertainRecs.Load() < total.Load()

	// The output, read_committed, holds every input key exactly once.
	rd := c.Client(kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	keys := map[int]int{}
	n := int64(0)
	rdeadline := time.Now().Add(60 * time.Second)
	for n < total.Load() && time.Now().Before(rdeadline) {
		pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := rd.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			k, err := strconv.Atoi(string(r.Key))
			if err != nil {
				t.Errorf("output key %q", r.Key)
				return
			}
			keys[k]++
			n++
		})
	}
	// Anything past the total would be a duplicate: read a little more.
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
	rd.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
		k, _ := strconv.Atoi(string(r.Key))
		keys[k]++
		n++
	})
	pcancel()
	if countWrong {
		t.Errorf("the committed transactions consumed %d records (and %d more in transactions of unknown outcome) of %d; %s",
			consumed.Load(), uncertainRecs.Load(), total.Load(), notConsumed(inputKeys, keys, partOffsets, notCommitted))
	}
	var missing, twice, fromAborted []int
	for k := range inputKeys {
		switch keys[k] {
		case 0:
			missing = append(missing, k)
		case 1:
		default:
			twice = append(twice, k)
		}
	}
	for k := range keys {
		if _, ok := inputKeys[k]; !ok {
			fromAborted = append(fromAborted, k)
		}
	}
	if len(missing) > 0 || len(twice) > 0 || len(fromAborted) > 0 || n != total.Load() {
		t.Fatalf("output: %d records for %d input keys; %d missing %v, %d more than once %v, %d from aborted input %v",
			n, total.Load(), len(missing), missing[:min(len(missing), 20)], len(twice), twice[:min(len(twice), 20)],
			len(fromAborted), fromAborted[:min(len(fromAborted), 20)])
	}
}

// readCommitted reads a topic read_committed from its start to its end and
// returns where each key is; a key seen twice fails the test.
func readCommitted(t *testing.T, c *straittest.Cluster, topic string, partitions int32) map[int]partOffset {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := c.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	rd := c.Client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := map[int32]int64{}
	keys := map[int]partOffset{}
	done := func() bool {
		for p := int32(0); p < partitions; p++ {
			end, _ := ends.Lookup(topic, p)
			if next[p] < end.Offset {
				return false
			}
		}
		return true
	}
	for !done() {
		if ctx.Err() != nil {
			t.Fatalf("reading %s read_committed: at %v, ends %v", topic, next, ends)
		}
		fs := rd.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			k, err := strconv.Atoi(string(r.Key))
			if _, twice := keys[k]; err != nil || twice {
				t.Errorf("%s: key %q at %d@%d read twice or unreadable", topic, r.Key, r.Partition, r.Offset)
			}
			keys[k] = partOffset{r.Partition, r.Offset}
		})
	}
	return keys
}

// waitCommittedToEnd waits until group's committed offsets of topic reach
// its end offsets.
func waitCommittedToEnd(t *testing.T, c *straittest.Cluster, group, topic string, partitions int32) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ends, err := c.Admin().ListEndOffsets(ctx, topic)
		var offs kadm.OffsetResponses
		if err == nil {
			offs, err = c.Admin().FetchOffsets(ctx, group)
		}
		cancel()
		reached := err == nil
		for p := int32(0); reached && p < partitions; p++ {
			end, _ := ends.Lookup(topic, p)
			o, ok := offs.Lookup(topic, p)
			reached = ok && o.At >= end.Offset
		}
		if reached {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group's committed offsets of %s did not reach its end: %v (ends %v, %v)", topic, offs, ends, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// endedTxn is a job transaction the client saw end without a commit.
type endedTxn struct {
	txid  string
	why   string // the End's result and what kgo logged about it
	cause string // endCause
	recs  []partOffset
}

// endCause sorts why a transaction did not commit, from what kgo logged.
func endCause(wantCommit bool, err error, why string) string {
	switch {
	case !wantCommit:
		return "session quit or a produce failed"
	case err != nil:
		return "end error"
	case strings.Contains(why, "was_failed true"):
		return "revoked or lost"
	case strings.Contains(why, "retrying as abort"):
		return "EndTxn failed, retried as abort"
	case strings.Contains(why, "can_try_commit false"):
		return "offset commit or heartbeat failed"
	}
	return "other"
}

// notConsumed describes the input records no committed transaction
// consumed: those the output holds (a transaction committed that the client
// was told did not) and those it does not (input skipped), each with the
// not-committed transaction that last consumed it, if any.
func notConsumed(inputKeys map[int]partOffset, outputKeys map[int]int, committed map[partOffset]bool, ended []endedTxn) string {
	lastEnded := map[partOffset]int{}
	for i, e := range ended {
		for _, po := range e.recs {
			lastEnded[po] = i
		}
	}
	var inOutput, skipped []int
	byTxn := map[int]int{} // not-committed transaction -> its records in the output
	var noTxn []partOffset
	for k, po := range inputKeys {
		if committed[po] {
			continue
		}
		i, ok := lastEnded[po]
		if outputKeys[k] > 0 {
			inOutput = append(inOutput, k)
			if ok {
				byTxn[i]++
			}
		} else {
			skipped = append(skipped, k)
		}
		if !ok {
			noTxn = append(noTxn, po)
		}
	}
	slices.Sort(inOutput)
	slices.Sort(skipped)
	var b strings.Builder
	fmt.Fprintf(&b, "%d input records in no committed transaction: %d of them in the output (a commit the client saw as none) %v, %d not (skipped) %v; %d consumed by no transaction at all %v",
		len(inOutput)+len(skipped), len(inOutput), inOutput[:min(len(inOutput), 20)], len(skipped), skipped[:min(len(skipped), 20)],
		len(noTxn), noTxn[:min(len(noTxn), 20)])
	n := 0
	for i, e := range ended {
		if byTxn[i] == 0 || n >= 10 {
			continue
		}
		n++
		fmt.Fprintf(&b, "\n  %s (%d records, %d in the output): %s", e.txid, len(e.recs), byTxn[i], e.why)
	}
	return b.String()
}

// endLog keeps what kgo logs about ending a transaction (End's decision,
// EndTxn and offset commit failures) and about its producer id (the epochs
// it got, a produce error failing it) since its last reset, and the last
// lines before it, which a job error reports.
type endLog struct {
	mu     sync.Mutex
	lines  []string
	recent []string
}

func (l *endLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *endLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lower := strings.ToLower(msg)
	if !strings.Contains(lower, "transaction") && !strings.Contains(lower, "commit") &&
		!strings.Contains(lower, "producer") && level < kgo.LogLevelWarn {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	line := fmt.Sprintf("%s %v", msg, keyvals)
	l.lines = append(l.lines, line)
	if len(l.lines) > 30 { // the last ones: End's decision comes last
		l.lines = l.lines[1:]
	}
	l.recent = append(l.recent, line)
	if len(l.recent) > 40 {
		l.recent = l.recent[1:]
	}
}

func (l *endLog) reset() {
	l.mu.Lock()
	l.lines = nil
	l.mu.Unlock()
}

func (l *endLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "; ")
}

// Recent is the last lines kept, across resets: the transactions before a
// job error.
func (l *endLog) Recent() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.recent, "\n    ")
}
