package partition

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

type ms float64

func toMs(d time.Duration) ms { return ms(float64(d.Microseconds()) / 1000) }

func (m ms) String() string {
	if m < 0 {
		return "none"
	}
	return fmt.Sprintf("%.2f s", float64(m)/1000)
}

// kindStats are one fault kind's figures over a schedule: operations are
// values sent between the fault's start and the next fault's start.
type kindStats struct {
	Kind         string         `json:"fault"`
	Runs         int            `json:"runs"`
	Operations   int            `json:"operations"`
	Acknowledged int            `json:"acknowledged"`
	Anomalies    map[string]int `json:"anomalies"`
	Failovers    []ms           `json:"failover_ms"`
	Recover      []ms           `json:"heal_to_full_isr_ms"`
}

type scheduleResult struct {
	Seed     uint64       `json:"seed"`
	Steps    int          `json:"steps"`
	Clock    bool         `json:"clock_fault_available"`
	Duration ms           `json:"duration_ms"`
	Faults   []*faultRun  `json:"faults"`
	PerKind  []*kindStats `json:"per_fault"`
	Verdict  verdict      `json:"verdict"`
}

type leaseResult struct {
	MinISR          int     `json:"min_insync_replicas"`
	Leader          int32   `json:"isolated_leader"`
	AckedBefore     int     `json:"acked_before_cut"`
	LeaderAcksAfter int     `json:"batches_acked_by_old_leader_after_cut"`
	LastLeaderAck   ms      `json:"last_old_leader_ack_after_cut_ms"`
	Bound           ms      `json:"bound_ms"`
	Failover        ms      `json:"failover_ms"`
	NewLeader       int32   `json:"new_leader"`
	Recover         ms      `json:"heal_to_full_isr_ms"`
	Verdict         verdict `json:"verdict"`
	Pass            bool    `json:"pass"`
}

var results struct {
	mu       sync.Mutex
	Schedule *scheduleResult
	Lease    []*leaseResult
	rows     [][2]string
}

func addRow(name string, pass bool) {
	results.mu.Lock()
	defer results.mu.Unlock()
	st := "pass"
	if !pass {
		st = "FAIL"
	}
	results.rows = append(results.rows, [2]string{name, st})
}

func machine() string {
	return fmt.Sprintf("%d cores, %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// perKind aggregates a schedule's faults and attributes each operation and
// anomaly to the fault in force when it was sent.
func perKind(faults []*faultRun, w *workload, v verdict) []*kindStats {
	idx := func(at time.Time) int { // -1: before the first fault
		i := -1
		for j, f := range faults {
			if !at.Before(f.Start) {
				i = j
			}
		}
		return i
	}
	by := map[string]*kindStats{}
	var order []string
	get := func(i int) *kindStats {
		k := baselineLabel
		if i >= 0 {
			k = faults[i].Kind
		}
		if by[k] == nil {
			by[k] = &kindStats{Kind: k, Anomalies: map[string]int{}}
			order = append(order, k)
		}
		return by[k]
	}
	get(-1)
	for _, f := range faults {
		s := get(slices.Index(faults, f))
		s.Runs++
		s.Recover = append(s.Recover, f.Recover)
		for _, p := range f.Led {
			s.Failovers = append(s.Failovers, f.Failover[p])
		}
	}
	w.mu.Lock()
	for _, at := range w.sent {
		get(idx(at)).Operations++
	}
	for _, a := range w.acked {
		get(idx(a.sent)).Acknowledged++
	}
	w.mu.Unlock()
	for _, a := range v.all {
		get(idx(a.At)).Anomalies[a.Kind]++
	}
	out := make([]*kindStats, 0, len(order))
	for _, k := range order {
		out = append(out, by[k])
	}
	return out
}

func writeResults(dir string) error {
	results.mu.Lock()
	defer results.mu.Unlock()
	if len(results.rows) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	doc := map[string]any{"date": now, "machine": machine(), "tests": results.rows}
	if results.Schedule != nil {
		doc["schedule"] = results.Schedule
	}
	if results.Lease != nil {
		doc["isolated_leader"] = results.Lease
	}
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var tsv strings.Builder
	for _, r := range results.rows {
		st := "pass"
		if r[1] != "pass" {
			st = "fail"
		}
		fmt.Fprintf(&tsv, "franz-go, network partitions\t%s\t%s\n", r[0], st)
	}
	os.WriteFile(filepath.Join(dir, "results.tsv"), []byte(tsv.String()), 0o644)
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(markdown(now)), 0o644)
}

func anomalyCell(m map[string]int, kinds ...string) string {
	n := 0
	for _, k := range kinds {
		n += m[k]
	}
	return fmt.Sprint(n)
}

func msList(l []ms) string {
	if len(l) == 0 {
		return "-"
	}
	var s []string
	for _, m := range l {
		s = append(s, m.String())
	}
	return strings.Join(s, ", ")
}

func markdown(date string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Network-partition run\n\nWritten by compat-tests/partition on %s; machine: %s.\n\n", date, machine())
	b.WriteString("| test | result |\n|---|---|\n")
	for _, r := range results.rows {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], r[1])
	}
	if s := results.Schedule; s != nil {
		v := s.Verdict
		fmt.Fprintf(&b, "\n## Schedule (seed %d, %d faults, %s)\n\n", s.Seed, s.Steps, s.Duration)
		fmt.Fprintf(&b, "Clock-jump fault available: %v.\n\n", s.Clock)
		fmt.Fprintf(&b, "Idempotent records acknowledged %d, failed or unknown %d; read back %d; consumed by the group %d; transactions committed %d, aborted %d, unknown %d.\n\n",
			v.Acknowledged, v.Failed, v.ReadBack, v.Consumed, v.TxnCommitted, v.TxnAborted, v.TxnUnknown)
		fmt.Fprintf(&b, "Anomalies: %v\n\n", v.Counts)
		b.WriteString("| fault | runs | operations | acknowledged | lost | duplicated | reordered | offsets inconsistent | skipped | aborted seen | failover (fault to first ack by another leader) | heal to full ISR |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, k := range s.PerKind {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", k.Kind, k.Runs, k.Operations, k.Acknowledged,
				anomalyCell(k.Anomalies, "lost", "committed-lost"), anomalyCell(k.Anomalies, "duplicate"), anomalyCell(k.Anomalies, "reordered"),
				anomalyCell(k.Anomalies, "offset-mismatch"), anomalyCell(k.Anomalies, "skipped"), anomalyCell(k.Anomalies, "aborted-seen", "aborted-visible"),
				msList(k.Failovers), msList(k.Recover))
		}
		b.WriteString("\n| # | fault | target | other | detail | start | led | failover | heal to full ISR | error |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for i, f := range s.Faults {
			var fo []string
			for _, p := range f.Led {
				fo = append(fo, fmt.Sprintf("p%d %s", p, f.Failover[p]))
			}
			fmt.Fprintf(&b, "| %d | %s | %d | %d | %s | %s | %v | %s | %s | %s |\n", i+1, f.Kind, f.Target, f.Other, f.Detail,
				f.Start.UTC().Format("15:04:05.000"), f.Led, strings.Join(fo, ", "), f.Recover, f.Err)
		}
		if len(v.Anomalies) > 0 {
			b.WriteString("\nFirst anomalies:\n\n")
			for _, a := range v.Anomalies {
				fmt.Fprintf(&b, "- %s: %s (sent %s)\n", a.Kind, a.What, a.At.UTC().Format("15:04:05.000"))
			}
		}
	}
	if len(results.Lease) > 0 {
		b.WriteString("\n## A leader cut off from etcd and its followers\n\n")
		b.WriteString("| min.insync.replicas | isolated leader | acked before the cut | batches the old leader acked after the cut | last of them after the cut | bound | failover | new leader | heal to full ISR | acknowledged | lost | duplicated | reordered | pass |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, l := range results.Lease {
			fmt.Fprintf(&b, "| %d | %d | %d | %d | %s | %s | %s | %d | %s | %d | %d | %d | %d | %v |\n", l.MinISR, l.Leader, l.AckedBefore,
				l.LeaderAcksAfter, l.LastLeaderAck, l.Bound, l.Failover, l.NewLeader, l.Recover, l.Verdict.Acknowledged,
				l.Verdict.Counts["lost"], l.Verdict.Counts["duplicate"], l.Verdict.Counts["reordered"], l.Pass)
		}
	}
	return b.String()
}
