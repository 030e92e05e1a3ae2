package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestKill9EachBrokerWhileProducing: an idempotent acks=all producer writes a
// numbered sequence to each of three RF=3 partitions while each broker in
// turn is killed with SIGKILL, left down for a few seconds (its registration
// lease expires and its partitions get new leaders), restarted on the same
// directories and waited for until it is back in every partition's ISR.
// A plain partition leader goes first, then the broker whose etcd member
// leads the etcd cluster (moved there), the controller last. Afterwards a fresh
// consumer reads every partition: every acknowledged record must be there,
// none twice, each partition's sequence increasing.
func TestKill9EachBrokerWhileProducing(t *testing.T) {
	needCluster(t)
	const name = "produce acks=all and read back across kill -9 and restart of each broker"
	defer func() { addRow(name, !t.Failed()) }()

	c := startCluster(t, defaultSettings())
	res := &failoverResult{Topic: killTopic, Partitions: killPartitions, LongestGap: map[int32]ms{}}
	defer func() {
		results.mu.Lock()
		results.Failover = res
		results.mu.Unlock()
	}()
	c.CreateTopic(killTopic, killPartitions, 3, nil, map[string]string{"min.insync.replicas": "2"})
	killEachBroker(t, c, res)
}

// The topic the kill -9 tests write, and its partitions (RF 3).
const (
	killTopic      = "reliability"
	killPartitions = 3
)

// killEachBroker is the kill -9 test's body on a started cluster whose
// killTopic exists: its producer and reader are c's workload clients.
func killEachBroker(t *testing.T, c *cluster, res *failoverResult) {
	const topic, parts = killTopic, killPartitions
	l := startLoad(t, c, topic, parts)
	warm := time.Now()
	c.Eventually(20*time.Second, "first acknowledgements on every partition", func() error { return l.ackedSince(warm) })
	time.Sleep(2 * time.Second)

	killed := map[int32]bool{}
	for round := 0; round < 3; round++ {
		state, _, err := c.partitions(0, topic)
		if err != nil {
			t.Fatalf("metadata before kill %d: %v", round+1, err)
		}
		// Kill 1: a partition leader that is neither the controller nor
		// the etcd leader; kill 2: the etcd leader (moved to that broker's
		// member); kill 3: the controller (the etcd leadership moved away
		// from it), so that the three show their costs apart.
		ctrl := c.controller()
		victim := pickVictim(state, ctrl, c.EtcdLeader(), killed)
		switch round {
		case 1:
			c.moveEtcdLeader(victim)
		case 2:
			if c.EtcdLeader() == victim {
				for id := int32(1); id <= 3; id++ {
					if id != victim {
						c.moveEtcdLeader(id)
						break
					}
				}
			}
		}
		if state, _, err = c.partitions(0, topic); err != nil {
			t.Fatalf("metadata before kill %d: %v", round+1, err)
		}
		ctrl, raftLeader := c.controller(), c.EtcdLeader()
		killed[victim] = true
		var led []int32
		for p, s := range state {
			if s.leader == victim {
				led = append(led, p)
			}
		}
		slices.Sort(led)
		r := killRound{Broker: victim, WasController: victim == ctrl, WasEtcdLeader: victim == raftLeader, Led: led,
			Failover: map[int32]ms{}, NewLeader: map[int32]int{}, GapAround: map[int32]ms{}}
		t.Logf("kill %d: SIGKILL broker %d (controller %d, etcd leader %d; it leads %v; partitions %v)", round+1, victim, ctrl, raftLeader, led, state)

		n := c.Node(victim)
		killedAt := time.Now()
		n.Kill9()
		// Its partitions move once its lease (broker.session.timeout.ms)
		// expires; wait for a write by a new leader on each.
		c.Eventually(30*time.Second, fmt.Sprintf("partitions %v written by a new leader after broker %d was killed", led, victim), func() error {
			for _, p := range led {
				at, node := l.firstWriteAfter(p, killedAt, victim)
				if at.IsZero() {
					return fmt.Errorf("partition %d not written since the kill", p)
				}
				r.Failover[p] = toMs(at.Sub(killedAt))
				r.NewLeader[p] = int(node)
			}
			return nil
		})
		// And every partition (those it only followed stall until it
		// leaves their ISR) takes writes again.
		c.Eventually(30*time.Second, "every partition acknowledging after the kill", func() error { return l.ackedSince(killedAt) })
		recovered := time.Now()
		for p := int32(0); p < parts; p++ {
			r.GapAround[p] = toMs(l.gapAround(p, killedAt, recovered))
		}
		if d := time.Until(killedAt.Add(5 * time.Second)); d > 0 {
			time.Sleep(d) // down for at least 5 s
		}

		restartAt := time.Now()
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		if err := n.WaitReady(60 * time.Second); err != nil {
			t.Fatal(err)
		}
		r.Ready = toMs(time.Since(restartAt))
		c.Eventually(60*time.Second, fmt.Sprintf("broker %d back in every ISR of %s", victim, topic), func() error {
			st, via, err := c.partitions(0, topic)
			if err != nil {
				return err
			}
			for p := int32(0); p < parts; p++ {
				if !slices.Contains(st[p].isr, victim) {
					return fmt.Errorf("partition %d ISR %v (as broker %d sees it)", p, st[p].isr, via)
				}
			}
			return nil
		})
		r.RejoinISR = toMs(time.Since(restartAt))
		t.Logf("kill %d: broker %d failover %v (new leaders %v), gaps %v, ready after %s, back in every ISR after %s",
			round+1, victim, r.Failover, r.NewLeader, r.GapAround, r.Ready, r.RejoinISR)
		res.Rounds = append(res.Rounds, r)
		time.Sleep(2 * time.Second)
	}

	l.finish()
	res.Duration = toMs(l.stopped.Sub(l.start))
	for p := int32(0); p < parts; p++ {
		g, _ := l.longestGap(p)
		res.LongestGap[p] = toMs(g)
	}
	v := l.verify(c)
	res.Verdict = v
	t.Logf("acknowledged %d, failed %d, read %d, lost %d, duplicates %d, out of order %d, failed but present %d; longest gaps %v",
		v.Acknowledged, v.Failed, v.Read, v.Lost, v.Duplicates, v.OutOfOrder, v.FailedButFound, res.LongestGap)
	checkVerdict(t, v)

	// The three replicas of each partition hold the same batches.
	var counts map[int32]int
	var cmpErr error
	c.Eventually(20*time.Second, "replicas hold the same batches", func() error {
		counts, cmpErr = compareReplicas(c, topic, parts)
		return cmpErr
	})
	res.ReplicaBatches = counts
	res.ReplicasIdentical = cmpErr == nil
	t.Logf("replica logs identical on the three brokers: batches per partition %v", counts)
}

// checkVerdict fails on a lost, doubled or reordered record, and on records
// an unlimited-retry producer was told failed.
func checkVerdict(t *testing.T, v verdict) {
	t.Helper()
	if v.Acknowledged == 0 {
		t.Errorf("nothing acknowledged")
	}
	if v.Lost > 0 {
		t.Errorf("%d acknowledged records lost, e.g. %v", v.Lost, v.LostExamples)
	}
	if v.Duplicates > 0 {
		t.Errorf("%d records appear twice, e.g. %v", v.Duplicates, v.DupExamples)
	}
	if v.OutOfOrder > 0 {
		t.Errorf("%d records out of order, e.g. %v", v.OutOfOrder, v.OrderExamples)
	}
	if v.Failed > 0 {
		t.Errorf("%d records failed despite unlimited retries: %v", v.Failed, v.FailedErrors)
	}
}

// pickVictim chooses the next broker to kill among those not killed yet:
// first a partition leader that neither is the controller nor leads the etcd
// cluster, then the etcd leader, the controller last.
func pickVictim(state map[int32]partitionState, ctrl, raftLeader int32, killed map[int32]bool) int32 {
	leads := map[int32]bool{}
	for _, s := range state {
		leads[s.leader] = true
	}
	var left []int32
	for id := int32(1); id <= 3; id++ {
		if !killed[id] {
			left = append(left, id)
		}
	}
	prefs := []func(id int32) bool{
		func(id int32) bool { return leads[id] && id != ctrl && id != raftLeader },
		func(id int32) bool { return id != ctrl && id != raftLeader },
		func(id int32) bool { return id != ctrl },
	}
	for _, ok := range prefs {
		for _, id := range left {
			if ok(id) {
				return id
			}
		}
	}
	return left[0]
}
