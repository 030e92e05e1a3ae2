package durability

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIdempotentProducerAcrossKill9: an idempotent producer (franz-go's
// default) keeps producing while the broker is killed with SIGKILL and
// restarted on the same port; it retries what was in flight. Afterwards
// every record it was told succeeded is there exactly once, no record
// appears twice, and each partition holds the records in produce order.
func TestIdempotentProducerAcrossKill9(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("idem"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(time.Millisecond),
		kgo.RecordRetries(1000), kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "idem"); err != nil {
		t.Fatal(err)
	}

	const total = 30000
	var mu sync.Mutex
	acked := map[string]bool{}
	var failed []error
	var wg sync.WaitGroup
	for i := 0; i < total; i++ {
		v := fmt.Sprintf("v%06d", i)
		wg.Add(1)
		// A key per value spreads the records; order is checked per partition.
		cl.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			acked[string(r.Value)] = true
		})
		if i == total/3 {
			// Kill the broker with records in flight, restart it.
			p.kill9()
			p = startProcess(t, dir, port)
		}
	}
	wg.Wait()
	defer p.term(t)
	if len(failed) > 0 {
		t.Fatalf("%d records failed after retries, first: %v", len(failed), failed[0])
	}
	if len(acked) != total {
		t.Fatalf("%d of %d records acknowledged", len(acked), total)
	}

	seen := map[string]int{}
	for part := int32(0); part < 3; part++ {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "idem")
		if err != nil {
			t.Fatal(err)
		}
		end, _ := ends.Lookup("idem", part)
		vals := readPartition(t, p.addr, "idem", part, int(end.Offset))
		for i := 1; i < len(vals); i++ {
			if vals[i] <= vals[i-1] {
				t.Fatalf("partition %d: %q after %q: out of produce order", part, vals[i], vals[i-1])
			}
		}
		for _, v := range vals {
			seen[v]++
		}
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acknowledged record %s appears %d times", v, seen[v])
		}
	}
	for v, n := range seen {
		if n > 1 {
			t.Fatalf("record %s appears %d times", v, n)
		}
	}
	t.Logf("%d records, each exactly once, across a SIGKILL", total)
}
