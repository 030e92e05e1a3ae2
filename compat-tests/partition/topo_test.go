package partition

// The network: one namespace per broker, each with a veth pair whose other
// end sits on a bridge in the root namespace; the bridge has an address in
// the same /24, so the test process (franz-go clients) reaches every broker
// from the root namespace. Faults are routes inside the namespaces (a
// blackhole route to a peer drops everything the namespace sends it), a veth
// set down (the node cut from everyone, clients included) and a tbf qdisc
// (the only shaping this kernel has: netem is missing, so no delay or loss).
//
// Names carry the test process's pid ("strait-p-<pid>-n1", "sp<pid>n1"), so
// concurrent runs do not collide, and sweepStale removes leftovers of runs
// whose process is gone.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type topo struct {
	t      *testing.T
	runID  string
	subnet string // "10.213.K" (a /24)
	bridge string
	nodes  int

	mu   sync.Mutex
	cuts map[[2]int]bool // ns i drops what it sends to j
	down map[int]bool
	slow map[int]bool
}

func nsName(runID string, i int) string   { return fmt.Sprintf("strait-p-%s-n%d", runID, i) }
func vethName(runID string, i int) string { return fmt.Sprintf("sp%sn%d", runID, i) }

func (tp *topo) ns(i int) string   { return nsName(tp.runID, i) }
func (tp *topo) veth(i int) string { return vethName(tp.runID, i) }
func (tp *topo) ip(i int) string   { return fmt.Sprintf("%s.%d", tp.subnet, 10+i) }
func (tp *topo) hostIP() string    { return tp.subnet + ".1" }

// run runs a command and returns its combined output as the error text.
func run(args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		}
		return nil
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s: no answer within 20 s", strings.Join(args, " "))
	}
}

// needNetns fails (does not skip) when the suite was asked for but the
// machine cannot run it: not root, or no ip/tc.
func needNetns(t *testing.T) {
	t.Helper()
	if os.Getenv("STRAIT_PARTITION_TEST") != "1" {
		t.Skip("network-partition test: runs with STRAIT_PARTITION_TEST=1 (make compat-partition), as root")
	}
	if os.Geteuid() != 0 {
		t.Fatal("STRAIT_PARTITION_TEST=1 but not root: network namespaces need root")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("STRAIT_PARTITION_TEST=1 but %s is missing (iproute2)", tool)
		}
	}
}

// sweepStale deletes namespaces and links of earlier runs whose test process
// no longer exists. Bounded: one pass over the current lists.
func sweepStale() {
	alive := func(pid string) bool {
		n, err := strconv.Atoi(pid)
		if err != nil {
			return true // not ours to judge
		}
		_, err = os.Stat(fmt.Sprintf("/proc/%d", n))
		return err == nil
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			rest, ok := strings.CutPrefix(name, "strait-p-")
			if !ok {
				continue
			}
			pid, _, _ := strings.Cut(rest, "-")
			if !alive(pid) {
				run("ip", "netns", "del", name)
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			rest, ok := strings.CutPrefix(name, "sp")
			if !ok {
				continue
			}
			i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
			if i <= 0 || !ourLinkSuffix(rest[i:]) {
				continue
			}
			if !alive(rest[:i]) {
				run("ip", "link", "del", name)
			}
		}
	}
}

// ourLinkSuffix: "br" (the bridge) or "n<digits>" (a veth's root end).
func ourLinkSuffix(s string) bool {
	if s == "br" {
		return true
	}
	d, ok := strings.CutPrefix(s, "n")
	_, err := strconv.Atoi(d)
	return ok && err == nil
}

// newTopo builds n namespaces on one bridge; t.Cleanup tears it all down.
func newTopo(t *testing.T, n int) *topo {
	t.Helper()
	sweepStale()
	pid := os.Getpid()
	tp := &topo{t: t, runID: strconv.Itoa(pid), subnet: fmt.Sprintf("10.213.%d", 20+pid%200), nodes: n,
		cuts: map[[2]int]bool{}, down: map[int]bool{}, slow: map[int]bool{}}
	tp.bridge = "sp" + tp.runID + "br"
	t.Cleanup(tp.teardown)
	must := func(args ...string) {
		t.Helper()
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
	must("ip", "link", "add", tp.bridge, "type", "bridge")
	must("ip", "addr", "add", tp.hostIP()+"/24", "dev", tp.bridge)
	must("ip", "link", "set", tp.bridge, "up")
	for i := 1; i <= n; i++ {
		must("ip", "netns", "add", tp.ns(i))
		must("ip", "link", "add", tp.veth(i), "type", "veth", "peer", "name", tp.veth(i)+"x")
		must("ip", "link", "set", tp.veth(i)+"x", "netns", tp.ns(i))
		must("ip", "netns", "exec", tp.ns(i), "ip", "link", "set", tp.veth(i)+"x", "name", "eth0")
		must("ip", "netns", "exec", tp.ns(i), "ip", "addr", "add", tp.ip(i)+"/24", "dev", "eth0")
		must("ip", "netns", "exec", tp.ns(i), "ip", "link", "set", "eth0", "up")
		must("ip", "netns", "exec", tp.ns(i), "ip", "link", "set", "lo", "up")
		must("ip", "link", "set", tp.veth(i), "master", tp.bridge)
		must("ip", "link", "set", tp.veth(i), "up")
	}
	return tp
}

func (tp *topo) teardown() {
	for i := 1; i <= tp.nodes; i++ {
		run("ip", "link", "del", tp.veth(i))
		run("ip", "netns", "del", tp.ns(i))
	}
	run("ip", "link", "del", tp.bridge)
}

// cutOneWay makes namespace i drop every packet it sends to j (for TCP this
// breaks i<->j both ways, since i's replies and acks go too; a true one-way
// loss would need netfilter, absent here).
func (tp *topo) cutOneWay(i, j int) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.cuts[[2]int{i, j}] {
		return nil
	}
	if err := run("ip", "netns", "exec", tp.ns(i), "ip", "route", "add", "blackhole", tp.ip(j)+"/32"); err != nil {
		return err
	}
	tp.cuts[[2]int{i, j}] = true
	return nil
}

// cut separates i and j both ways.
func (tp *topo) cut(i, j int) error {
	if err := tp.cutOneWay(i, j); err != nil {
		return err
	}
	return tp.cutOneWay(j, i)
}

// isolate cuts node i from every other node (not from the clients, which
// reach it through the bridge address).
func (tp *topo) isolate(i int) error {
	for j := 1; j <= tp.nodes; j++ {
		if j != i {
			if err := tp.cut(i, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// linkDown takes node i's veth down: cut from everyone, clients included.
func (tp *topo) linkDown(i int) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if err := run("ip", "link", "set", tp.veth(i), "down"); err != nil {
		return err
	}
	tp.down[i] = true
	return nil
}

// slowLink puts a token bucket of rate (e.g. "512kbit") on both directions of
// node i's link.
func (tp *topo) slowLink(i int, rate string) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if err := run("tc", "qdisc", "replace", "dev", tp.veth(i), "root", "tbf", "rate", rate, "burst", "16kb", "latency", "300ms"); err != nil {
		return err
	}
	tp.slow[i] = true
	return run("ip", "netns", "exec", tp.ns(i), "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "16kb", "latency", "300ms")
}

// heal removes every cut, brings every link up and every shaper off.
func (tp *topo) heal() error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var errs []string
	for k := range tp.cuts {
		if err := run("ip", "netns", "exec", tp.ns(k[0]), "ip", "route", "del", "blackhole", tp.ip(k[1])+"/32"); err != nil {
			errs = append(errs, err.Error())
		}
		delete(tp.cuts, k)
	}
	for i := range tp.down {
		if err := run("ip", "link", "set", tp.veth(i), "up"); err != nil {
			errs = append(errs, err.Error())
		}
		delete(tp.down, i)
	}
	for i := range tp.slow {
		run("tc", "qdisc", "del", "dev", tp.veth(i), "root")
		run("ip", "netns", "exec", tp.ns(i), "tc", "qdisc", "del", "dev", "eth0", "root")
		delete(tp.slow, i)
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}
