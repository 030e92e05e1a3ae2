package durability

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKill9MidTransaction kills the broker with SIGKILL while one
// transaction is open and others were just committed and aborted: after
// the restart, read_committed readers see exactly the committed records,
// the open transaction is aborted once its timeout passes (so the last
// stable offset moves on), and the transactional id works again.
func TestKill9MidTransaction(t *testing.T) {
	t.Setenv("KAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS", "200")
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	const topic = "txn-durable"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	txnClient := func(id string, timeout time.Duration) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.TransactionalID(id), kgo.TransactionTimeout(timeout),
			kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	txn := func(cl *kgo.Client, commit bool, prefix string, n int) []string {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for i := 0; i < n; i++ {
			v := fmt.Sprintf("%s-%04d", prefix, i)
			vals = append(vals, v)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		return vals
	}

	steady := txnClient("steady", time.Minute)
	var committed []string
	for i := 0; i < 5; i++ {
		committed = append(committed, txn(steady, true, fmt.Sprintf("c%d", i), 50)...)
		txn(steady, false, fmt.Sprintf("a%d", i), 20)
	}
	open := txnClient("open", 3*time.Second)
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		if err := open.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("open-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p.kill9()
	steady.Close()
	open.Close()

	p = startProcess(t, dir, port)
	defer p.term(t)
	if got := readCommitted(t, p.addr, topic, len(committed)); !slices.Equal(got, sorted(committed)) {
		t.Fatalf("after SIGKILL read_committed saw %d records, want the %d committed", len(got), len(committed))
	}
	// The open transaction times out; a new one under its id commits and
	// is visible behind it.
	again := txnClient("open", time.Minute)
	defer again.Close()
	more := txn(again, true, "after", 10)
	want := sorted(append(slices.Clone(committed), more...))
	if got := readCommitted(t, p.addr, topic, len(want)); !slices.Equal(got, want) {
		t.Fatalf("read_committed saw %d records, want %d", len(got), len(want))
	}
}

// readCommitted reads n values read_committed from the topic's start, then
// checks for a moment that nothing more arrives; it returns them sorted.
func readCommitted(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for len(out) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	extra, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	cl.PollFetches(extra).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	return sorted(out)
}

func sorted(vs []string) []string {
	out := slices.Clone(vs)
	slices.Sort(out)
	return out
}
