package straittest_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// partOffset is one consumed input record.
type partOffset struct {
	part   int32
	offset int64
}

// Exactly-once across coordinator moves: a consume-transform-produce job
// (three transactional KIP-848 consumers, read_committed, as franz-go's
// TestTxnEtl runs it) copies a topic that is being produced to while the
// broker coordinating its group and then the one coordinating its
// transactions are killed -9 and restarted, three rounds of each. Checked
// as TestTxnEtl checks it: no input offset is part of two committed
// transactions, the committed transactions consumed exactly the input,
// and the output read read_committed holds every input key exactly once.
func TestTxnEtlAcrossCoordinatorKills(t *testing.T) {
	const in, out, group, partitions, rounds = "eos-in", "eos-out", "eos-etl", 6, 3
	c := straittest.StartCluster(t, 3, straittest.WithTopic(in, partitions, 3), straittest.WithTopic(out, partitions, 3),
		straittest.WithConfigs(map[string]string{
			"leader.imbalance.check.interval.seconds": "1",
			"group.consumer.heartbeat.interval.ms":    "250",
			"group.consumer.session.timeout.ms":       "20000",
			"transaction.state.log.min.isr":           "2",
			"min.insync.replicas":                     "2",
		}))
	for p := int32(0); p < partitions; p++ {
		c.WaitISR(in, p, 3, 30*time.Second)
		c.WaitISR(out, p, 3, 30*time.Second)
	}
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The input: keys 0, 1, 2, ... produced (idempotently, acks=all) until
	// the kill rounds are over.
	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(in),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	stopProducing := make(chan struct{})
	var produced atomic.Int64
	var pwg sync.WaitGroup
	pwg.Go(func() {
		for n := 0; n < 100_000; n++ {
			select {
			case <-stopProducing:
				return
			default:
			}
			batch := make([]*kgo.Record, 10)
			for i := range batch {
				batch[i] = &kgo.Record{Key: []byte(strconv.Itoa(n*10 + i))}
			}
			if err := prod.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				t.Errorf("producing the input: %v", err)
				return
			}
			produced.Add(int64(len(batch)))
			time.Sleep(10 * time.Millisecond)
		}
	})

	// The job: each consumer moves what one poll returned in a
	// transaction; only a committed transaction counts what it consumed.
	var (
		mu          sync.Mutex
		partOffsets = map[partOffset]bool{}
		doubles     []string
		errs        []string
		consumed    atomic.Int64
		total       atomic.Int64 // set once the input is complete
		txns        atomic.Int64
		aborted     atomic.Int64
	)
	total.Store(-1)
	fail := func(format string, args ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i := range 3 {
		txid := "eos-etl-" + strconv.Itoa(i)
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Addrs()...),
			kgo.TransactionalID(txid), kgo.TransactionTimeout(60*time.Second),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.ServerSideBalancer(),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DefaultProduceTopic(out), kgo.UnknownTopicRetries(-1))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer sess.Close()
			for n := 0; n < 1_000_000 && ctx.Err() == nil; n++ {
				if tot := total.Load(); tot >= 0 && consumed.Load() >= tot {
					return
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
					return
				}
				var recs []partOffset
				fs.EachRecord(func(r *kgo.Record) {
					recs = append(recs, partOffset{r.Partition, r.Offset})
					if r.Attrs.IsControl() {
						return
					}
					sess.Produce(ctx, &kgo.Record{Key: r.Key}, func(_ *kgo.Record, err error) {
						if err != nil && err != kgo.ErrAborting {
							t.Logf("%s: transactional produce: %v", txid, err)
						}
					})
				})
				committed, err := sess.End(ctx, kgo.TryCommit)
				if err != nil {
					fail("%s: end transaction: %v", txid, err)
					continue
				}
				if !committed {
					aborted.Add(1)
					continue
				}
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
				consumed.Add(int64(len(recs)))
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
				co := adm.FindTxnCoordinators(fctx, "eos-etl-0")["eos-etl-0"]
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

	progress(300, "before the kills")
	for round := range rounds {
		for _, txn := range []bool{false, true} {
			what := "group"
			if txn {
				what = "transaction"
			}
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
	total.Store(produced.Load())
	deadline := time.Now().Add(90 * time.Second)
	for consumed.Load() < total.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d input records, %d consumed in %d committed transactions (%d aborted)",
		total.Load(), consumed.Load(), txns.Load(), aborted.Load())
	if len(errs) > 0 {
		t.Errorf("job errors: %v", errs[:min(len(errs), 10)])
	}
	if len(doubles) > 0 {
		t.Fatalf("%d input offsets in two committed transactions: %v", len(doubles), doubles[:min(len(doubles), 20)])
	}
	if consumed.Load() != total.Load() {
		t.Fatalf("the committed transactions consumed %d records of %d", consumed.Load(), total.Load())
	}

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
	var missing, twice []int
	for k := 0; k < int(total.Load()); k++ {
		switch keys[k] {
		case 0:
			missing = append(missing, k)
		case 1:
		default:
			twice = append(twice, k)
		}
	}
	if len(missing) > 0 || len(twice) > 0 || n != total.Load() {
		t.Fatalf("output: %d records for %d input keys; %d missing %v, %d more than once %v", n, total.Load(),
			len(missing), missing[:min(len(missing), 20)], len(twice), twice[:min(len(twice), 20)])
	}
}
