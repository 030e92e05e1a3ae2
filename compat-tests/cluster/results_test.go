package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// ms is a duration in milliseconds, for the JSON file.
type ms float64

func toMs(d time.Duration) ms { return ms(float64(d.Microseconds()) / 1000) }

func (m ms) String() string {
	if m < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f s", float64(m)/1000)
}

// killRound is one kill -9 and restart.
type killRound struct {
	Broker        int32         `json:"broker"`
	WasController bool          `json:"was_controller"`
	WasEtcdLeader bool          `json:"was_etcd_leader"`
	Led           []int32       `json:"led_partitions"`
	Failover      map[int32]ms  `json:"failover_ms"`   // partition -> kill to first write by another broker
	NewLeader     map[int32]int `json:"new_leader"`    // partition -> broker that wrote it
	GapAround     map[int32]ms  `json:"gap_around_ms"` // partition -> no-ack interval around the kill
	Ready         ms            `json:"restart_ready_ms"`
	RejoinISR     ms            `json:"rejoin_isr_ms"` // from restart to in every partition's ISR
}

type failoverResult struct {
	Topic      string       `json:"topic"`
	Partitions int32        `json:"partitions"`
	Duration   ms           `json:"producing_ms"`
	Rounds     []killRound  `json:"kills"`
	LongestGap map[int32]ms `json:"longest_gap_ms"`
	Verdict    verdict      `json:"verdict"`
	// The batches in the three replicas' segment files, compared at the end.
	ReplicasIdentical bool          `json:"replicas_identical"`
	ReplicaBatches    map[int32]int `json:"replica_batches"`
}

type lagResult struct {
	Follower       int32   `json:"stopped_follower"`
	Leader         int32   `json:"leader"`
	LagMax         ms      `json:"replica_lag_time_max_ms"`
	SessionTimeout ms      `json:"broker_session_timeout_ms"`
	Shrink         ms      `json:"isr_shrink_ms"`   // SIGSTOP to ISR without the follower
	Rejoin         ms      `json:"isr_rejoin_ms"`   // SIGCONT to ISR with it again
	AckedWhile     int     `json:"acked_while_out"` // acknowledged between shrink and SIGCONT
	LongestGap     ms      `json:"longest_gap_ms"`
	Verdict        verdict `json:"verdict"`
}

type minISRResult struct {
	// Part A: RF 2 with min.insync.replicas 2, the follower killed.
	ShrinkToOne         ms     `json:"isr_shrink_to_one_ms"`
	KilledWasController bool   `json:"killed_follower_was_controller"`
	KilledWasEtcdLeader bool   `json:"killed_follower_was_etcd_leader"`
	RefusalError        string `json:"refusal_error"`
	RefusedFound        bool   `json:"refused_record_present"`
	RecoveredIn         ms     `json:"produce_ok_after_restart_ms"`
	// Part B: RF 3, two of three brokers SIGSTOPped (no etcd quorum).
	QuorumLossError   string `json:"quorum_loss_error"`
	QuorumLossAcked   bool   `json:"quorum_loss_acked"`
	QuorumLossFound   bool   `json:"quorum_loss_record_present"`
	QuorumRecoveredIn ms     `json:"produce_ok_after_sigcont_ms"`
	QuorumFullISRIn   ms     `json:"full_isr_after_sigcont_ms"`
	EtcdLeaderStopped bool   `json:"etcd_leader_among_stopped"`
	LeasesLost        int    `json:"registration_leases_lost_after_sigcont"`
}

type testRow struct {
	Name string
	Pass bool
}

// results is what the tests measured, written by TestMain.
var results struct {
	mu       sync.Mutex
	Failover *failoverResult
	// FailoverAuthz is the kill -9 test with the StandardAuthorizer on.
	FailoverAuthz *failoverResult
	Lag           *lagResult
	MinISR        *minISRResult
	rows          []testRow
}

func addRow(name string, pass bool) {
	results.mu.Lock()
	results.rows = append(results.rows, testRow{name, pass})
	results.mu.Unlock()
}

func machine() string {
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				_, cpu, _ = strings.Cut(line, ":")
				cpu = strings.TrimSpace(cpu)
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s/%s, %s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func writeResults(dir string) error {
	results.mu.Lock()
	defer results.mu.Unlock()
	if len(results.rows) == 0 {
		return nil // skipped
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	doc := map[string]any{"date": now, "machine": machine(), "tests": results.rows}
	if results.Failover != nil {
		doc["kill9_failover"] = results.Failover
	}
	if results.FailoverAuthz != nil {
		doc["kill9_failover_authorizer"] = results.FailoverAuthz
	}
	if results.Lag != nil {
		doc["sigstop_isr"] = results.Lag
	}
	if results.MinISR != nil {
		doc["min_insync_replicas"] = results.MinISR
	}
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	// results.tsv feeds compat-tests/report.py (client, test, pass|fail).
	var tsv strings.Builder
	for _, r := range results.rows {
		st := "pass"
		if !r.Pass {
			st = "fail"
		}
		fmt.Fprintf(&tsv, "%s\t%s\t%s\n", clientName(), r.Name, st)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.tsv"), []byte(tsv.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(markdown(now)), 0o644)
}

func markdown(date string) string {
	var b strings.Builder
	title, by := "Three-broker reliability run", "compat-tests/cluster (`make compat-cluster`)"
	if secure() {
		title, by = "Three-broker reliability run, every listener SASL_SSL", "compat-tests/cluster-secure (`make compat-cluster-secure`)"
	}
	fmt.Fprintf(&b, "# %s\n\nWritten by %s on %s; machine: %s.\n\n", title, by, date, machine())
	b.WriteString("| test | result |\n|---|---|\n")
	for _, r := range results.rows {
		st := "pass"
		if !r.Pass {
			st = "FAIL"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", r.Name, st)
	}
	if f := results.Failover; f != nil {
		failoverMarkdown(&b, "kill -9 and restart of each broker while producing", f)
	}
	if f := results.FailoverAuthz; f != nil {
		failoverMarkdown(&b, "The same with the StandardAuthorizer (brokers as User:broker holding CLUSTER_ACTION through an ACL, the producer as User:client holding READ and WRITE on its topic)", f)
	}
	if l := results.Lag; l != nil {
		fmt.Fprintf(&b, "\n## SIGSTOP of a follower\n\n")
		fmt.Fprintf(&b, "replica.lag.time.max.ms %s, broker.session.timeout.ms %s. Broker %d stopped (leader %d).\n\n", l.LagMax, l.SessionTimeout, l.Follower, l.Leader)
		fmt.Fprintf(&b, "| SIGSTOP to ISR shrink | acknowledged after the shrink, before SIGCONT | SIGCONT to back in the ISR | longest no-ack interval | acknowledged | lost | duplicates | out of order |\n|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %d | %d | %d |\n", l.Shrink, l.AckedWhile, l.Rejoin, l.LongestGap,
			l.Verdict.Acknowledged, l.Verdict.Lost, l.Verdict.Duplicates, l.Verdict.OutOfOrder)
	}
	if m := results.MinISR; m != nil {
		fmt.Fprintf(&b, "\n## min.insync.replicas\n\n")
		fmt.Fprintf(&b, "- RF 2, min.insync.replicas 2, follower killed (it was the controller: %v, the etcd leader: %v): ISR down to the leader after %s; a bare acks=all Produce answered `%s` (franz-go: NOT_ENOUGH_REPLICAS too); the refused records present afterwards: %v; produce accepted again %s after the restart.\n",
			m.KilledWasController, m.KilledWasEtcdLeader, m.ShrinkToOne, m.RefusalError, m.RefusedFound, m.RecoveredIn)
		fmt.Fprintf(&b, "- RF 3, min.insync.replicas 2, two brokers SIGSTOPped (etcd has no quorum, so the ISR cannot shrink; the etcd leader among the stopped: %v): a bare acks=all Produce answered `%s`, acknowledged: %v, present afterwards: %v; produce accepted again %s after SIGCONT; full ISR when checked %s after SIGCONT; registration leases found lost after SIGCONT (brokers re-registering): %d.\n",
			m.EtcdLeaderStopped, m.QuorumLossError, m.QuorumLossAcked, m.QuorumLossFound, m.QuorumRecoveredIn, m.QuorumFullISRIn, m.LeasesLost)
	}
	return b.String()
}

// failoverMarkdown is one kill -9 test's section of results.md.
func failoverMarkdown(b *strings.Builder, title string, f *failoverResult) {
	v := f.Verdict
	fmt.Fprintf(b, "\n## %s\n\n", title)
	fmt.Fprintf(b, "Topic %s, %d partitions, RF 3, min.insync.replicas 2; idempotent producer, acks=all, %s of producing.\n\n",
		f.Topic, f.Partitions, f.Duration)
	fmt.Fprintf(b, "| acknowledged | failed | read back | lost | duplicates | out of order | failed but present |\n|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(b, "| %d | %d | %d | %d | %d | %d | %d |\n\n", v.Acknowledged, v.Failed, v.Read, v.Lost, v.Duplicates, v.OutOfOrder, v.FailedButFound)
	if len(v.FailedErrors) > 0 {
		fmt.Fprintf(b, "Failed records by error: %v\n\n", v.FailedErrors)
	}
	b.WriteString("| kill | broker | controller? | etcd leader? | partitions it led | failover (kill -9 to first write by the new leader) | longest no-ack interval around the kill | restart to ready | restart to back in every ISR |\n|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range f.Rounds {
		var fo, gaps []string
		for _, p := range r.Led {
			fo = append(fo, fmt.Sprintf("p%d %s (to %d)", p, r.Failover[p], r.NewLeader[p]))
		}
		var maxGap ms
		for _, g := range r.GapAround {
			maxGap = max(maxGap, g)
		}
		gaps = append(gaps, maxGap.String())
		if len(fo) == 0 {
			fo = []string{"none"}
		}
		fmt.Fprintf(b, "| %d | %d | %v | %v | %v | %s | %s | %s | %s |\n", i+1, r.Broker, r.WasController, r.WasEtcdLeader, r.Led,
			strings.Join(fo, ", "), strings.Join(gaps, ""), r.Ready, r.RejoinISR)
	}
	fmt.Fprintf(b, "\nThe three replicas' segment files hold the same batches (offsets, leader epochs, CRCs): %v (batches per partition: %v).\n", f.ReplicasIdentical, f.ReplicaBatches)
	b.WriteString("\nLongest interval without an acknowledgement, per partition, over the whole run:")
	for p := int32(0); p < f.Partitions; p++ {
		fmt.Fprintf(b, " p%d %s;", p, f.LongestGap[p])
	}
	b.WriteString("\n")
}
