package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Throughput is one produce or consume phase.
type Throughput struct {
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"` // value bytes, before compression
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"` // 10^6 value bytes per second
}

func newThroughput(n, b int64, d time.Duration) Throughput {
	s := d.Seconds()
	return Throughput{Records: n, Bytes: b, Seconds: s, RecordsPerSec: float64(n) / s, MBPerSec: float64(b) / s / 1e6}
}

// Latency is the end-to-end latency phase: records produced at a fixed rate
// carry their scheduled send time, and a consumer running alongside takes
// the difference on arrival. The schedule time, not the time Produce
// returned, is the start, so a stalled broker cannot hide its stall
// (no coordinated omission). Ack is the same from schedule to the
// producer's acknowledgement.
type Latency struct {
	Rate     float64 `json:"rate"`     // records/s asked for
	Achieved float64 `json:"achieved"` // records/s produced
	Records  int64   `json:"records"`  // measured (after the warm-up)
	Lost     int64   `json:"lost"`     // produced but not consumed before the deadline
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	P999Ms   float64 `json:"p999_ms"`
	MaxMs    float64 `json:"max_ms"`
	AckP50Ms float64 `json:"ack_p50_ms"`
	AckP99Ms float64 `json:"ack_p99_ms"`
}

// createTopic creates topic with n partitions (replication factor 1) and
// waits until every partition has a leader, so no timed phase pays for it.
func createTopic(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	resp, err := adm.CreateTopic(ctx, int32(n), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return waitLeaders(ctx, adm, topic, n, 2*time.Minute)
}

func waitLeaders(ctx context.Context, adm *kadm.Client, topic string, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err == nil {
			t := td[topic]
			led := 0
			for _, p := range t.Partitions {
				if p.Err == nil && p.Leader >= 0 {
					led++
				}
			}
			// A leader in Metadata is not yet a leader that serves: Kafka's
			// broker applies the change a moment after its metadata cache
			// shows it, so ListOffsets on every partition must succeed too.
			if t.Err == nil && led == n {
				if _, err := endOffsets(ctx, adm, topic); err == nil {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: not every partition has a leader after %v", topic, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// touchPartitions writes one record to every partition of topic and waits
// for the acknowledgements. A partition's first append is not steady state:
// Kafka, for one, fsyncs the new leader epoch's checkpoint file then, which
// with a new 100-partition topic would eat much of a short produce phase.
func touchPartitions(ctx context.Context, brokers []string, topics []string, n int, pool *valuePool) (time.Duration, error) {
	cl, err := kgo.NewClient(append(baseOpts(brokers),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.ProducerLinger(0))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start := time.Now()
	var errs firstErr
	for _, topic := range topics {
		for p := range n {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: pool.value(uint64(p), 100)}, func(_ *kgo.Record, err error) {
				if err != nil {
					errs.set(err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), errs.get()
}

// offsets are per topic, per partition.
type offsets map[string]map[int32]int64

// endOffsets is every partition's log end offset.
func endOffsets(ctx context.Context, adm *kadm.Client, topics ...string) (offsets, error) {
	lo, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := offsets{}
	var ferr error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && ferr == nil {
			ferr = fmt.Errorf("list offsets %s/%d: %w", o.Topic, o.Partition, o.Err)
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, ferr
}

// newProducers makes the scenario's producer clients and sends a few records
// through each, so connections and metadata are in place before timing.
func newProducers(ctx context.Context, brokers []string, topic string, s Scenario, linger time.Duration, pool *valuePool) ([]*kgo.Client, error) {
	var cls []*kgo.Client
	for range s.Producers {
		cl, err := kgo.NewClient(producerOpts(brokers, topic, s, linger)...)
		if err != nil {
			closeAll(cls)
			return nil, err
		}
		cls = append(cls, cl)
	}
	for _, cl := range cls {
		for i := range 100 {
			cl.Produce(ctx, &kgo.Record{Value: pool.value(uint64(i), s.RecordSize)}, nil)
		}
	}
	for _, cl := range cls {
		if err := cl.Flush(ctx); err != nil {
			closeAll(cls)
			return nil, err
		}
	}
	return cls, nil
}

func closeAll(cls []*kgo.Client) {
	for _, cl := range cls {
		cl.Close()
	}
}

// firstErr keeps the first of many errors from concurrent callbacks.
type firstErr struct {
	once sync.Once
	err  error
	n    atomic.Int64
}

func (f *firstErr) set(err error) {
	f.n.Add(1)
	f.once.Do(func() { f.err = err })
}

func (f *firstErr) get() error {
	if f.n.Load() == 0 {
		return nil
	}
	return fmt.Errorf("%d records failed, first: %w", f.n.Load(), f.err)
}

// minRecordsStretch bounds how far past its duration a produce phase runs
// to reach the scenario's MinRecords: a broker too slow for that in this
// much time is measured over what it did write.
const minRecordsStretch = 10

// produceMax has every producer produce as fast as its buffer allows until
// the scenario's duration (or record limit) is reached, and past the
// duration until MinRecords are issued (for at most minRecordsStretch times
// the duration); it returns the acknowledged records over the time to the
// last acknowledgement.
func produceMax(ctx context.Context, cls []*kgo.Client, s Scenario, pool *valuePool) (Throughput, error) {
	var acked, ackedBytes atomic.Int64
	var errs firstErr
	// issued is counted only with a record limit: an atomic per record is
	// a cost the other phases need not pay.
	var issued atomic.Int64
	counting := s.MaxRecords > 0 || s.MinRecords > 0
	start := time.Now()
	deadline := start.Add(s.Duration.D())
	stretched := start.Add(minRecordsStretch * s.Duration.D())
	over := func() bool {
		now := time.Now()
		return ctx.Err() != nil || now.After(stretched) || (now.After(deadline) && issued.Load() >= s.MinRecords)
	}
	var wg sync.WaitGroup
	for p, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := int64(s.RecordSize)
			promise := func(_ *kgo.Record, err error) {
				if err != nil {
					errs.set(err)
					return
				}
				acked.Add(1)
				ackedBytes.Add(size)
			}
			for i := uint64(p) << 40; ; i++ {
				if i%256 == 0 && over() {
					break
				}
				if counting && issued.Add(1) > s.MaxRecords && s.MaxRecords > 0 {
					break
				}
				r := &kgo.Record{Value: pool.value(i, s.RecordSize)}
				if len(s.Topics) > 1 {
					r.Topic = s.Topics[i%uint64(len(s.Topics))]
				}
				cl.Produce(ctx, r, promise)
			}
			if err := cl.Flush(ctx); err != nil {
				errs.set(err)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	return newThroughput(acked.Load(), ackedBytes.Load(), took), errs.get()
}

// consumeRange reads every partition from from[t][p] to to[t][p] with one
// client and no group, and times it from the client's creation. With
// limit > 0 it stops once it has seen limit records of the range (the
// partitions are read side by side, so that is about the first limit/n of
// each of n partitions).
func consumeRange(ctx context.Context, brokers []string, from, to offsets, limit int64) (Throughput, error) {
	assign := map[string]map[int32]kgo.Offset{}
	remaining := 0
	for t, ends := range to {
		for p, end := range ends {
			if end > from[t][p] {
				if assign[t] == nil {
					assign[t] = map[int32]kgo.Offset{}
				}
				assign[t][p] = kgo.NewOffset().At(from[t][p])
				remaining++
			}
		}
	}
	if remaining == 0 {
		return Throughput{}, errors.New("nothing to consume")
	}
	start := time.Now()
	cl, err := kgo.NewClient(consumerOpts(brokers, assign)...)
	if err != nil {
		return Throughput{}, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var n, b int64
	type tp struct {
		t string
		p int32
	}
	done := map[tp]bool{}
	for remaining > 0 && (limit <= 0 || n < limit) {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			return Throughput{}, fmt.Errorf("consumed %d records, %d partitions unfinished: %w", n, remaining, cctx.Err())
		}
		if err := fs.Err0(); err != nil && !errors.Is(err, context.Canceled) {
			var ferr error
			fs.EachError(func(t string, p int32, e error) { ferr = fmt.Errorf("fetch %s/%d: %w", t, p, e) })
			if ferr != nil {
				return Throughput{}, ferr
			}
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			end := to[fp.Topic][fp.Partition]
			for _, r := range fp.Records {
				if r.Offset >= end || (limit > 0 && n >= limit) {
					break
				}
				n++
				b += int64(len(r.Value))
				if k := (tp{fp.Topic, fp.Partition}); r.Offset == end-1 && !done[k] {
					done[k] = true
					remaining--
				}
			}
		})
	}
	return newThroughput(n, b, time.Since(start)), nil
}

// latencyStampBytes is the prefix of a latency record's value: its scheduled
// send time in nanoseconds since the phase's reference instant, and a magic
// word that tells latency records from others on the topic.
const latencyStampBytes = 16

const latencyMagic = 0x5354524149544c41 // "STRAITLA"

// latencyTrace, when set (run -latency-trace), is the file measureLatency
// writes every measured record to, in send order.
var latencyTrace string

// measureLatency produces at rate records/s in total (split evenly over the
// producers) for d, with one consumer reading from the current end of every
// partition, and returns the latency percentiles after a warm-up of d/6.
func measureLatency(ctx context.Context, brokers []string, topic string, s Scenario, rate float64, d time.Duration, pool *valuePool) (Latency, error) {
	adm := kadm.NewClient(mustClient(brokers))
	defer adm.Close()
	ends, err := endOffsets(ctx, adm, topic)
	if err != nil {
		return Latency{}, err
	}
	at := map[int32]kgo.Offset{}
	for p, o := range ends[topic] {
		at[p] = kgo.NewOffset().At(o)
	}
	cons, err := kgo.NewClient(consumerOpts(brokers, map[string]map[int32]kgo.Offset{topic: at})...)
	if err != nil {
		return Latency{}, err
	}
	defer cons.Close()
	prods, err := newProducers(ctx, brokers, topic, s, time.Duration(s.LatencyLingerMs)*time.Millisecond, pool)
	if err != nil {
		return Latency{}, err
	}
	defer closeAll(prods)

	ref := time.Now()
	warm := int64(d / 6)
	var (
		mu       sync.Mutex
		e2e      []int64
		ackLat   []int64
		traced   = map[int64][2]int64{} // sched -> ack, e2e latency (ns), with -latency-trace
		produced atomic.Int64
		measured atomic.Int64
		errs     firstErr
	)
	consumed := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(consumed)
		for {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := int64(time.Since(ref))
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) < latencyStampBytes || binary.BigEndian.Uint64(r.Value[8:]) != latencyMagic {
					return
				}
				sent := int64(binary.BigEndian.Uint64(r.Value))
				if sent >= warm {
					e2e = append(e2e, now-sent)
					if latencyTrace != "" {
						t := traced[sent]
						t[1] = now - sent
						traced[sent] = t
					}
				}
			})
			mu.Unlock()
		}
	}()

	perProducer := rate / float64(len(prods))
	var wg sync.WaitGroup
	for p, cl := range prods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Producers are offset by a fraction of an interval so their
			// records interleave instead of arriving in pairs.
			interval := float64(time.Second) / perProducer
			offset := interval * float64(p) / float64(len(prods))
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			var i int64
			for {
				elapsed := time.Since(ref)
				if elapsed >= d {
					break
				}
				for ; ; i++ {
					sched := int64(offset + float64(i)*interval)
					if sched > int64(elapsed) || sched >= int64(d) {
						break
					}
					v := make([]byte, s.RecordSize)
					copy(v[latencyStampBytes:], pool.value(uint64(i), s.RecordSize-latencyStampBytes))
					binary.BigEndian.PutUint64(v, uint64(sched))
					binary.BigEndian.PutUint64(v[8:], latencyMagic)
					produced.Add(1)
					if sched >= warm {
						measured.Add(1)
					}
					cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
						if err != nil {
							errs.set(err)
							return
						}
						if sched >= warm {
							now := int64(time.Since(ref))
							mu.Lock()
							ackLat = append(ackLat, now-sched)
							if latencyTrace != "" {
								t := traced[sched]
								t[0] = now - sched
								traced[sched] = t
							}
							mu.Unlock()
						}
					})
				}
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				}
			}
			if err := cl.Flush(ctx); err != nil {
				errs.set(err)
			}
		}()
	}
	wg.Wait()
	sendEnd := time.Since(ref)
	// Wait for the consumer to see every measured record, at most 30 s.
	want := measured.Load()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := int64(len(e2e))
		mu.Unlock()
		if got >= want {
			break
		}
	}
	cancel()
	<-consumed
	if err := errs.get(); err != nil {
		return Latency{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	if len(e2e) == 0 {
		return Latency{}, errors.New("latency: no record came back")
	}
	if latencyTrace != "" {
		if err := writeLatencyTrace(latencyTrace, traced); err != nil {
			return Latency{}, err
		}
	}
	slices.Sort(e2e)
	slices.Sort(ackLat)
	l := Latency{
		Rate:     rate,
		Achieved: float64(produced.Load()) / sendEnd.Seconds(),
		Records:  int64(len(e2e)),
		Lost:     max(0, want-int64(len(e2e))),
		P50Ms:    pct(e2e, 0.50),
		P99Ms:    pct(e2e, 0.99),
		P999Ms:   pct(e2e, 0.999),
		MaxMs:    ms(e2e[len(e2e)-1]),
		AckP50Ms: pct(ackLat, 0.50),
		AckP99Ms: pct(ackLat, 0.99),
	}
	return l, nil
}

// writeLatencyTrace writes one line per traced record, by send time:
// scheduled send, produce ack latency and end-to-end latency, in ms.
func writeLatencyTrace(path string, traced map[int64][2]int64) error {
	keys := slices.Sorted(maps.Keys(traced))
	var b strings.Builder
	b.WriteString("# sent_ms ack_ms e2e_ms\n")
	for _, k := range keys {
		t := traced[k]
		fmt.Fprintf(&b, "%.3f %.3f %.3f\n", ms(k), ms(t[0]), ms(t[1]))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// pct is the q-quantile of sorted nanoseconds, in milliseconds (nearest rank).
func pct(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return ms(sorted[min(max(i, 0), len(sorted)-1)])
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// mustClient is a plain client for admin requests.
func mustClient(brokers []string) *kgo.Client {
	cl, err := kgo.NewClient(baseOpts(brokers)...)
	if err != nil {
		panic(err) // only invalid options fail here, and baseOpts has none
	}
	return cl
}
