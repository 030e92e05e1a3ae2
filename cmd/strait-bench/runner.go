package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ScenarioResult is one scenario run once against one broker.
type ScenarioResult struct {
	Scenario string     `json:"scenario"`
	Target   string     `json:"target,omitempty"`
	Round    int        `json:"round,omitempty"`
	Topic    string     `json:"topic"`
	Produce  Throughput `json:"produce"`
	Consume  Throughput `json:"consume"`
	Latency  *Latency   `json:"latency,omitempty"`
	// Broker CPU time (user+system, all threads) during each phase, when the
	// harness started the broker and can read /proc/<pid>/stat.
	ProduceCPUSec float64 `json:"produce_cpu_sec,omitempty"`
	ConsumeCPUSec float64 `json:"consume_cpu_sec,omitempty"`
	Error         string  `json:"error,omitempty"`
	// Skipped says why the broker could not run the scenario at all (kfake
	// and a secured scenario): n/a in the report, neither pass nor error.
	Skipped string `json:"skipped,omitempty"`
}

// cpuClock reads a broker's accumulated CPU time; nil when unknown.
type cpuClock func() (time.Duration, error)

// cpuSince returns a function that gives the CPU seconds spent since now.
func (c cpuClock) since() func() float64 {
	if c == nil {
		return func() float64 { return 0 }
	}
	start, err := c()
	if err != nil {
		return func() float64 { return 0 }
	}
	return func() float64 {
		now, err := c()
		if err != nil {
			return 0
		}
		return (now - start).Seconds()
	}
}

// runThroughput creates a fresh topic for s, warms the producers up, then
// measures the produce phase and (if consume) the consume phase over what
// it produced.
func runThroughput(ctx context.Context, brokers []string, s Scenario, pool *valuePool, consume bool, cpu cpuClock, res *ScenarioResult) error {
	from, to, err := runProduce(ctx, brokers, s, pool, cpu, res)
	if err != nil || !consume {
		return err
	}
	return runConsume(ctx, brokers, from, to, 0, cpu, res)
}

// runProduce creates s's topic if missing, warms the producers up and
// measures the produce phase; it returns every partition's end offsets
// before and after it.
func runProduce(ctx context.Context, brokers []string, s Scenario, pool *valuePool, cpu cpuClock, res *ScenarioResult) (from, to offsets, err error) {
	adm := kadm.NewClient(mustClient(brokers))
	defer adm.Close()
	res.Topic = s.Topic
	if res.Topic == "" {
		res.Topic = fmt.Sprintf("bench-%s-%d", slug(s.Name), time.Now().UnixNano())
	}
	if td, err := adm.ListTopics(ctx, res.Topic); err != nil || !td.Has(res.Topic) {
		if err := createTopic(ctx, adm, res.Topic, s.Partitions); err != nil {
			return nil, nil, err
		}
	}
	if _, err := touchPartitions(ctx, brokers, []string{res.Topic}, s.Partitions, pool); err != nil {
		return nil, nil, fmt.Errorf("first write to every partition: %w", err)
	}
	prods, err := newProducers(ctx, brokers, res.Topic, s, time.Duration(s.LingerMs)*time.Millisecond, pool)
	if err != nil {
		return nil, nil, fmt.Errorf("warm-up: %w", err)
	}
	from, err = endOffsets(ctx, adm, res.Topic)
	if err != nil {
		closeAll(prods)
		return nil, nil, err
	}
	cpuUsed := cpu.since()
	res.Produce, err = produceMax(ctx, prods, s, pool)
	res.ProduceCPUSec = cpuUsed()
	closeAll(prods)
	if err != nil {
		return nil, nil, fmt.Errorf("produce: %w", err)
	}
	to, err = endOffsets(ctx, adm, res.Topic)
	return from, to, err
}

// runConsume measures the consume phase over [from, to): all of it, or
// with limit > 0 the first limit records the consumer sees.
func runConsume(ctx context.Context, brokers []string, from, to offsets, limit int64, cpu cpuClock, res *ScenarioResult) error {
	cpuUsed := cpu.since()
	var err error
	res.Consume, err = consumeRange(ctx, brokers, from, to, limit)
	res.ConsumeCPUSec = cpuUsed()
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	return nil
}

// rangeRecords is the number of records in [from, to).
func rangeRecords(from, to offsets) int64 {
	var n int64
	for t, ends := range to {
		for p, end := range ends {
			n += max(0, end-from[t][p])
		}
	}
	return n
}

// runLatency measures end-to-end latency on the scenario's topic at rate.
func runLatency(ctx context.Context, brokers []string, s Scenario, rate float64, pool *valuePool, res *ScenarioResult) error {
	d := s.LatencyDuration.D()
	if d <= 0 {
		d = 2 * time.Second
	}
	l, err := measureLatency(ctx, brokers, res.Topic, s, rate, d, pool)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	res.Latency = &l
	return nil
}

// runScenarios is the run command: every scenario once against brokers,
// the latency phase at the scenario's rate or half the measured throughput.
func runScenarios(ctx context.Context, brokers []string, scenarios []Scenario, consume bool, log io.Writer) []ScenarioResult {
	pool := newValuePool()
	var out []ScenarioResult
	for _, s := range scenarios {
		res := ScenarioResult{Scenario: s.Name}
		brokers := scenarioSeeds(brokers, s)
		err := runThroughput(ctx, brokers, s, pool, consume, nil, &res)
		if err == nil && s.LatencyRate >= 0 {
			rate := s.LatencyRate
			if rate == 0 {
				rate = res.Produce.RecordsPerSec / 2
			}
			err = runLatency(ctx, brokers, s, rate, pool, &res)
		}
		if err != nil {
			res.Error = err.Error()
		}
		fmt.Fprintln(log, resultLine(res))
		out = append(out, res)
	}
	return out
}

func resultLine(r ScenarioResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-36s", r.Scenario)
	if r.Target != "" {
		fmt.Fprintf(&b, " %-6s r%d", r.Target, r.Round)
	}
	if r.Skipped != "" {
		fmt.Fprintf(&b, " n/a: %s", r.Skipped)
		return b.String()
	}
	fmt.Fprintf(&b, " produce %9.0f rec/s %7.1f MB/s  consume %9.0f rec/s %7.1f MB/s",
		r.Produce.RecordsPerSec, r.Produce.MBPerSec, r.Consume.RecordsPerSec, r.Consume.MBPerSec)
	if l := r.Latency; l != nil {
		fmt.Fprintf(&b, "  e2e@%.0f/s (got %.0f) p50 %.2f p99 %.2f p99.9 %.2f max %.1f ms", l.Rate, l.Achieved, l.P50Ms, l.P99Ms, l.P999Ms, l.MaxMs)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "  ERROR %s", r.Error)
	}
	return b.String()
}

// runMarkdown is the run command's table.
func runMarkdown(w io.Writer, brokers []string, results []ScenarioResult) {
	fmt.Fprintf(w, "Broker %s, %s\n\n", strings.Join(brokers, ","), time.Now().Format(time.RFC3339))
	fmt.Fprintln(w, "| scenario | produce rec/s | produce MB/s | consume rec/s | consume MB/s | e2e rate rec/s | p50 ms | p99 ms | p99.9 ms | max ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(w, "| %s | error: %s |||||||||\n", r.Scenario, mdEscape(r.Error))
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f | %.1f | %.0f | %.1f |", r.Scenario, r.Produce.RecordsPerSec, r.Produce.MBPerSec, r.Consume.RecordsPerSec, r.Consume.MBPerSec)
		if l := r.Latency; l != nil {
			fmt.Fprintf(w, " %.0f | %.2f | %.2f | %.2f | %.1f |\n", l.Rate, l.P50Ms, l.P99Ms, l.P999Ms, l.MaxMs)
		} else {
			fmt.Fprintln(w, " | | | | |")
		}
	}
}

func mdEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}

// slug makes a scenario name usable in a topic name.
func slug(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		case c == '=' || c == ' ' || c == '-' || c == '.':
			b.WriteByte('-')
		}
	}
	return b.String()
}
