// Package partition is a Jepsen-style fault harness for Strait: three
// bin/strait processes, each in its own network namespace with its own
// embedded etcd member, joined by a bridge the test process reaches them
// through. A seeded schedule of faults (kill -9, SIGSTOP, cuts between
// namespaces, a 1|2 split with the etcd leader in the minority, a slow link,
// a clock jump when the broker has --test-clock-file) runs under acks=all
// idempotent producers, a transactional producer and a read_committed group
// consumer; the checker then looks for lost, duplicated and reordered
// records, offsets that disagree, skipped records and aborted records a
// read_committed reader got. Figures go to work/results.md and .json
// (RELIABILITY.md quotes them).
//
// The tests run only when STRAIT_PARTITION_TEST=1 (run.sh, `make
// compat-partition`, `make partition-long`); with it, they fail when the
// machine cannot build namespaces (not root, no ip or tc).
package partition

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"math/rand/v2"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := writeResults(workDir()); err != nil {
		fmt.Fprintln(os.Stderr, "writing results:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestPartitionSchedule runs a seeded schedule of faults under the workload
// and checks the history. STRAIT_PARTITION_SEED fixes the seed (else the
// time), STRAIT_PARTITION_STEPS the number of faults (9: each kind once).
func TestPartitionSchedule(t *testing.T) {
	needNetns(t)
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("STRAIT_PARTITION_SEED"), 10, 64); err == nil {
		seed = s
	}
	steps := envInt("STRAIT_PARTITION_STEPS", 9)
	t.Logf("seed %d, %d faults (rerun: STRAIT_PARTITION_SEED=%d)", seed, steps, seed)
	c := startCluster(t, nil)
	clock := len(c.clockFiles) > 0
	if !clock {
		t.Log("bin/strait has no --test-clock-file: the clock-jump fault is left out of the schedule")
	}
	const topic, parts = "jepsen", int32(3)
	c.createTopic(topic, parts, nil)
	w := newWorkload(t, c, topic, parts, 2, true, true)
	res := &scheduleResult{Seed: seed, Steps: steps, Clock: clock}
	pass := false
	defer func() {
		results.mu.Lock()
		results.Schedule = res
		results.mu.Unlock()
		addRow(fmt.Sprintf("seeded schedule of %d faults (seed %d)", steps, seed), pass && !t.Failed())
	}()
	defer w.halt()
	begin := time.Now()
	w.start()
	// Baseline: the workload runs a few seconds with no fault, until every
	// partition has acknowledgements.
	c.Eventually(30*time.Second, "acknowledgements on every partition before the first fault", func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		got := map[int32]bool{}
		for _, a := range w.acked {
			got[a.part] = true
		}
		if len(got) < int(parts) || len(w.seen) == 0 {
			return fmt.Errorf("acknowledged partitions %v, group consumer partitions %d", got, len(w.seen))
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(seed, 2))
	nem := &nemesis{c: c, topic: topic, rng: rng}
	for i, kind := range schedule(seed, steps, clock) {
		f, heal := nem.inject(kind)
		res.Faults = append(res.Faults, f)
		hold := time.Duration(5000+rng.IntN(6000)) * time.Millisecond
		t.Logf("fault %d: %s on broker %d (other %d) for %v %s", i+1, kind, f.Target, f.Other, hold, f.Err)
		time.Sleep(hold) // the fault's duration, drawn from the seed
		if err := heal(); err != nil {
			t.Errorf("healing fault %d (%s): %v", i+1, kind, err)
		}
		f.Healed = time.Now()
		f.Recover = toMs(c.WaitHealthy(90*time.Second, topic, int(parts)))
	}
	w.halt()
	ends := w.sentinels()
	U := readAll(t, c, topic, ends, false)
	C := readAll(t, c, topic, ends, true)
	v := w.check(U, C)
	res.Duration = toMs(time.Since(begin))
	failovers(res.Faults, w)
	res.PerKind = perKind(res.Faults, w, v)
	res.Verdict = v
	t.Logf("acknowledged %d, failed %d, read back %d, consumed %d, txns %d/%d/%d, anomalies %v",
		v.Acknowledged, v.Failed, v.ReadBack, v.Consumed, v.TxnCommitted, v.TxnAborted, v.TxnUnknown, v.Counts)
	if v.Acknowledged == 0 || v.Consumed == 0 || v.TxnCommitted == 0 || v.TxnAborted == 0 {
		t.Errorf("the workload did too little to check anything: %d acknowledged, %d consumed, %d committed and %d aborted transactions",
			v.Acknowledged, v.Consumed, v.TxnCommitted, v.TxnAborted)
	}
	for _, a := range v.Anomalies {
		t.Errorf("%s: %s", a.Kind, a.What)
	}
	pass = v.ok()
}

// failovers fills each fault's failover times: from the fault to the first
// batch written by another broker for each partition its target led.
func failovers(faults []*faultRun, w *workload) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, f := range faults {
		end := time.Now()
		if i+1 < len(faults) {
			end = faults[i+1].Start
		}
		f.Failover = map[int32]ms{}
		for _, p := range f.Led {
			f.Failover[p] = -1
			for _, b := range w.writes {
				if b.part == p && b.broker != f.Target && b.at.After(f.Start) && b.at.Before(end) {
					f.Failover[p] = toMs(b.at.Sub(f.Start))
					break
				}
			}
		}
	}
}

// TestIsolatedLeaderStopsAcking cuts a partition's leader off from both
// other brokers (so from the etcd majority too) while a client that still
// reaches it keeps producing with acks=all. The isolated leader must
// acknowledge nothing once its registration lease (broker.session.timeout.ms)
// is gone, another broker must take over, and after the heal every
// acknowledged record must be there, once, in order. It runs with
// min.insync.replicas 2 and 1: with 1, only the etcd-held ISR keeps the old
// leader from shrinking the ISR to itself and acknowledging alone.
func TestIsolatedLeaderStopsAcking(t *testing.T) {
	needNetns(t)
	for _, minISR := range []int{2, 1} {
		t.Run(fmt.Sprintf("min.insync.replicas=%d", minISR), func(t *testing.T) {
			isolatedLeader(t, minISR)
		})
	}
}

func isolatedLeader(t *testing.T, minISR int) {
	c := startCluster(t, nil)
	const topic = "lease"
	c.createTopic(topic, 1, map[string]string{"min.insync.replicas": strconv.Itoa(minISR)})
	w := newWorkload(t, c, topic, 1, 1, false, false)
	w.acks1 = true
	res := &leaseResult{MinISR: minISR, Bound: toMs(3*time.Second + time.Second)}
	defer func() {
		res.Pass = !t.Failed()
		results.mu.Lock()
		results.Lease = append(results.Lease, res)
		results.mu.Unlock()
		addRow(fmt.Sprintf("isolated leader stops acknowledging, min.insync.replicas=%d", minISR), res.Pass)
	}()
	defer w.halt()
	w.start()
	c.Eventually(30*time.Second, "200 acknowledgements before the cut", func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.acked) < 200 {
			return fmt.Errorf("%d acknowledged", len(w.acked))
		}
		return nil
	})
	leaders, err := c.leaders(0, topic)
	if err != nil {
		t.Fatal(err)
	}
	L := leaders[0]
	res.Leader = L
	w.mu.Lock()
	res.AckedBefore = len(w.acked)
	w.mu.Unlock()
	cut := time.Now()
	if err := c.topo.isolate(int(L)); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %d cut from both peers at %s", L, cut.Format(time.StampMilli))
	// Watch until a new leader has acknowledged and three lease times have
	// passed (a leader acknowledging alone would show by then), or 30 s.
	newLeader := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, b := range w.writes {
			if b.at.After(cut) && b.broker != L {
				res.Failover, res.NewLeader = toMs(b.at.Sub(cut)), b.broker
				return true
			}
		}
		return false
	}
	c.Eventually(40*time.Second, "the watch after the cut", func() error {
		since := time.Since(cut)
		if (newLeader() && since >= 9*time.Second) || since >= 30*time.Second {
			return nil
		}
		return fmt.Errorf("%v since the cut", since)
	})
	if !newLeader() {
		res.Failover = -1
		t.Errorf("no broker but the isolated leader %d acknowledged within 30 s of the cut", L)
	}
	if err := c.topo.heal(); err != nil {
		t.Fatal(err)
	}
	res.Recover = toMs(c.WaitHealthy(90*time.Second, topic, 1))
	w.halt()
	ends := w.sentinels()
	U := readAll(t, c, topic, ends, false)
	v := w.check(U, U)
	res.Verdict = v
	w.mu.Lock()
	var late []time.Duration
	for _, b := range w.writes {
		if b.broker == L && b.at.After(cut) {
			res.LeaderAcksAfter++
			res.LastLeaderAck = toMs(b.at.Sub(cut))
			if b.at.Sub(cut) > time.Duration(res.Bound)*time.Millisecond {
				late = append(late, b.at.Sub(cut))
			}
		}
	}
	w.mu.Unlock()
	slices.Sort(late)
	t.Logf("old leader %d acknowledged %d batches after the cut (last %s); failover %s to broker %d; verdict %v",
		L, res.LeaderAcksAfter, res.LastLeaderAck, res.Failover, res.NewLeader, v.Counts)
	if len(late) > 0 {
		t.Errorf("isolated leader %d acknowledged %d batches later than %s after the cut (first %v, last %v)", L, len(late), res.Bound, late[0], late[len(late)-1])
	}
	for _, a := range v.Anomalies {
		t.Errorf("%s: %s", a.Kind, a.What)
	}
}
