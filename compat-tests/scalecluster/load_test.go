package scalecluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tp names a partition.
type tp struct {
	topic string
	part  int32
}

// load is an idempotent acks=all producer writing "<seq>" to every
// partition of its topics in turn, each partition every interval
// (STRAIT_SCALE_INTERVAL, default 4 s), recording what was acknowledged.
type load struct {
	t        *testing.T
	cl       *kgo.Client
	parts    []tp
	interval time.Duration

	mu      sync.Mutex
	seq     map[tp]int
	acked   map[tp][]int
	lastAck map[tp]time.Time
	failed  int
	errs    map[string]int

	stop     chan struct{}
	loop     sync.WaitGroup
	inflight sync.WaitGroup
}

// startLoad starts producing to topics; with prev, a finished load, the
// partitions they share go on with prev's numbering and acknowledgements, so
// that verify checks both.
func startLoad(t *testing.T, c *cluster, topics map[string]int32, prev *load) *load {
	t.Helper()
	interval := 4 * time.Second
	if s := os.Getenv("STRAIT_SCALE_INTERVAL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("STRAIT_SCALE_INTERVAL: %v", err)
		}
		interval = d
	}
	l := &load{t: t, interval: interval, seq: map[tp]int{}, acked: map[tp][]int{}, lastAck: map[tp]time.Time{},
		errs: map[string]int{}, stop: make(chan struct{})}
	if prev != nil {
		prev.mu.Lock()
		for k, n := range prev.seq {
			l.seq[k] = n
		}
		for k, a := range prev.acked {
			l.acked[k] = slices.Clone(a)
		}
		prev.mu.Unlock()
	}
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for p := range topics[name] {
			l.parts = append(l.parts, tp{name, p})
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Seeds()...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(1<<20),
		kgo.RecordRetries(1<<30),
		// As compat-cluster's producer: failover times measure the
		// brokers, not franz-go's back-off (250 ms to 5 s) or metadata
		// age (5 s).
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.DialTimeout(time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	l.cl = cl
	l.loop.Add(1)
	go l.run()
	return l
}

// rate is the records per second the load sends.
func (l *load) rate() int { return int(float64(len(l.parts)) / l.interval.Seconds()) }

// run produces to the partitions in turn, a slice of them every 50 ms.
func (l *load) run() {
	defer l.loop.Done()
	const tick = 50 * time.Millisecond
	per := max(1, int(int64(len(l.parts))*int64(tick)/int64(l.interval)))
	tk := time.NewTicker(tick)
	defer tk.Stop()
	next := 0
	for {
		select {
		case <-l.stop:
			return
		case <-tk.C:
		}
		for range per {
			l.produce(l.parts[next], nil)
			next = (next + 1) % len(l.parts)
		}
	}
}

// produce sends the partition's next record; done, if set, gets the time
// of its acknowledgement.
func (l *load) produce(k tp, done func(time.Time)) {
	l.mu.Lock()
	seq := l.seq[k]
	l.seq[k]++
	l.mu.Unlock()
	l.inflight.Add(1)
	rec := &kgo.Record{Topic: k.topic, Partition: k.part, Value: []byte(strconv.Itoa(seq))}
	l.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
		defer l.inflight.Done()
		now := time.Now()
		l.mu.Lock()
		if err != nil {
			l.failed++
			l.errs[err.Error()]++
		} else {
			l.acked[k] = append(l.acked[k], seq)
			l.lastAck[k] = now
		}
		l.mu.Unlock()
		if err == nil && done != nil {
			done(now)
		}
	})
}

// ackedEverywhere reports whether every partition had an acknowledgement
// after since.
func (l *load) ackedEverywhere(since time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	missing := 0
	var example tp
	for _, k := range l.parts {
		if !l.lastAck[k].After(since) {
			missing++
			example = k
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d partitions without an acknowledgement yet, e.g. %s-%d", missing, example.topic, example.part)
	}
	return nil
}

// probes are one record sent to every partition at one moment.
type probes struct {
	at time.Time
	mu sync.Mutex
	by map[tp]time.Time // acknowledgement time
	n  int
}

// probe sends one record to every partition now.
func (l *load) probe(at time.Time) *probes {
	pr := &probes{at: at, by: map[tp]time.Time{}, n: len(l.parts)}
	for _, k := range l.parts {
		l.produce(k, func(t time.Time) {
			pr.mu.Lock()
			pr.by[k] = t
			pr.mu.Unlock()
		})
	}
	return pr
}

// acked is the longest time from the probe to an acknowledgement among the
// partitions led and among all; an error while some are still waiting.
func (pr *probes) acked(led []partition) (ledMax, allMax time.Duration, err error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, p := range led {
		if at, ok := pr.by[tp{p.topic, p.index}]; ok {
			ledMax = max(ledMax, at.Sub(pr.at))
		}
	}
	for _, at := range pr.by {
		allMax = max(allMax, at.Sub(pr.at))
	}
	if len(pr.by) < pr.n {
		return ledMax, allMax, fmt.Errorf("%d of %d probes acknowledged", len(pr.by), pr.n)
	}
	return ledMax, allMax, nil
}

// ledQuantiles is the median and the 90th percentile of the times from
// the probe to the acknowledgements of the partitions led (those
// acknowledged so far): whether a failover's time is every partition's or a
// tail's.
func (pr *probes) ledQuantiles(led []partition) (p50, p90 time.Duration) {
	pr.mu.Lock()
	var ds []time.Duration
	for _, p := range led {
		if at, ok := pr.by[tp{p.topic, p.index}]; ok {
			ds = append(ds, at.Sub(pr.at))
		}
	}
	pr.mu.Unlock()
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)*9/10]
}

// finish stops producing and waits (at most 2 minutes) for every record's
// outcome.
func (l *load) finish() {
	close(l.stop)
	l.loop.Wait()
	done := make(chan struct{})
	go func() { l.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		l.t.Errorf("records still unresolved 2 minutes after producing stopped")
	}
	l.cl.Close()
}

// verify reads every partition back to its end offset and fails the test
// on an acknowledged record missing or a record read twice; records the
// producer was told failed despite unlimited retries fail it too.
func (l *load) verify(c *cluster) {
	l.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		l.t.Fatal(err)
	}
	defer adm.Close()
	topics := map[string]bool{}
	for _, k := range l.parts {
		topics[k.topic] = true
	}
	var names []string
	for n := range topics {
		names = append(names, n)
	}
	var ends kadm.ListedOffsets
	for {
		ends, err = kadm.NewClient(adm).ListEndOffsets(ctx, names...)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			l.t.Fatalf("end offsets: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := map[tp]int64{}
	offsets := map[string]map[int32]kgo.Offset{}
	for _, k := range l.parts {
		o, ok := ends.Lookup(k.topic, k.part)
		if !ok {
			l.t.Fatalf("no end offset for %s-%d", k.topic, k.part)
		}
		want[k] = o.Offset
		if offsets[k.topic] == nil {
			offsets[k.topic] = map[int32]kgo.Offset{}
		}
		offsets[k.topic][k.part] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumePartitions(offsets), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		l.t.Fatal(err)
	}
	defer cl.Close()
	seen := map[tp]map[int]int{}
	next := map[tp]int64{}
	remaining := 0
	for _, k := range l.parts {
		if want[k] > 0 {
			remaining++
		}
	}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			l.t.Fatalf("reading back: %d partitions short of their end offsets", remaining)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				l.t.Logf("fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			if r.Offset >= want[k] {
				return
			}
			seq, err := strconv.Atoi(string(r.Value))
			if err != nil {
				l.t.Errorf("%s-%d offset %d: value %q", k.topic, k.part, r.Offset, r.Value)
			}
			if seen[k] == nil {
				seen[k] = map[int]int{}
			}
			seen[k][seq]++
			if next[k] < want[k] && r.Offset+1 >= want[k] {
				remaining--
			}
			next[k] = r.Offset + 1
		})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	acked, read, lost, dups := 0, 0, 0, 0
	var lostEx, dupEx []string
	for _, k := range l.parts {
		for seq, n := range seen[k] {
			read += n
			if n > 1 {
				dups++
				if len(dupEx) < 5 {
					dupEx = append(dupEx, fmt.Sprintf("%s-%d:%d", k.topic, k.part, seq))
				}
			}
		}
		for _, seq := range l.acked[k] {
			acked++
			if seen[k][seq] == 0 {
				lost++
				if len(lostEx) < 5 {
					lostEx = append(lostEx, fmt.Sprintf("%s-%d:%d", k.topic, k.part, seq))
				}
			}
		}
	}
	l.t.Logf("read back %d records of %d partitions in %v: %d acknowledged, %d lost, %d read twice, %d failed",
		read, len(l.parts), time.Since(start).Round(time.Millisecond), acked, lost, dups, l.failed)
	if acked == 0 {
		l.t.Errorf("nothing acknowledged")
	}
	if lost > 0 {
		l.t.Errorf("%d acknowledged records lost, e.g. %s", lost, strings.Join(lostEx, " "))
	}
	if dups > 0 {
		l.t.Errorf("%d records read twice, e.g. %s", dups, strings.Join(dupEx, " "))
	}
	if l.failed > 0 {
		l.t.Errorf("%d records failed despite unlimited retries: %v", l.failed, l.errs)
	}
}
