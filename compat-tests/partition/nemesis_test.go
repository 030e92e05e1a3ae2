package partition

// The nemesis: the faults a schedule draws from, each with its heal. Every
// cut is a pair of per-namespace routes, so a broker and its etcd member are
// always cut together (they are one process); cutting only the etcd peer
// port would need netfilter, which this machine lacks.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

const (
	fKill9        = "kill -9 + restart"
	fPause        = "SIGSTOP + SIGCONT"
	fIsolate      = "broker cut from both peers"
	fIsolateLead  = "leader cut from its followers"
	fSplitEtcd    = "etcd leader in the minority (1|2)"
	fBridge       = "leader cut from one follower"
	fOneWay       = "one-way: leader's packets to peers dropped"
	fLinkDown     = "link down (clients cut too)"
	fSlow         = "slow link (tbf 256kbit)"
	fClock        = "clock jump"
	baselineLabel = "none (baseline)"
)

func faultKinds(clock bool) []string {
	k := []string{fKill9, fPause, fIsolate, fIsolateLead, fSplitEtcd, fBridge, fOneWay, fLinkDown, fSlow}
	if clock {
		k = append(k, fClock)
	}
	return k
}

// schedule is a seeded list of faults: every kind once in a shuffled order,
// then random kinds up to steps.
func schedule(seed uint64, steps int, clock bool) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	kinds := faultKinds(clock)
	out := make([]string, 0, steps)
	perm := rng.Perm(len(kinds))
	for _, i := range perm {
		if len(out) < steps {
			out = append(out, kinds[i])
		}
	}
	for len(out) < steps {
		out = append(out, kinds[rng.IntN(len(kinds))])
	}
	return out
}

type faultRun struct {
	Kind     string       `json:"kind"`
	Target   int32        `json:"target"`
	Other    int32        `json:"other,omitempty"`
	Detail   string       `json:"detail,omitempty"`
	Start    time.Time    `json:"start"`
	Healed   time.Time    `json:"healed"`
	Led      []int32      `json:"target_led"`
	Failover map[int32]ms `json:"failover_ms,omitempty"` // partition -> fault to first ack written by another broker
	Recover  ms           `json:"heal_to_full_isr_ms"`
	Err      string       `json:"error,omitempty"`
}

type nemesis struct {
	c     *cluster
	topic string
	rng   *rand.Rand
}

// inject applies kind and returns the run record and its heal.
func (n *nemesis) inject(kind string) (*faultRun, func() error) {
	c, tp := n.c, n.c.topo
	f := &faultRun{Kind: kind}
	leaders, _ := c.leaders(0, n.topic)
	leaderOf0 := leaders[0]
	if leaderOf0 <= 0 {
		leaderOf0 = int32(1 + n.rng.IntN(3))
	}
	pick := func() int32 { return int32(1 + n.rng.IntN(3)) }
	other := func(not int32) int32 {
		for {
			if o := pick(); o != not {
				return o
			}
		}
	}
	var err error
	heal := tp.heal
	switch kind {
	case fKill9:
		f.Target = pick()
		nd := c.Node(f.Target)
		nd.Kill9()
		heal = func() error {
			if err := nd.Start(); err != nil {
				return err
			}
			return nd.WaitReady(60 * time.Second)
		}
	case fPause:
		f.Target = pick()
		nd := c.Node(f.Target)
		nd.Signal(syscall.SIGSTOP)
		heal = func() error { nd.Signal(syscall.SIGCONT); return nil }
	case fIsolate:
		f.Target = pick()
		err = tp.isolate(int(f.Target))
	case fIsolateLead:
		f.Target = leaderOf0
		err = tp.isolate(int(f.Target))
	case fSplitEtcd:
		f.Target = c.EtcdLeader()
		if f.Target < 0 {
			f.Target = pick()
			f.Detail = "no etcd leader found; random minority"
		}
		err = tp.isolate(int(f.Target))
	case fBridge:
		f.Target, f.Other = leaderOf0, other(leaderOf0)
		err = tp.cut(int(f.Target), int(f.Other))
	case fOneWay:
		f.Target = leaderOf0
		for j := int32(1); j <= 3 && err == nil; j++ {
			if j != f.Target {
				err = tp.cutOneWay(int(f.Target), int(j))
			}
		}
	case fLinkDown:
		f.Target = pick()
		err = tp.linkDown(int(f.Target))
	case fSlow:
		f.Target = leaderOf0
		err = tp.slowLink(int(f.Target), "256kbit")
	case fClock:
		f.Target = pick()
		off := []string{"+90s", "-30s", "+10m", "-5s"}[n.rng.IntN(4)]
		f.Detail = off
		file := c.clockFiles[f.Target]
		err = writeClock(file, off)
		heal = func() error { return writeClock(file, "0s") }
	default:
		err = fmt.Errorf("unknown fault %q", kind)
	}
	f.Start = time.Now()
	for p, l := range leaders {
		if l == f.Target {
			f.Led = append(f.Led, p)
		}
	}
	if err != nil {
		f.Err = err.Error()
	}
	return f, heal
}

// writeClock replaces the broker's clock file in one step (a rename), so that
// its 100 ms poll never reads half a value.
func writeClock(path, offset string) error {
	if err := os.WriteFile(path+".tmp", []byte(offset+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
