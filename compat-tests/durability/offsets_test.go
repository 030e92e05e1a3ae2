package durability

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKill9KeepsCommittedOffsets: a consumer group commits offsets, the
// broker is killed with SIGKILL, and after a restart the group's committed
// offsets are exactly what was committed, and a new member of the group
// resumes from them.
func TestKill9KeepsCommittedOffsets(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("offsets"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 3, 1, nil, "offsets"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		prod.Produce(ctx, &kgo.Record{Value: []byte{byte(i)}}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Consume 150 records in a group and commit what was consumed.
	cons, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.ConsumerGroup("durable-group"), kgo.ConsumeTopics("offsets"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	consumed := 0
	for consumed < 150 {
		fs := cons.PollRecords(ctx, 150-consumed)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d: %v", consumed, ctx.Err())
		}
		consumed += len(fs.Records())
		if err := cons.CommitRecords(ctx, fs.Records()...); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	committed, err := kadm.NewClient(prod).FetchOffsets(ctx, "durable-group")
	if err != nil || committed.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, committed.Error())
	}
	cons.Close()
	var total int64
	committed.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 150 {
		t.Fatalf("committed offsets add up to %d, want 150", total)
	}

	p.kill9()
	p = startProcess(t, dir, port)
	defer p.term(t)

	adm, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var after kadm.OffsetResponses
	for { // the coordinator loads __consumer_offsets after the restart
		after, err = kadm.NewClient(adm).FetchOffsets(ctx, "durable-group")
		if err == nil && after.Error() == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("fetch offsets after restart: %v %v", err, after.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
	committed.Each(func(o kadm.OffsetResponse) {
		a, ok := after.Lookup(o.Topic, o.Partition)
		if !ok || a.At != o.At {
			t.Fatalf("%s/%d: committed %d before SIGKILL, %d after restart", o.Topic, o.Partition, o.At, a.At)
		}
	})

	// A new member resumes from the committed offsets: the remaining 150.
	cons, err = kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.ConsumerGroup("durable-group"), kgo.ConsumeTopics("offsets"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	rest := 0
	for rest < 150 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after restart the group read %d records, want the remaining 150", rest)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if o, _ := after.Lookup(r.Topic, r.Partition); r.Offset < o.At {
				t.Fatalf("%s/%d offset %d is below the committed offset %d", r.Topic, r.Partition, r.Offset, o.At)
			}
			rest++
		})
	}
}
