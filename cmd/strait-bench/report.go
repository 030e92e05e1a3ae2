package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/strait/strait/bench/inturn"
)

// median of the finite values; NaN when there are none.
func median(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// metric picks one number out of a scenario result; NaN when absent.
type metric func(ScenarioResult) float64

var (
	produceMB   metric = func(r ScenarioResult) float64 { return r.Produce.MBPerSec }
	produceRecs metric = func(r ScenarioResult) float64 { return r.Produce.RecordsPerSec }
	consumeMB   metric = func(r ScenarioResult) float64 { return r.Consume.MBPerSec }
	consumeRecs metric = func(r ScenarioResult) float64 { return r.Consume.RecordsPerSec }
	latRate     metric = latencyMetric(func(l *Latency) float64 { return l.Rate })
	// latShort is 1 when the producers fell more than 2% behind the asked
	// rate: the run was saturated and its latency is queueing.
	latShort metric = latencyMetric(func(l *Latency) float64 {
		if l.Achieved < 0.98*l.Rate {
			return 1
		}
		return 0
	})
	produceCPU metric = func(r ScenarioResult) float64 { return cpuPerGB(r.ProduceCPUSec, r.Produce.Bytes) }
	consumeCPU metric = func(r ScenarioResult) float64 { return cpuPerGB(r.ConsumeCPUSec, r.Consume.Bytes) }
	latP50     metric = latencyMetric(func(l *Latency) float64 { return l.P50Ms })
	latP99     metric = latencyMetric(func(l *Latency) float64 { return l.P99Ms })
	latP999    metric = latencyMetric(func(l *Latency) float64 { return l.P999Ms })
	latMax     metric = latencyMetric(func(l *Latency) float64 { return l.MaxMs })
)

func cpuPerGB(sec float64, bytes int64) float64 {
	if sec <= 0 || bytes == 0 {
		return math.NaN()
	}
	return sec / (float64(bytes) / 1e9)
}

// saturated counts the rounds of a scenario in which kind fell behind.
func (s summary) saturated(scenario, kind string) int {
	n := 0
	for _, r := range s.by[scenario][kind] {
		if latShort(r) == 1 {
			n++
		}
	}
	return n
}

func latencyMetric(f func(*Latency) float64) metric {
	return func(r ScenarioResult) float64 {
		if r.Latency == nil {
			return math.NaN()
		}
		return f(r.Latency)
	}
}

// summary indexes a report's results by scenario, broker and round.
type summary struct {
	rep *CompareReport
	by  map[string]map[string]map[int]ScenarioResult
	// na: scenario -> broker that could not run it (kfake over TLS).
	na map[string]map[string]bool
}

func newSummary(rep *CompareReport) summary {
	s := summary{rep: rep, by: map[string]map[string]map[int]ScenarioResult{}, na: map[string]map[string]bool{}}
	for _, r := range rep.Results {
		if r.Skipped != "" {
			if s.na[r.Scenario] == nil {
				s.na[r.Scenario] = map[string]bool{}
			}
			s.na[r.Scenario][r.Target] = true
			continue
		}
		if r.Error != "" {
			continue
		}
		if s.by[r.Scenario] == nil {
			s.by[r.Scenario] = map[string]map[int]ScenarioResult{}
		}
		if s.by[r.Scenario][r.Target] == nil {
			s.by[r.Scenario][r.Target] = map[int]ScenarioResult{}
		}
		s.by[r.Scenario][r.Target][r.Round] = r
	}
	return s
}

// orNA is text, or n/a when kind could not run scenario at all.
func (s summary) orNA(scenario, kind, text string) string {
	if s.na[scenario][kind] {
		return "n/a"
	}
	return text
}

// med is the median over rounds of m for one scenario and broker.
func (s summary) med(scenario, kind string, m metric) float64 {
	var xs []float64
	for _, r := range s.by[scenario][kind] {
		xs = append(xs, m(r))
	}
	return median(xs)
}

// ratio is the median over rounds of subject/reference, taking only the
// rounds where both ran: the two runs of a round are seconds apart, so the
// machine's other load touches both alike.
func (s summary) ratio(scenario string, m metric) float64 {
	var xs []float64
	for round, sub := range s.by[scenario][s.rep.Subject] {
		if ref, ok := s.by[scenario][s.rep.Reference][round]; ok {
			xs = append(xs, m(sub)/m(ref))
		}
	}
	return median(xs)
}

// others are the brokers besides reference and subject (kfake).
func (s summary) others() []string {
	var out []string
	for _, k := range s.rep.Targets {
		if k != s.rep.Reference && k != s.rep.Subject {
			out = append(out, k)
		}
	}
	return out
}

func title(kind string) string {
	switch kind {
	case kindKafka:
		return "Kafka"
	case kindStrait:
		return "Strait"
	}
	return kind
}

func f1(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.1f", x)
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

func fratio(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("**%.2f**", x)
}

// krecs writes records/s compactly: 412k, 1.23M.
func krecs(x float64) string {
	switch {
	case math.IsNaN(x):
		return "–"
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.0fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// mbRecs is "41.2 (412k)": MB/s and records/s.
func mbRecs(mb, recs float64) string {
	if math.IsNaN(mb) {
		return "–"
	}
	return fmt.Sprintf("%.1f (%s)", mb, krecs(recs))
}

func dagger(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" †%d", n)
}

func mibf(b int64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(b)/(1<<20))
}

func ratioOf(sub, ref float64) float64 {
	if ref == 0 || math.IsNaN(ref) || math.IsNaN(sub) {
		return math.NaN()
	}
	return sub / ref
}

// writeMarkdown renders the report: scenario throughput and latency tables,
// then start-up and memory, partition scaling, and fetch at head and tail.
func writeMarkdown(w io.Writer, rep *CompareReport) {
	s := newSummary(rep)
	ref, sub := rep.Reference, rep.Subject
	R, S := title(ref), title(sub)
	fmt.Fprintf(w, "# %s beside %s\n\n", S, R)
	fmt.Fprintf(w, "`%s`, %s to %s, %d round(s). ", rep.Command, rep.Started.Format("2006-01-02 15:04"), rep.Finished.Format("15:04 MST"), rep.Rounds)
	var vs []string
	for _, k := range []string{"strait", "kafka", "franz-go", "kfake"} {
		if v := rep.Versions[k]; v != "" {
			vs = append(vs, k+" "+v)
		}
	}
	fmt.Fprintf(w, "Versions: %s. Host: %s CPUs (%s), %s, Linux %s, %s.\n\n", strings.Join(vs, ", "),
		rep.Host["cpus"], rep.Host["cpu"], rep.Host["mem"], rep.Host["kernel"], rep.Host["java"])
	if rep.ACLs > 0 {
		fmt.Fprintf(w, "Authorizer: Kafka's StandardAuthorizer on every broker with %d ACLs; the SASL scenarios' user is authorized by them, the PLAINTEXT ones run as the super user User:ANONYMOUS.\n\n", rep.ACLs)
	}
	fmt.Fprintf(w, "Ratios are %s/%s, the median of the per-round ratios; every other figure is the median of the rounds. ", S, R)
	fmt.Fprintf(w, "Throughput: higher is better, so a ratio above 1 favours %s; latency, time, CPU and memory: a ratio below 1 favours %s.\n\n", S, S)

	// Throughput.
	others := s.others()
	fmt.Fprintf(w, "## Throughput, MB/s (records/s)\n\n")
	fmt.Fprintf(w, "| scenario | %s produce | %s produce | ratio |", R, S)
	for _, k := range others {
		fmt.Fprintf(w, " %s produce |", k)
	}
	fmt.Fprintf(w, " %s consume | %s consume | ratio |", R, S)
	for _, k := range others {
		fmt.Fprintf(w, " %s consume |", k)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", 6+2*len(others)))
	for _, sc := range rep.Scenarios {
		n := sc.Name
		fmt.Fprintf(w, "| %s | %s | %s | %s |", n, mbRecs(s.med(n, ref, produceMB), s.med(n, ref, produceRecs)),
			mbRecs(s.med(n, sub, produceMB), s.med(n, sub, produceRecs)), fratio(s.ratio(n, produceMB)))
		for _, k := range others {
			fmt.Fprintf(w, " %s |", s.orNA(n, k, mbRecs(s.med(n, k, produceMB), s.med(n, k, produceRecs))))
		}
		fmt.Fprintf(w, " %s | %s | %s |", mbRecs(s.med(n, ref, consumeMB), s.med(n, ref, consumeRecs)),
			mbRecs(s.med(n, sub, consumeMB), s.med(n, sub, consumeRecs)), fratio(s.ratio(n, consumeMB)))
		for _, k := range others {
			fmt.Fprintf(w, " %s |", s.orNA(n, k, mbRecs(s.med(n, k, consumeMB), s.med(n, k, consumeRecs))))
		}
		fmt.Fprintln(w)
	}

	// Latency.
	fmt.Fprintf(w, "\n## End-to-end latency, ms, at half of %s's produce throughput\n\n", R)
	fmt.Fprintf(w, "The rate is half of %s's produce throughput in the same round (median shown), producer linger 1 ms, a consumer running alongside. ", R)
	fmt.Fprintf(w, "A dagger (†n) marks a broker that fell more than 2%% behind the rate in n rounds: its latency there is queueing, not service time.\n\n")
	fmt.Fprintf(w, "| scenario | rate rec/s | %s p50 | p99 | p99.9 | max | %s p50 | p99 | p99.9 | max | p50 ratio | p99 ratio |", R, S)
	for _, k := range others {
		fmt.Fprintf(w, " %s p50 / p99 |", k)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", 11+len(others)))
	for _, sc := range rep.Scenarios {
		n := sc.Name
		fmt.Fprintf(w, "| %s | %s | %s%s | %s | %s | %s | %s%s | %s | %s | %s | %s | %s |", n, krecs(s.med(n, ref, latRate)),
			f2(s.med(n, ref, latP50)), dagger(s.saturated(n, ref)), f2(s.med(n, ref, latP99)), f2(s.med(n, ref, latP999)), f1(s.med(n, ref, latMax)),
			f2(s.med(n, sub, latP50)), dagger(s.saturated(n, sub)), f2(s.med(n, sub, latP99)), f2(s.med(n, sub, latP999)), f1(s.med(n, sub, latMax)),
			fratio(s.ratio(n, latP50)), fratio(s.ratio(n, latP99)))
		for _, k := range others {
			fmt.Fprintf(w, " %s |", s.orNA(n, k, f2(s.med(n, k, latP50))+" / "+f2(s.med(n, k, latP99))))
		}
		fmt.Fprintln(w)
	}

	// Broker CPU per GB: what each broker spends, independent of how fast
	// the client on the same cores could drive it.
	fmt.Fprintf(w, "\n## Broker CPU seconds per GB (user + system, all threads, from /proc/<pid>/stat)\n\n")
	fmt.Fprintf(w, "The client shares the machine's cores with the broker, so throughput partly measures the client; CPU per GB is the broker's own cost.\n\n")
	fmt.Fprintf(w, "| scenario | %s produce | %s produce | ratio | %s consume | %s consume | ratio |\n|---|---:|---:|---:|---:|---:|---:|\n", R, S, R, S)
	for _, sc := range rep.Scenarios {
		n := sc.Name
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", n, f2(s.med(n, ref, produceCPU)), f2(s.med(n, sub, produceCPU)), fratio(s.ratio(n, produceCPU)),
			f2(s.med(n, ref, consumeCPU)), f2(s.med(n, sub, consumeCPU)), fratio(s.ratio(n, consumeCPU)))
	}

	writeSecurityCost(w, rep, s)
	writeResources(w, rep, s)
	writeScaling(w, rep, s)
	writeHeadTail(w, rep)

	if len(rep.Errors) > 0 {
		fmt.Fprintf(w, "\n## Errors\n\n")
		for _, e := range rep.Errors {
			fmt.Fprintf(w, "- %s\n", mdEscape(e))
		}
	}
}

func writeResources(w io.Writer, rep *CompareReport, s summary) {
	ref, sub := rep.Reference, rep.Subject
	kinds := append([]string{ref, sub}, s.others()...)
	fmt.Fprintf(w, "\n## Start-up and memory\n\n| | %s | %s | ratio |", title(ref), title(sub))
	for _, k := range s.others() {
		fmt.Fprintf(w, " %s |", k)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", 3+len(s.others())))
	row := func(label string, val func(kind string) float64, format func(float64) string) {
		fmt.Fprintf(w, "| %s |", label)
		for i, k := range kinds {
			fmt.Fprintf(w, " %s |", format(val(k)))
			if i == 1 {
				fmt.Fprintf(w, " %s |", fratio(ratioOf(val(sub), val(ref))))
			}
		}
		fmt.Fprintln(w)
	}
	startup := func(f func(StartupSample) float64) func(string) float64 {
		return func(kind string) float64 {
			var xs []float64
			for _, x := range rep.Startup[kind] {
				xs = append(xs, f(x))
			}
			return median(xs)
		}
	}
	mibF := func(x float64) string {
		if math.IsNaN(x) || x == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f", x/(1<<20))
	}
	n := 0
	for _, v := range rep.Startup {
		n = max(n, len(v))
	}
	row(fmt.Sprintf("start to first Metadata, ms (median of %d)", n), startup(func(x StartupSample) float64 { return x.ReadyMs }),
		func(x float64) string { return f1(x) })
	row(fmt.Sprintf("idle RSS %v after ready, MiB", idleSettle), startup(func(x StartupSample) float64 { return float64(x.IdleRSS) }), mibF)
	row("peak RSS under the scenario load, MiB", func(k string) float64 {
		if m, ok := rep.LoadMemory[k]; ok {
			return float64(m.RSS)
		}
		return math.NaN()
	}, mibF)
	conns := 0
	for _, c := range rep.Connections {
		conns = max(conns, c.N)
	}
	row(fmt.Sprintf("RSS with %d idle connections, MiB", conns), func(k string) float64 {
		if c, ok := rep.Connections[k]; ok {
			return float64(c.After)
		}
		return math.NaN()
	}, mibF)
	row(fmt.Sprintf("growth for %d idle connections, KiB per connection", conns), func(k string) float64 {
		if c, ok := rep.Connections[k]; ok && c.N > 0 {
			return float64(c.After-c.Before) / 1024 / float64(c.N)
		}
		return math.NaN()
	}, f1)
}

func writeScaling(w io.Writer, rep *CompareReport, s summary) {
	if len(rep.Scaling) == 0 {
		return
	}
	kinds := append([]string{rep.Reference, rep.Subject}, s.others()...)
	fmt.Fprintf(w, "\n## Partition scaling: one broker, topics of 1, 100, 1,000 (and more) partitions added in turn\n\n")
	fmt.Fprintf(w, "1 KiB records, acks=1, no compression, over every partition of the new topic (the partitioner is under the table). ")
	fmt.Fprintf(w, "Create: CreateTopics until every partition has a leader and answers ListOffsets. First write: one record to each partition, acks=1. ")
	fmt.Fprintf(w, "Fresh: the first produce phase right after; settled: a second one right after that (the ratio is of these), then the consume phase. ")
	fmt.Fprintf(w, "Written: the partitions the settled phase wrote to. RSS: after creation, and the peak while producing and consuming.\n\n")
	fmt.Fprintf(w, "| partitions (total) | broker | create s | first write s | fresh produce MB/s | settled produce MB/s (rec/s) | written | consume MB/s (rec/s) | idle RSS MiB | RSS under load MiB | produce ratio | consume ratio |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	steps := map[string]map[int]ScaleStep{}
	var sizes []int
	for _, k := range kinds {
		steps[k] = map[int]ScaleStep{}
		for _, st := range rep.Scaling[k] {
			steps[k][st.Partitions] = st
			if !slices.Contains(sizes, st.Partitions) {
				sizes = append(sizes, st.Partitions)
			}
		}
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		for _, k := range kinds {
			st, ok := steps[k][n]
			if !ok {
				continue
			}
			if st.Error != "" && st.CreateSeconds == 0 {
				fmt.Fprintf(w, "| %d (%d) | %s | failed: %s | | | | | | | | | |\n", n, st.TotalPartitions, title(k), mdEscape(st.Error))
				continue
			}
			pr, cr := "", ""
			if k == rep.Subject {
				if rs, ok := steps[rep.Reference][n]; ok {
					pr = fratio(ratioOf(st.Produce.MBPerSec, rs.Produce.MBPerSec))
					cr = fratio(ratioOf(st.Consume.MBPerSec, rs.Consume.MBPerSec))
				}
			}
			written := "–"
			if st.PartitionsWritten > 0 {
				written = fmt.Sprint(st.PartitionsWritten)
			}
			fmt.Fprintf(w, "| %d (%d) | %s | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, st.TotalPartitions, title(k), st.CreateSeconds, st.FirstWriteSeconds, f1(st.FreshProduce.MBPerSec),
				mbRecs(st.Produce.MBPerSec, st.Produce.RecordsPerSec), written, mbRecs(st.Consume.MBPerSec, st.Consume.RecordsPerSec),
				mibf(st.IdleRSS), mibf(st.LoadRSS), pr, cr)
		}
	}
	fmt.Fprintf(w, "\n%s\n", scalePartitionerLine(rep.ScalePartitioner))
	writeScalingStop(w, rep, kinds)
}

// scalePartitionerLine says how the scaling load chose partitions.
func scalePartitionerLine(partitioner string) string {
	if partitioner == scaleSticky {
		return fmt.Sprintf("Partitioner: **sticky**: %d records (16 KiB, the Java client's batch.size) to one partition, then the next in order: "+
			"the batches of the Java client's built-in partitioner (KIP-794, which kafka-producer-perf-test uses) and franz-go's default for records without a key, "+
			"which pick the next partition at random; in order, every partition has had its turn once a phase carried %d records per partition, "+
			"and each produce phase runs past its length until then (at most %dx).", inturn.TurnRecords(1024), inturn.TurnRecords(1024), minRecordsStretch)
	}
	// Reports from before the choice have no partitioner: round-robin.
	return "Partitioner: **round-robin**: every record to the next partition, so a partition's batch holds about 1/n of what the producer buffers (about 2 records at 10,000 partitions)."
}

// writeScalingStop lists each broker's clean shutdown after its last
// scaling step, holding every step's partitions.
func writeScalingStop(w io.Writer, rep *CompareReport, kinds []string) {
	var rows []string
	for _, k := range kinds {
		st := rep.Scaling[k]
		if len(st) == 0 || st[len(st)-1].StopSeconds == 0 {
			continue
		}
		last := st[len(st)-1]
		note := ""
		if last.StopKilled {
			note = " (killed: no clean shutdown)"
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %.2f%s |\n", title(k), last.TotalPartitions, last.StopSeconds, note))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nClean shutdown after the last step: SIGTERM until the process exits (killed after %.0f s).\n\n", stopGrace.Seconds())
	fmt.Fprintf(w, "| broker | partitions | stop s |\n|---|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprint(w, r)
	}
}

func writeHeadTail(w io.Writer, rep *CompareReport) {
	if len(rep.HeadTail) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Fetch latency at the head and the tail of a large partition\n\n")
	fmt.Fprintf(w, "One partition written with 1 KiB records, then single Fetch requests (max 1 MiB, no wait) at random offsets in the oldest 1%% (head: first segment) and the newest 1%% (tail: active segment) of the log, alternating. Just written on a machine with spare memory, both ends are most likely in the page cache: this is the index lookup and the transfer, not the disk.\n\n")
	fmt.Fprintf(w, "| broker | log size | records | fetches each | head p50 ms | head p99 ms | head max ms | tail p50 ms | tail p99 ms | tail max ms |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range []string{rep.Reference, rep.Subject} {
		ht, ok := rep.HeadTail[k]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "| %s | %.2f GB | %s | %d | %s | %s | %s | %s | %s | %s |\n", title(k), float64(ht.LogBytes)/1e9, krecs(float64(ht.Records)), ht.Samples,
			f2(ht.HeadP50Ms), f2(ht.HeadP99Ms), f2(ht.HeadMaxMs), f2(ht.TailP50Ms), f2(ht.TailP99Ms), f2(ht.TailMaxMs))
	}
}

// writeSecurityCost sets each secured scenario beside its plaintext twin on
// the same broker: the cost of TLS (and SASL) to each broker.
func writeSecurityCost(w io.Writer, rep *CompareReport, s summary) {
	tw := twins(rep.Scenarios)
	var secured []int
	for i, sc := range rep.Scenarios {
		if sc.secured() {
			secured = append(secured, i)
		}
	}
	if len(secured) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Cost of TLS and SASL: each secured scenario beside its plaintext twin, same broker\n\n")
	fmt.Fprintf(w, "The secured listener is on the same broker process as the PLAINTEXT one, and a secured scenario runs in the same round as its twin (the same parameters over PLAINTEXT), minutes apart at most; ")
	fmt.Fprintf(w, "its latency phase runs at the twin's rate (†n: fell behind it in n rounds). Ratios are secured/plaintext, the median of the per-round ratios: for throughput below 1, for latency and CPU above 1, is what the security costs. ")
	fmt.Fprintf(w, "Clients: franz-go over Go's crypto/tls (RSA 2048 certificate")
	if rep.Keystore != "" {
		fmt.Fprintf(w, ", %s keystore", rep.Keystore)
	}
	fmt.Fprintf(w, "); kfake has no TLS or SASL (n/a).")
	var neg []string
	for _, k := range []string{rep.Reference, rep.Subject} {
		for _, proto := range slices.Sorted(maps.Keys(rep.TLS[k])) {
			neg = append(neg, fmt.Sprintf("%s %s: %s", title(k), proto, rep.TLS[k][proto]))
		}
	}
	if len(neg) > 0 {
		fmt.Fprintf(w, " Negotiated: %s.", strings.Join(neg, "; "))
	}
	fmt.Fprintf(w, "\n\n| scenario | broker | produce MB/s plain → secured | ratio | consume MB/s plain → secured | ratio | p50 ms plain → secured | ratio | p99 ms plain → secured | ratio | CPU s/GB produce ratio | consume ratio |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	arrow := func(a, b string) string { return a + " → " + b }
	for _, i := range secured {
		sec := rep.Scenarios[i].Name
		j, ok := tw[i]
		if !ok {
			fmt.Fprintf(w, "| %s | | no plaintext twin in this run | | | | | | | | | |\n", sec)
			continue
		}
		plain := rep.Scenarios[j].Name
		for _, k := range []string{rep.Reference, rep.Subject} {
			if len(s.by[sec][k]) == 0 && len(s.by[plain][k]) == 0 {
				continue
			}
			pr := func(m metric) string { return fratio(s.pairRatio(sec, plain, k, m)) }
			fmt.Fprintf(w, "| %s (twin: %s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sec, plain, title(k),
				arrow(f1(s.med(plain, k, produceMB)), f1(s.med(sec, k, produceMB))), pr(produceMB),
				arrow(f1(s.med(plain, k, consumeMB)), f1(s.med(sec, k, consumeMB))), pr(consumeMB),
				arrow(f2(s.med(plain, k, latP50))+dagger(s.saturated(plain, k)), f2(s.med(sec, k, latP50))+dagger(s.saturated(sec, k))), pr(latP50),
				arrow(f2(s.med(plain, k, latP99)), f2(s.med(sec, k, latP99))), pr(latP99),
				pr(produceCPU), pr(consumeCPU))
		}
	}
	writeConnSetup(w, rep)
}

// writeConnSetup is the new-client set-up time on each listener.
func writeConnSetup(w io.Writer, rep *CompareReport) {
	ref, sub := rep.Reference, rep.Subject
	var labels []string
	n := 0
	for _, k := range []string{ref, sub} {
		for l, c := range rep.ConnSetup[k] {
			if !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
			n = max(n, c.N)
		}
	}
	if len(labels) == 0 {
		return
	}
	// PLAINTEXT first, then by name.
	slices.SortFunc(labels, func(a, b string) int {
		switch {
		case a == protoPlaintext:
			return -1
		case b == protoPlaintext:
			return 1
		}
		return strings.Compare(a, b)
	})
	fmt.Fprintf(w, "\nNew-client set-up, ms: from dial to the first Metadata answer (TCP connect, TLS handshake, SASL exchange, ApiVersions), %d clients one after another on an idle broker, after 5 unmeasured.\n\n", n)
	fmt.Fprintf(w, "| listener | %s p50 | p99 | %s p50 | p99 | p50 ratio |\n|---|---:|---:|---:|---:|---:|\n", title(ref), title(sub))
	get := func(k, l string) (float64, float64) {
		if c, ok := rep.ConnSetup[k][l]; ok {
			return c.P50Ms, c.P99Ms
		}
		return math.NaN(), math.NaN()
	}
	for _, l := range labels {
		r50, r99 := get(ref, l)
		s50, s99 := get(sub, l)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", l, f2(r50), f2(r99), f2(s50), f2(s99), fratio(ratioOf(s50, r50)))
	}
}

// pairRatio is the median over rounds of m(a)/m(b) for one broker, taking
// the rounds in which it ran both scenarios.
func (s summary) pairRatio(a, b, kind string, m metric) float64 {
	var xs []float64
	for round, ra := range s.by[a][kind] {
		if rb, ok := s.by[b][kind][round]; ok {
			xs = append(xs, m(ra)/m(rb))
		}
	}
	return median(xs)
}
