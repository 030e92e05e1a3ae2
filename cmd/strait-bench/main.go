// Command strait-bench measures produce and consume throughput of any Kafka
// bootstrap address with franz-go: it creates a topic, produces -records
// records of -size bytes as fast as the client allows, then consumes them all
// from the start, and prints records/s and MB/s for both (text or -json).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type result struct {
	Phase      string  `json:"phase"`
	Records    int64   `json:"records"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	RecordsSec float64 `json:"records_per_sec"`
	MBSec      float64 `json:"mb_per_sec"`
}

func newResult(phase string, n, b int64, d time.Duration) result {
	s := d.Seconds()
	return result{Phase: phase, Records: n, Bytes: b, Seconds: s, RecordsSec: float64(n) / s, MBSec: float64(b) / s / 1e6}
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap addresses, comma-separated")
	topic := flag.String("topic", fmt.Sprintf("bench-%d", time.Now().UnixNano()), "topic (created if missing)")
	partitions := flag.Int("partitions", 6, "partitions of the created topic")
	records := flag.Int64("records", 1_000_000, "records to produce and consume")
	size := flag.Int("size", 100, "value size in bytes")
	acks := flag.String("acks", "all", "acks: all, 1 or 0")
	codec := flag.String("compression", "none", "none, gzip, snappy, lz4, zstd")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()

	seeds := strings.Split(*brokers, ",")
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(*topic),
		kgo.ProducerBatchMaxBytes(1 << 20), kgo.MaxBufferedRecords(1 << 20), kgo.ProducerLinger(5 * time.Millisecond)}
	switch *acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		fail("unknown -acks %q", *acks)
	}
	switch *codec {
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		fail("unknown -compression %q", *codec)
	}
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		fail("client: %v", err)
	}
	ctx := context.Background()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, int32(*partitions), -1, nil, *topic); err != nil {
		fail("create topic: %v", err)
	}

	value := make([]byte, *size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := int64(0); i < *records; i++ {
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil && failed.Add(1) == 1 {
				firstErr.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	produced := newResult("produce", *records, *records*int64(*size), time.Since(start))
	prod.Close()
	if n := failed.Load(); n > 0 {
		fail("%d records failed, first: %v", n, firstErr.Load())
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		fail("client: %v", err)
	}
	var got, gotBytes int64
	start = time.Now()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for got < *records {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			fail("consumed %d of %d records before the deadline", got, *records)
		}
		fs.EachError(func(t string, p int32, err error) { fail("fetch %s/%d: %v", t, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got++; gotBytes += int64(len(r.Value)) })
	}
	consumed := newResult("consume", got, gotBytes, time.Since(start))
	cons.Close()

	if *asJSON {
		json.NewEncoder(os.Stdout).Encode([]result{produced, consumed})
		return
	}
	for _, r := range []result{produced, consumed} {
		fmt.Printf("%-8s %10d records %8.2f s %12.0f records/s %8.1f MB/s\n", r.Phase, r.Records, r.Seconds, r.RecordsSec, r.MBSec)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "strait-bench: "+format+"\n", args...)
	os.Exit(1)
}
