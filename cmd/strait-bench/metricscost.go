package main

// strait-bench metrics-cost: the cost of Strait's metrics, from compare
// reports of Strait alone, some run with -scrape-metrics and some without
// (bench/metrics-cost.sh interleaves them). For each scenario and phase it
// sets the two modes' medians side by side, for throughput and for the
// broker's CPU seconds per GB, with a bootstrap 95% interval of the ratio
// of the medians: on a shared machine throughput spreads far more than CPU
// per GB (the client and other processes take the cores the broker would
// use), and for a CPU-bound broker the throughput cost of the metrics is
// their CPU cost.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

func cmdMetricsCost(args []string) {
	fs := flag.NewFlagSet("metrics-cost", flag.ExitOnError)
	out := fs.String("out", "-", "markdown output")
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		fail("metrics-cost: name compare output directories or latest.json files, some run with -scrape-metrics and some without")
	}
	var reps []*CompareReport
	for _, path := range fs.Args() {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path = filepath.Join(path, "latest.json")
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			fail("%v", err)
		}
		rep := &CompareReport{}
		if err := json.Unmarshal(raw, rep); err != nil {
			fail("%s: %v", path, err)
		}
		reps = append(reps, rep)
	}
	writeFile(*out, func(f *os.File) error { return writeMetricsCost(f, reps) })
}

// costSamples are one scenario's samples in one mode.
type costSamples struct{ produceMBs, consumeMBs, produceCPU, consumeCPU []float64 }

func (c *costSamples) add(r ScenarioResult) {
	appendOK := func(s *[]float64, v float64) {
		if v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
			*s = append(*s, v)
		}
	}
	appendOK(&c.produceMBs, r.Produce.MBPerSec)
	appendOK(&c.consumeMBs, r.Consume.MBPerSec)
	appendOK(&c.produceCPU, produceCPU(r))
	appendOK(&c.consumeCPU, consumeCPU(r))
}

func writeMetricsCost(w io.Writer, reps []*CompareReport) error {
	// by scenario name, [0] without the scrape, [1] with it.
	by := map[string]*[2]costSamples{}
	var order []string
	runs := [2]int{}
	for _, rep := range reps {
		mode := 0
		if rep.ScrapedMetrics {
			mode = 1
		}
		runs[mode]++
		for _, r := range rep.Results {
			if r.Target != kindStrait || r.Error != "" || r.Skipped != "" {
				continue
			}
			if by[r.Scenario] == nil {
				by[r.Scenario] = &[2]costSamples{}
				order = append(order, r.Scenario)
			}
			by[r.Scenario][mode].add(r)
		}
	}
	if runs[0] == 0 || runs[1] == 0 {
		return fmt.Errorf("metrics-cost: %d runs without -scrape-metrics and %d with: need both", runs[0], runs[1])
	}
	fmt.Fprintf(w, "Strait, %d compare runs without and %d with `-scrape-metrics` (/metrics read every second). ", runs[0], runs[1])
	fmt.Fprintf(w, "Medians of the rounds; the ratio is with/without, its 95%% interval a bootstrap of the medians (2,000 resamples); the spread is (max-min)/median of the samples without.\n\n")
	fmt.Fprintf(w, "| scenario | phase | metric | n without / with | median without | median with | with / without | 95%% interval | spread without |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
	rng := rand.New(rand.NewPCG(21, 2026)) // fixed: the same reports give the same table
	for _, name := range order {
		s := by[name]
		rows := []struct {
			phase, metric string
			off, on       []float64
			unit          string
		}{
			{"produce", "MB/s", s[0].produceMBs, s[1].produceMBs, "%.1f"},
			{"produce", "broker CPU s/GB", s[0].produceCPU, s[1].produceCPU, "%.3f"},
			{"consume", "MB/s", s[0].consumeMBs, s[1].consumeMBs, "%.1f"},
			{"consume", "broker CPU s/GB", s[0].consumeCPU, s[1].consumeCPU, "%.3f"},
		}
		for _, r := range rows {
			if len(r.off) == 0 || len(r.on) == 0 {
				continue
			}
			mOff, mOn := median(r.off), median(r.on)
			lo, hi := bootstrapRatio(rng, r.off, r.on, 2000)
			fmt.Fprintf(w, "| %s | %s | %s | %d / %d | "+r.unit+" | "+r.unit+" | %.3f | %.3f-%.3f | %.0f%% |\n",
				name, r.phase, r.metric, len(r.off), len(r.on), mOff, mOn, mOn/mOff, lo, hi, 100*spread(r.off))
		}
	}
	fmt.Fprintf(w, "\nFor throughput a ratio below 1 is a cost; for CPU per GB a ratio above 1 is. A cost is shown under 2%% only when the whole interval is: CPU s/GB's upper bound under 1.02, or throughput's lower bound above 0.98.\n")
	return nil
}

func spread(xs []float64) float64 {
	return (slices.Max(xs) - slices.Min(xs)) / median(xs)
}

// bootstrapRatio is the 2.5th and 97.5th percentiles of median(on*) /
// median(off*) over n resamples of each side with replacement.
func bootstrapRatio(rng *rand.Rand, off, on []float64, n int) (lo, hi float64) {
	ratios := make([]float64, n)
	a, b := make([]float64, len(off)), make([]float64, len(on))
	for i := range ratios {
		for j := range a {
			a[j] = off[rng.IntN(len(off))]
		}
		for j := range b {
			b[j] = on[rng.IntN(len(on))]
		}
		ratios[i] = median(b) / median(a)
	}
	slices.Sort(ratios)
	return ratios[int(0.025*float64(n))], ratios[int(math.Ceil(0.975*float64(n)))-1]
}
