package partition

// The checker: the history the workload recorded against two fresh reads of
// every partition at the end (read_uncommitted: every record; read_committed:
// what a transactional reader may see).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// anomaly is one violation, with the time of the operation it concerns (the
// send time of the value), to attribute it to a fault.
type anomaly struct {
	Kind string    `json:"kind"`
	What string    `json:"what"`
	At   time.Time `json:"at"`
}

type verdict struct {
	Acknowledged int `json:"acknowledged"`
	Failed       int `json:"failed_or_unknown"`
	ReadBack     int `json:"read_back"`
	Consumed     int `json:"consumed_by_group"`
	TxnCommitted int `json:"txn_committed"`
	TxnAborted   int `json:"txn_aborted"`
	TxnUnknown   int `json:"txn_unknown"`
	// Counts by anomaly kind: lost, duplicate, reordered, offset-mismatch,
	// skipped, aborted-seen, committed-lost, aborted-visible.
	Counts    map[string]int `json:"anomalies"`
	Anomalies []anomaly      `json:"examples,omitempty"`
	all       []anomaly
}

func (v *verdict) add(kind, what string, at time.Time) {
	v.Counts[kind]++
	v.all = append(v.all, anomaly{kind, what, at})
	if len(v.Anomalies) < 30 {
		v.Anomalies = append(v.Anomalies, anomaly{kind, what, at})
	}
}

func (v *verdict) ok() bool {
	for _, n := range v.Counts {
		if n > 0 {
			return false
		}
	}
	return true
}

// parseIdem parses "i<producer>-p<partition>-<seq>".
func parseIdem(val string) (prod int, part int32, seq int, ok bool) {
	f := strings.Split(val, "-")
	if len(f) != 3 || !strings.HasPrefix(f[0], "i") || !strings.HasPrefix(f[1], "p") {
		return 0, 0, 0, false
	}
	a, e1 := strconv.Atoi(f[0][1:])
	b, e2 := strconv.Atoi(f[1][1:])
	c, e3 := strconv.Atoi(f[2])
	return a, int32(b), c, e1 == nil && e2 == nil && e3 == nil
}

// check compares the workload's history with U (read_uncommitted) and C
// (read_committed), both partition -> offset -> value.
func (w *workload) check(U, C map[int32]map[int64]string) verdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := verdict{Counts: map[string]int{}, Acknowledged: len(w.acked), Failed: w.failed,
		TxnCommitted: w.txnCount[txnCommitted], TxnAborted: w.txnCount[txnAborted], TxnUnknown: w.txnCount[txnUnknown]}
	for _, k := range []string{"lost", "duplicate", "reordered", "offset-mismatch", "skipped", "aborted-seen", "committed-lost", "aborted-visible"} {
		v.Counts[k] = 0
	}
	where := map[string][]int64{} // value -> offsets in U (its partition)
	for p := int32(0); p < w.parts; p++ {
		offs := make([]int64, 0, len(U[p]))
		for o := range U[p] {
			offs = append(offs, o)
		}
		slices.Sort(offs)
		v.ReadBack += len(offs)
		last := map[int]int{} // producer -> last seq in this partition
		for _, o := range offs {
			val := U[p][o]
			where[val] = append(where[val], o)
			if prod, part, seq, ok := parseIdem(val); ok {
				if part != p {
					v.add("reordered", fmt.Sprintf("%s found in partition %d at offset %d", val, p, o), w.sent[val])
					continue
				}
				if l, ok := last[prod]; ok && seq <= l {
					v.add("reordered", fmt.Sprintf("partition %d offset %d: %s after seq %d", p, o, val, l), w.sent[val])
				}
				last[prod] = max(last[prod], seq)
			}
			// Two reads must agree on what an offset holds.
			if cv, ok := C[p][o]; ok && cv != val {
				v.add("offset-mismatch", fmt.Sprintf("partition %d offset %d: %q read_uncommitted, %q read_committed", p, o, val, cv), w.sent[val])
			}
		}
	}
	for val, offs := range where {
		if len(offs) > 1 && !strings.HasPrefix(val, "a1-") { // acks=1 without idempotence may repeat
			v.add("duplicate", fmt.Sprintf("%s at offsets %v", val, offs), w.sent[val])
		}
	}
	for _, a := range w.acked {
		offs := where[a.val]
		switch {
		case len(offs) == 0:
			v.add("lost", fmt.Sprintf("%s acknowledged at partition %d offset %d at %s, absent", a.val, a.part, a.off, a.at.Format(time.StampMilli)), a.sent)
		case !slices.Contains(offs, a.off):
			v.add("offset-mismatch", fmt.Sprintf("%s acknowledged at offset %d, found at %v", a.val, a.off, offs), a.sent)
		}
	}
	// Transactions: a committed one is entirely in C, an aborted one is not
	// in C at all.
	inC := map[string]bool{}
	for p := range C {
		for _, val := range C[p] {
			inC[val] = true
		}
	}
	for val, out := range w.txns {
		switch {
		case out == txnCommitted && !inC[val]:
			v.add("committed-lost", val+" (committed transaction) missing from a read_committed read", w.sent[val])
		case out == txnAborted && inC[val]:
			v.add("aborted-visible", val+" (aborted transaction) returned by a read_committed read", w.sent[val])
		}
	}
	// The group consumer (read_committed): what it saw must be what C holds
	// at that offset, and it must not have skipped a record of C below the
	// highest offset it reached.
	for p := int32(0); p < w.parts; p++ {
		seen := map[int64]bool{}
		maxSeen := int64(-1)
		for _, s := range w.seen[p] {
			v.Consumed++
			seen[s.off] = true
			maxSeen = max(maxSeen, s.off)
			cv, inCommitted := C[p][s.off]
			switch {
			case w.txns[s.val] == txnAborted:
				v.add("aborted-seen", fmt.Sprintf("group consumer (read_committed) got %s (aborted) at partition %d offset %d", s.val, p, s.off), w.sent[s.val])
			case !inCommitted:
				v.add("offset-mismatch", fmt.Sprintf("group consumer got %q at partition %d offset %d, which a final read_committed read does not return (%q uncommitted)", s.val, p, s.off, U[p][s.off]), w.sent[s.val])
			case cv != s.val:
				v.add("offset-mismatch", fmt.Sprintf("group consumer got %q at partition %d offset %d, final read has %q", s.val, p, s.off, cv), w.sent[s.val])
			}
		}
		for o, val := range C[p] {
			if o <= maxSeen && !seen[o] {
				v.add("skipped", fmt.Sprintf("group consumer never got %s at partition %d offset %d (below the highest offset it got, %d)", val, p, o, maxSeen), w.sent[val])
			}
		}
	}
	return v
}
