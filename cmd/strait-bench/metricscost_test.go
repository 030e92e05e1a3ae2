package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMetricsCostTable: reports of both modes give one row per scenario,
// phase and metric with the medians of each mode and their ratio; a run of
// one mode only is refused.
func TestMetricsCostTable(t *testing.T) {
	result := func(mbs, cpuSec float64) ScenarioResult {
		return ScenarioResult{Scenario: "s1", Target: kindStrait,
			Produce:       Throughput{Bytes: 2e9, MBPerSec: mbs},
			Consume:       Throughput{Bytes: 2e9, MBPerSec: 2 * mbs},
			ProduceCPUSec: cpuSec, ConsumeCPUSec: cpuSec / 2}
	}
	off := &CompareReport{Results: []ScenarioResult{result(100, 2), result(110, 2), result(90, 2),
		{Scenario: "s1", Target: kindKafka, Produce: Throughput{Bytes: 1, MBPerSec: 1}}}}
	on := &CompareReport{ScrapedMetrics: true, Results: []ScenarioResult{result(99, 2.2), result(101, 2.2), result(80, 2.2)}}
	var b strings.Builder
	if err := writeMetricsCost(&b, []*CompareReport{off, on}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"| s1 | produce | MB/s | 3 / 3 | 100.0 | 99.0 | 0.990 |",
		"| s1 | produce | broker CPU s/GB | 3 / 3 | 1.000 | 1.100 | 1.100 | 1.100-1.100 | 0% |",
		"| s1 | consume | broker CPU s/GB | 3 / 3 | 0.500 | 0.550 | 1.100 |",
		"1 compare runs without and 1 with",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if err := writeMetricsCost(&b, []*CompareReport{off}); err == nil {
		t.Error("a table of runs without -scrape-metrics only")
	}
}

// TestBootstrapRatioBrackets: the interval holds the ratio of the medians
// and narrows to it when the samples do not vary.
func TestBootstrapRatioBrackets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := bootstrapRatio(rng, []float64{10, 11, 9, 10, 12}, []float64{11, 12, 10, 11, 13}, 2000)
	if !(lo <= 1.1 && 1.1 <= hi && lo < hi) {
		t.Errorf("interval %v-%v does not hold 1.1", lo, hi)
	}
	lo, hi = bootstrapRatio(rng, []float64{4, 4}, []float64{5, 5}, 100)
	if lo != 1.25 || hi != 1.25 {
		t.Errorf("constant samples: %v-%v, want 1.25", lo, hi)
	}
}
