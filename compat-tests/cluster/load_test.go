package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// load is an idempotent producer (franz-go's default) writing "p<part>-<seq>"
// to every partition of a topic at a steady rate with acks=all and unlimited
// retries, recording which records were acknowledged and when, which failed,
// and which broker wrote each batch.
type load struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	parts int32
	start time.Time

	mu       sync.Mutex
	acked    map[int32][]int       // sequence numbers acknowledged, in callback order
	ackTimes map[int32][]time.Time // when each was acknowledged
	failed   map[int32][]int
	failErrs map[string]int // error text -> count
	writes   map[int32][]batchWrite

	stop     chan struct{}
	loops    sync.WaitGroup
	inflight sync.WaitGroup
	stopped  time.Time
}

// batchWrite is one batch the client saw written: when and by which broker.
type batchWrite struct {
	at   time.Time
	node int32
}

type writeHook struct{ l *load }

func (h writeHook) OnProduceBatchWritten(meta kgo.BrokerMetadata, _ string, partition int32, _ kgo.ProduceBatchMetrics) {
	h.l.mu.Lock()
	h.l.writes[partition] = append(h.l.writes[partition], batchWrite{time.Now(), meta.NodeID})
	h.l.mu.Unlock()
}

const (
	produceInterval = 3 * time.Millisecond // per partition: about 330 records/s
	maxInflight     = 200                  // per partition
)

// producerOpts are the options of every acks=all producer here. The retry
// backoff and metadata age are lowered from franz-go's defaults (250 ms to
// 5 s exponential; 5 s) so that failover times measure the brokers, not the
// client's back-off.
func producerOpts(seeds []string) []kgo.Opt { return producerOptsWith(clientOpts(), seeds) }

// producerOptsWith are producerOpts with the given security options instead
// of the admin's.
func producerOptsWith(security []kgo.Opt, seeds []string) []kgo.Opt {
	return append(security,
		kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.DialTimeout(time.Second),
	)
}

func startLoad(t *testing.T, c *cluster, topic string, parts int32) *load {
	t.Helper()
	l := &load{
		t: t, topic: topic, parts: parts, start: time.Now(),
		acked: map[int32][]int{}, ackTimes: map[int32][]time.Time{}, failed: map[int32][]int{},
		failErrs: map[string]int{}, writes: map[int32][]batchWrite{}, stop: make(chan struct{}),
	}
	opts := append(producerOptsWith(c.workloadOpts(), c.Seeds()),
		kgo.RecordRetries(1<<30), // "unlimited" (franz-go's default), stated explicitly
		kgo.WithHooks(writeHook{l}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	l.cl = cl
	for p := int32(0); p < parts; p++ {
		l.loops.Add(1)
		go l.produce(p)
	}
	return l
}

func (l *load) produce(p int32) {
	defer l.loops.Done()
	sem := make(chan struct{}, maxInflight)
	tick := time.NewTicker(produceInterval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		case sem <- struct{}{}:
		}
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		l.inflight.Add(1)
		rec := &kgo.Record{Topic: l.topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, seq))}
		l.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
			defer l.inflight.Done()
			now := time.Now()
			l.mu.Lock()
			if err != nil {
				l.failed[p] = append(l.failed[p], seq)
				l.failErrs[err.Error()]++
			} else {
				l.acked[p] = append(l.acked[p], seq)
				l.ackTimes[p] = append(l.ackTimes[p], now)
			}
			l.mu.Unlock()
			<-sem
		})
	}
}

// finish stops producing and waits for every outstanding record's outcome.
func (l *load) finish() {
	close(l.stop)
	l.loops.Wait()
	l.stopped = time.Now()
	done := make(chan struct{})
	go func() { l.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		l.t.Errorf("records still unresolved 60 s after producing stopped")
	}
	l.cl.Close()
}

func (l *load) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.acked {
		n += len(a)
	}
	return n
}

// ackedSince reports whether every partition had an acknowledgement after t.
func (l *load) ackedSince(t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := int32(0); p < l.parts; p++ {
		ts := l.ackTimes[p]
		if len(ts) == 0 || !ts[len(ts)-1].After(t) {
			return fmt.Errorf("partition %d: no acknowledgement since %s", p, t.Format("15:04:05.000"))
		}
	}
	return nil
}

// firstWriteAfter is when partition p was first written after t by a broker
// other than not (zero if not yet).
func (l *load) firstWriteAfter(p int32, t time.Time, not int32) (time.Time, int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.writes[p] {
		if w.at.After(t) && w.node != not {
			return w.at, w.node
		}
	}
	return time.Time{}, -1
}

// gapAround is partition p's longest interval without an acknowledgement
// that overlaps [from, to]: how long p took no writes around a fault.
func (l *load) gapAround(p int32, from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := append([]time.Time{l.start}, l.ackTimes[p]...)
	var max time.Duration
	for i := 1; i < len(ts); i++ {
		if ts[i].After(from) && ts[i-1].Before(to) {
			max = maxDuration(max, ts[i].Sub(ts[i-1]))
		}
	}
	if last := ts[len(ts)-1]; last.Before(to) {
		max = maxDuration(max, time.Since(last)) // still waiting
	}
	return max
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// longestGap is partition p's longest interval without an acknowledgement,
// from the first acknowledgement to the end of producing.
func (l *load) longestGap(p int32) (time.Duration, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.ackTimes[p]
	var max time.Duration
	var at time.Time
	for i := 1; i < len(ts); i++ {
		if d := ts[i].Sub(ts[i-1]); d > max {
			max, at = d, ts[i-1]
		}
	}
	if n := len(ts); n > 0 && !l.stopped.IsZero() {
		if d := l.stopped.Sub(ts[n-1]); d > max {
			max, at = d, ts[n-1]
		}
	}
	return max, at
}

// verdict is what reading a topic back found.
type verdict struct {
	Acknowledged   int            `json:"acknowledged"`
	Failed         int            `json:"failed"`
	FailedErrors   map[string]int `json:"failed_errors,omitempty"`
	Read           int            `json:"read"`
	Lost           int            `json:"lost"`
	Duplicates     int            `json:"duplicates"`
	OutOfOrder     int            `json:"out_of_order"`
	FailedButFound int            `json:"failed_but_present"`
	LostExamples   []string       `json:"lost_examples,omitempty"`
	DupExamples    []string       `json:"duplicate_examples,omitempty"`
	OrderExamples  []string       `json:"order_examples,omitempty"`
}

// verify reads every partition from the start with a fresh consumer and
// compares it with what was acknowledged.
func (l *load) verify(c *cluster) verdict {
	l.t.Helper()
	logs := readAll(l.t, c, l.topic, l.parts)
	l.mu.Lock()
	defer l.mu.Unlock()
	v := verdict{FailedErrors: l.failErrs}
	for p := int32(0); p < l.parts; p++ {
		seen := map[int]int{}
		last := -1
		for i, val := range logs[p] {
			part, seq, ok := parseValue(val)
			if !ok || part != p {
				v.OutOfOrder++
				v.OrderExamples = appendMax(v.OrderExamples, fmt.Sprintf("partition %d offset %d: unexpected value %q", p, i, val))
				continue
			}
			seen[seq]++
			if seen[seq] == 2 {
				v.Duplicates++
				v.DupExamples = appendMax(v.DupExamples, val)
			}
			if seq <= last {
				v.OutOfOrder++
				v.OrderExamples = appendMax(v.OrderExamples, fmt.Sprintf("partition %d: %s after p%d-%d", p, val, p, last))
			} else {
				last = seq
			}
		}
		v.Read += len(logs[p])
		v.Acknowledged += len(l.acked[p])
		v.Failed += len(l.failed[p])
		for _, seq := range l.acked[p] {
			if seen[seq] == 0 {
				v.Lost++
				v.LostExamples = appendMax(v.LostExamples, fmt.Sprintf("p%d-%d", p, seq))
			}
		}
		for _, seq := range l.failed[p] {
			if seen[seq] > 0 {
				v.FailedButFound++
			}
		}
	}
	return v
}

func appendMax(s []string, v string) []string {
	if len(s) < 10 {
		return append(s, v)
	}
	return s
}

func parseValue(v string) (int32, int, bool) {
	a, b, ok := strings.Cut(strings.TrimPrefix(v, "p"), "-")
	if !ok || !strings.HasPrefix(v, "p") {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(a)
	s, err2 := strconv.Atoi(b)
	return int32(p), s, err1 == nil && err2 == nil
}

// readAll reads partitions 0..parts-1 of topic from offset 0 to their end
// offsets (high watermarks) as the live brokers answer them.
func readAll(t *testing.T, c *cluster, topic string, parts int32) map[int32][]string {
	t.Helper()
	var seeds []string
	for _, n := range c.Nodes {
		if n.Live() {
			seeds = append(seeds, n.Addr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(append(c.workloadOpts(), kgo.SeedBrokers(seeds...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var ends kadm.ListedOffsets
	for {
		ends, err = kadm.NewClient(adm).ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("end offsets of %s: %v", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	offsets := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		o, ok := ends.Lookup(topic, p)
		if !ok {
			t.Fatalf("no end offset for %s/%d", topic, p)
		}
		want[p] = o.Offset
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(c.workloadOpts(), kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[int32][]string{}
	next := map[int32]int64{}
	for {
		done := true
		for p := int32(0); p < parts; p++ {
			if next[p] < want[p] {
				done = false
			}
		}
		if done {
			return out
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s back: got to %v of end offsets %v", topic, next, want)
		}
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch %s/%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return
			}
			out[r.Partition] = append(out[r.Partition], string(r.Value))
			next[r.Partition] = r.Offset + 1
		})
	}
}
