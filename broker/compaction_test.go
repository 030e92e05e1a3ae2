package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactedTopicKeepsLatestPerKey: on a topic with cleanup.policy=compact
// the broker's cleaner leaves the latest record of every key at its original
// offset, and a record without a key is refused with INVALID_RECORD.
func TestCompactedTopicKeepsLatestPerKey(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir, "log.cleaner.backoff.ms", "50")
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("compacted"), kgo.RecordRetries(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // so that ~2.5 MB of records roll segments
	createTopic(t, cl, "compacted", 1, map[string]*string{
		"cleanup.policy":            kgoStr("compact"),
		"segment.bytes":             kgoStr("1048576"),
		"min.cleanable.dirty.ratio": kgoStr("0.01"),
	})
	const keys, rounds = 50, 120
	value := make([]byte, 400)
	var recs []*kgo.Record
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%02d", k)), Value: append([]byte(fmt.Sprintf("r%03d-", r)), value...)})
		}
	}
	produceAll(t, cl, recs) // ~2.5 MB: a few segments roll
	latest := map[string]int64{}
	for _, r := range recs {
		latest[string(r.Key)] = r.Offset
	}

	err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("record without a key on a compacted topic: %v, want INVALID_RECORD", err)
	}

	// Wait for the cleaner: the sealed segments (the first ~2/3 of the
	// records) shrink to one record per key; the active segment stays.
	deadline := time.Now().Add(30 * time.Second)
	var got []*kgo.Record
	for {
		got = readAllRecords(t, srv, "compacted")
		if len(got) < len(recs)/2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got) >= len(recs)/2 {
		entries, _ := os.ReadDir(filepath.Join(dir, "logs", "compacted-0"))
		var files []string
		for _, e := range entries {
			info, _ := e.Info()
			files = append(files, fmt.Sprintf("%s:%d", e.Name(), info.Size()))
		}
		t.Fatalf("%d of %d records remain after 30 s: nothing was compacted; partition files %v", len(got), len(recs), files)
	}
	seen := map[string]int64{}
	early := map[string]int{} // records per key in the first third, all in cleaned segments
	for _, r := range got {
		seen[string(r.Key)] = r.Offset
		if r.Offset < int64(len(recs)/3) {
			early[string(r.Key)]++
		}
	}
	for k, n := range early {
		if n > 1 {
			t.Fatalf("key %s appears %d times in the cleaned segments", k, n)
		}
	}
	for k, off := range latest {
		if seen[k] != off {
			t.Fatalf("key %s: latest offset served %d, produced last at %d", k, seen[k], off)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Offset <= got[i-1].Offset {
			t.Fatalf("offsets not increasing after compaction: %d then %d", got[i-1].Offset, got[i].Offset)
		}
	}
}

func kgoStr(s string) *string { return &s }

// readAllRecords reads a one-partition topic from its start up to its end.
func readAllRecords(t *testing.T, srv interface{ Addr() string }, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		out = append(out, fs.Records()...)
		if n := len(out); n > 0 {
			// Stop at the high watermark.
			var hw int64
			fs.EachPartition(func(p kgo.FetchTopicPartition) { hw = p.HighWatermark })
			if hw > 0 && out[n-1].Offset >= hw-1 {
				return out
			}
		}
	}
}
