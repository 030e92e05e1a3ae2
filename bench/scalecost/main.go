//go:build linux

// Command scalecost drives the scaling phase's load (strait-bench compare,
// scaleLoad: 1 KiB records, acks=1, no compression, sticky or round-robin,
// linger 5 ms, 32 MiB buffered) at a running broker and prints, per phase, the
// broker's CPU seconds per GB (from /proc/<pid>/stat), its own, and the
// producer's batches per request, records per batch and the partitions it
// wrote to: where the cost
// per byte goes as the partition count grows, on a shared machine where
// MB/s alone says little. -profile sends SIGUSR1/SIGUSR2 around the
// settled produce (or the consume) phase, for bench/strait-pprof.
//
//	scalecost -addr 127.0.0.1:9092 -pid $(pidof strait) -parts 10000 [-partitioner round-robin]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strait/strait/bench/inturn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func ticks(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		panic(err)
	}
	s := string(b)
	s = s[strings.LastIndexByte(s, ')')+2:]
	f := strings.Fields(s)
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return float64(u+k) / 100
}

func self() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

type batchHook struct{ batches, records, reqs atomic.Int64 }

func (h *batchHook) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.batches.Add(1)
	h.records.Add(int64(m.NumRecords))
}
func (h *batchHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == 0 {
		h.reqs.Add(1)
	}
}

var (
	addr    = flag.String("addr", "", "the broker's PLAINTEXT listener")
	pid     = flag.Int("pid", 0, "the broker's process id (its CPU is read from /proc)")
	parts   = flag.Int("parts", 100, "partitions, created as topics of at most 1,000 (deleted at the end)")
	secs    = flag.Duration("d", 3*time.Second, "each produce phase (fresh, then settled); the consume phase reads both back from offset 0")
	prefix  = flag.String("prefix", "scale", "topic name prefix")
	profile = flag.String("profile", "", "produce or consume: USR1/USR2 around the settled phase")
	partTo  = flag.String("partitioner", "sticky", "sticky: 16 records (16 KiB) to a partition, then the next in order, each produce phase running on past -d (at most 10x) until every partition had its turn; round-robin: a record to each partition in turn")
)

// written counts the partitions whose end offset moved from a to b.
func written(a, b kadm.ListedOffsets) int {
	n := 0
	b.Each(func(o kadm.ListedOffset) {
		if prev, ok := a.Lookup(o.Topic, o.Partition); ok && o.Offset > prev.Offset {
			n++
		}
	})
	return n
}

func main() {
	flag.Parse()
	partitioner := kgo.RoundRobinPartitioner()
	minRecords := 0
	switch *partTo {
	case "sticky":
		// strait-bench's scaling steps' partitioner, on topics of at most 1,000
		// partitions written in turn.
		turn := inturn.TurnRecords(1024) // the records are of 1 KiB
		partitioner = inturn.Partitioner{Records: turn}
		minRecords = inturn.MinRecords((*parts+999)/1000, min(*parts, 1000), turn)
	case "round-robin":
	default:
		fmt.Fprintln(os.Stderr, "-partitioner: want sticky or round-robin")
		os.Exit(2)
	}
	ctx := context.Background()
	adm := kadm.NewClient(must(kgo.NewClient(kgo.SeedBrokers(*addr))))
	var topics []string
	for left, i := *parts, 0; left > 0; i++ {
		n := min(left, 1000)
		t := fmt.Sprintf("%s-%d-%d", *prefix, *parts, i)
		r, err := adm.CreateTopic(ctx, int32(n), 1, nil, t)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "create", t, err)
			os.Exit(1)
		}
		topics = append(topics, t)
		left -= n
	}
	time.Sleep(2 * time.Second)
	val := make([]byte, 1024)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	phase := func(name string, sig bool) {
		h := &batchHook{}
		cl := must(kgo.NewClient(kgo.SeedBrokers(*addr), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic(topics[0]),
			kgo.RequiredAcks(kgo.LeaderAck()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(partitioner),
			kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedBytes(32<<20), kgo.MaxBufferedRecords(1<<20),
			kgo.MetadataMinAge(50*time.Millisecond), kgo.WithHooks(h)))
		for i := range 100 {
			cl.Produce(ctx, &kgo.Record{Topic: topics[i%len(topics)], Value: val}, nil)
		}
		cl.Flush(ctx)
		h.batches.Store(0)
		h.records.Store(0)
		h.reqs.Store(0)
		if sig {
			syscall.Kill(*pid, syscall.SIGUSR1)
		}
		var acked atomic.Int64
		before := must(adm.ListEndOffsets(ctx, topics...))
		b0, s0, t0 := ticks(*pid), self(), time.Now()
		deadline, stretched := t0.Add(*secs), t0.Add(10**secs)
		for i := 0; ; i++ {
			if now := time.Now(); i%256 == 0 && (now.After(stretched) || now.After(deadline) && i >= minRecords) {
				break
			}
			cl.Produce(ctx, &kgo.Record{Topic: topics[i%len(topics)], Value: val}, func(_ *kgo.Record, err error) {
				if err == nil {
					acked.Add(1)
				}
			})
		}
		cl.Flush(ctx)
		el := time.Since(t0)
		b1, s1 := ticks(*pid), self()
		if sig {
			syscall.Kill(*pid, syscall.SIGUSR2)
		}
		cl.Close()
		after := must(adm.ListEndOffsets(ctx, topics...))
		gb := float64(acked.Load()) * 1024 / 1e9
		fmt.Printf("%s p=%d %s: %.1f MB/s over %.1f s, broker %.2f CPU s/GB (%.2fs), client %.2f CPU s/GB, batches %d (%.1f rec/batch), requests %d (%.1f batches/req), partitions written %d\n",
			name, *parts, *partTo, gb*1e3/el.Seconds(), el.Seconds(), (b1-b0)/gb, b1-b0, (s1-s0)/gb, h.batches.Load(), float64(h.records.Load())/float64(max(1, h.batches.Load())),
			h.reqs.Load(), float64(h.batches.Load())/float64(max(1, h.reqs.Load())), written(before, after))
	}
	phase("fresh", false)
	phase("settled", *profile == "produce")
	to := must(adm.ListEndOffsets(ctx, topics...))
	assign := map[string]map[int32]kgo.Offset{}
	remaining := 0
	ends := map[string]map[int32]int64{}
	to.Each(func(o kadm.ListedOffset) {
		if assign[o.Topic] == nil {
			assign[o.Topic] = map[int32]kgo.Offset{}
			ends[o.Topic] = map[int32]int64{}
		}
		assign[o.Topic][o.Partition] = kgo.NewOffset().At(0)
		ends[o.Topic][o.Partition] = o.Offset
		if o.Offset > 0 {
			remaining++
		}
	})
	if *profile == "consume" {
		syscall.Kill(*pid, syscall.SIGUSR1)
	}
	b0, s0, t0 := ticks(*pid), self(), time.Now()
	cl := must(kgo.NewClient(kgo.SeedBrokers(*addr), kgo.ConsumePartitions(assign), kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(1<<20), kgo.FetchMaxWait(500*time.Millisecond)))
	var n, by int64
	var fetches int
	done := map[string]bool{}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		fetches++
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			end := ends[fp.Topic][fp.Partition]
			for _, r := range fp.Records {
				n++
				by += int64(len(r.Value))
				k := fp.Topic + strconv.Itoa(int(fp.Partition))
				if r.Offset == end-1 && !done[k] {
					done[k] = true
					remaining--
				}
			}
		})
	}
	el := time.Since(t0)
	b1, s1 := ticks(*pid), self()
	if *profile == "consume" {
		syscall.Kill(*pid, syscall.SIGUSR2)
	}
	cl.Close()
	gb := float64(by) / 1e9
	fmt.Printf("consume p=%d: %.1f MB/s, broker %.2f CPU s/GB (%.2fs), client %.2f CPU s/GB, polls %d, records %d\n",
		*parts, gb*1e3/el.Seconds(), (b1-b0)/gb, b1-b0, (s1-s0)/gb, fetches, n)
	// The data goes with the topics.
	adm.DeleteTopics(ctx, topics...)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
