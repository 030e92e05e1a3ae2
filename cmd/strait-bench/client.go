package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/strait/strait/bench/inturn"
	"github.com/twmb/franz-go/pkg/kgo"
)

func parseAcks(s string) (kgo.Acks, error) {
	switch s {
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "0":
		return kgo.NoAck(), nil
	}
	return kgo.Acks{}, fmt.Errorf("acks %q: want 0, 1 or all", s)
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

func parsePartitioner(s string) (kgo.Partitioner, error) {
	switch s {
	case "sticky", "":
		return kgo.StickyKeyPartitioner(nil), nil
	case "round-robin":
		return kgo.RoundRobinPartitioner(), nil
	case partitionerStickyInTurn:
		return inturn.Partitioner{Records: inturn.TurnRecords(1024)}, nil
	}
	return nil, fmt.Errorf("partitioner %q: want sticky, round-robin or %s", s, partitionerStickyInTurn)
}

// partitionerStickyInTurn names inturn.Partitioner in a scenario.
const partitionerStickyInTurn = "sticky-in-turn"

// baseOpts are the options every client of the harness shares: idempotence
// is off for every broker (Strait does not serve InitProducerId yet, and
// franz-go would fall back silently there), so the comparison is like for like.
// STRAIT_BENCH_LOG=info (or debug, warn, error) turns on franz-go's log.
// A broker given as a secured listener's key (listenerKey) gets the TLS and
// SASL options registered for it.
func baseOpts(brokers []string) []kgo.Opt {
	seeds := make([]string, len(brokers))
	for i, b := range brokers {
		seeds[i] = seedAddr(b)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DisableIdempotentWrite(),
		kgo.ClientID("strait-bench"),
		// Metadata refreshes after CreateTopics should not wait the default 5 s.
		kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	}
	if len(brokers) > 0 {
		opts = append(opts, securityOpts(brokers[0])...)
	}
	levels := map[string]kgo.LogLevel{"error": kgo.LogLevelError, "warn": kgo.LogLevelWarn, "info": kgo.LogLevelInfo, "debug": kgo.LogLevelDebug}
	if level, ok := levels[os.Getenv("STRAIT_BENCH_LOG")]; ok {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, nil)))
	}
	return opts
}

// producerOpts configures a producer client as the scenario says. The buffer
// limits are the Java client's (buffer.memory 32 MiB); franz-go's batch size
// (1 MB) is kept unless the scenario sets one.
func producerOpts(brokers []string, topic string, s Scenario, linger time.Duration) []kgo.Opt {
	acks, _ := parseAcks(s.Acks)
	codec, _ := parseCompression(s.Compression)
	part, _ := parsePartitioner(s.Partitioner)
	if s.Partitioner == partitionerStickyInTurn {
		part = inturn.Partitioner{Records: inturn.TurnRecords(s.RecordSize)}
	}
	opts := append(baseOpts(brokers),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(part),
		kgo.ProducerLinger(linger),
		kgo.MaxBufferedBytes(32<<20),
		kgo.MaxBufferedRecords(1<<20),
	)
	if s.BatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(s.BatchBytes)))
	}
	return opts
}

// consumerOpts reads the given partitions from the given offsets without a
// group (Strait has no group coordinator yet), with the Java consumer's
// default fetch sizes (fetch.max.bytes 50 MiB, max.partition.fetch.bytes 1 MiB).
func consumerOpts(brokers []string, from map[string]map[int32]kgo.Offset) []kgo.Opt {
	return append(baseOpts(brokers),
		kgo.ConsumePartitions(from),
		kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(1<<20),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
}

// valuePool is text of random words from a small vocabulary, so compressed
// scenarios compress about as well as typical JSON or log lines (zstd about
// 3x, lz4 about 2x) instead of a run of one byte. Values are slices of it.
type valuePool struct{ buf []byte }

const valuePoolBytes = 8 << 20

func newValuePool() *valuePool {
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 512)
	for i := range words {
		n := 3 + rng.IntN(8)
		var b strings.Builder
		for range n {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		words[i] = b.String()
	}
	buf := make([]byte, 0, valuePoolBytes+64)
	for len(buf) < valuePoolBytes {
		buf = append(buf, words[rng.IntN(len(words))]...)
		buf = append(buf, ' ')
		if rng.IntN(12) == 0 {
			buf = append(buf, fmt.Sprintf("%d,", rng.IntN(100000))...)
		}
	}
	return &valuePool{buf: buf[:valuePoolBytes]}
}

// value returns size bytes of the pool starting at a position derived from i;
// the slice shares the pool's memory (the client only reads it).
func (p *valuePool) value(i uint64, size int) []byte {
	span := uint64(len(p.buf) - size)
	off := (i * 7919 * 64) % span
	return p.buf[off : off+uint64(size) : off+uint64(size)]
}
