// Package cluster runs three bin/strait processes as one cluster on loopback
// (their embedded etcd members form one etcd cluster) and checks replication
// under faults: kill -9 and restart of each broker while an idempotent
// producer writes with acks=all (no acknowledged record lost, none doubled,
// order kept), a SIGSTOPped follower leaving and rejoining the ISR, and
// min.insync.replicas refusing writes. It measures failover and
// unavailability times and writes them to work/results.md and .json, which
// RELIABILITY.md quotes.
//
// The tests run only when STRAIT_CLUSTER_TEST=1 (compat-tests/cluster/run.sh,
// `make compat-cluster`): `go test ./...` skips them. The binary is
// $STRAIT_BIN, else bin/strait at the repository root; it must exist.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/strait/strait/internal/freeport"
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

// needCluster skips unless the suite was asked for.
func needCluster(t *testing.T) {
	t.Helper()
	if os.Getenv("STRAIT_CLUSTER_TEST") != "1" {
		t.Skip("three-process cluster test: runs with STRAIT_CLUSTER_TEST=1 (make compat-cluster)")
	}
}

func workDir() string {
	if d := os.Getenv("STRAIT_CLUSTER_WORK"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "strait-cluster-test")
}

func brokerBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STRAIT_BIN")
	if bin == "" {
		bin = "../../bin/strait"
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		t.Fatalf("broker binary %s missing: build it with `go build -o bin/strait ./cmd/strait` (run.sh does)", abs)
	}
	return abs
}

// freePort is a port of 127.0.0.1 free a moment ago, from below the
// ephemeral range (internal/freeport): the brokers keep theirs across
// restarts, and no client connection is handed one meanwhile.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// node is one broker process; it keeps its ports and directory across
// restarts.
type node struct {
	id         int32
	port       int
	peerPort   int
	clientPort int // the embedded etcd member's client URL, to ask who leads the etcd cluster
	dir        string
	logPath    string
	args       []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
	logFrom int64 // size of the log file when the current process started
}

func (n *node) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.port) }

// start launches the process, appending its stdout and stderr to logPath.
func (n *node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, _ := f.Stat()
	fmt.Fprintf(f, "=== test harness: starting broker %d at %s\n", n.id, time.Now().Format(time.RFC3339Nano))
	n.logFrom = st.Size()
	cmd := exec.Command(n.args[0], n.args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	n.cmd, n.exited, n.paused = cmd, exited, false
	return nil
}

// waitReady waits for this process's "strait ready" line.
func (n *node) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n.mu.Lock()
		from, exited := n.logFrom, n.exited
		n.mu.Unlock()
		b, _ := os.ReadFile(n.logPath)
		if int64(len(b)) > from && bytes.Contains(b[from:], []byte("strait ready")) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("broker %d exited before its ready line", n.id)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("broker %d not ready after %v", n.id, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// live reports whether the process runs and is not stopped.
func (n *node) live() bool {
	n.mu.Lock()
	p := n.paused
	n.mu.Unlock()
	return !p && n.running()
}

func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		n.cmd.Process.Signal(sig)
		switch sig {
		case syscall.SIGSTOP:
			n.paused = true
		case syscall.SIGCONT:
			n.paused = false
		}
	}
}

// kill9 sends SIGKILL and waits for the process to be gone.
func (n *node) kill9() {
	n.signal(syscall.SIGKILL)
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited != nil {
		<-exited
	}
}

// shutdown resumes a stopped process, sends SIGTERM and waits; SIGKILL after
// the timeout.
func (n *node) shutdown(timeout time.Duration) {
	if !n.running() {
		return
	}
	n.signal(syscall.SIGCONT)
	n.signal(syscall.SIGTERM)
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(timeout):
		n.kill9()
	}
}

func (n *node) tail(lines int) string {
	f, err := os.Open(n.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var all []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		all = append(all, sc.Text())
	}
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// cluster is three brokers whose embedded etcd members form one cluster.
type cluster struct {
	t     *testing.T
	nodes []*node
	admin map[int32]*kgo.Client // one client per broker, for requests to it alone
	// workload, when set, are the security options of the producer and
	// reader of the kill -9 test (another principal than the admin's).
	workload []kgo.Opt
}

// workloadOpts are the security options of the test's producer and reader.
func (c *cluster) workloadOpts() []kgo.Opt {
	if c.workload != nil {
		return append([]kgo.Opt(nil), c.workload...)
	}
	return clientOpts()
}

// settings are the --override keys every broker gets besides its own
// identity; tests may change some.
func defaultSettings() map[string]string {
	return map[string]string{
		"broker.session.timeout.ms":                "3000",
		"replica.lag.time.max.ms":                  "5000",
		"default.replication.factor":               "3",
		"min.insync.replicas":                      "2",
		"offsets.topic.replication.factor":         "3",
		"transaction.state.log.replication.factor": "3",
	}
}

// startCluster starts three brokers together (an etcd member waits for a
// quorum) and waits for each one's ready line.
func startCluster(t *testing.T, settings map[string]string) *cluster {
	t.Helper()
	bin := brokerBinary(t)
	base := filepath.Join(workDir(), t.Name())
	os.RemoveAll(base)
	c := &cluster{t: t, admin: map[int32]*kgo.Client{}}
	var initial []string
	for i := 1; i <= 3; i++ {
		n := &node{id: int32(i), port: freePort(t), peerPort: freePort(t), clientPort: freePort(t), dir: filepath.Join(base, fmt.Sprintf("b%d", i))}
		n.logPath = filepath.Join(n.dir, "broker.log")
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		initial = append(initial, fmt.Sprintf("b%d=http://127.0.0.1:%d", i, n.peerPort))
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		props := map[string]string{
			"node.id":                 fmt.Sprint(n.id),
			"log.dirs":                filepath.Join(n.dir, "data"),
			"etcd.name":               fmt.Sprintf("b%d", n.id),
			"etcd.initial.cluster":    strings.Join(initial, ","),
			"etcd.listen.peer.urls":   fmt.Sprintf("http://127.0.0.1:%d", n.peerPort),
			"etcd.listen.client.urls": fmt.Sprintf("http://127.0.0.1:%d", n.clientPort),
		}
		for k, v := range listenerSettings(t, n.addr()) {
			props[k] = v
		}
		for k, v := range settings {
			props[k] = v
		}
		n.args = []string{bin}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			n.args = append(n.args, "--override", k+"="+props[k])
		}
	}
	t.Cleanup(c.close)
	for _, n := range c.nodes {
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.nodes {
		if err := n.waitReady(60 * time.Second); err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append(clientOpts(), kgo.SeedBrokers(n.addr()), kgo.RetryTimeout(time.Second),
			kgo.DialTimeout(time.Second))...)
		if err != nil {
			t.Fatal(err)
		}
		c.admin[n.id] = cl
	}
	// Every broker lists all three once the registrations reached its cache.
	c.eventually(30*time.Second, "every broker lists three brokers", func() error {
		for _, n := range c.nodes {
			m, err := c.metadata(n.id)
			if err != nil {
				return err
			}
			if len(m.Brokers) != 3 {
				return fmt.Errorf("broker %d lists %d brokers", n.id, len(m.Brokers))
			}
		}
		return nil
	})
	return c
}

func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

func (c *cluster) close() {
	for _, cl := range c.admin {
		cl.Close()
	}
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.shutdown(15 * time.Second) }()
	}
	wg.Wait()
	if c.t.Failed() {
		for _, n := range c.nodes {
			c.t.Logf("---- last lines of broker %d's log (%s):\n%s", n.id, n.logPath, n.tail(60))
		}
	}
}

func (c *cluster) seeds() []string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.addr())
	}
	return s
}

// metadata asks broker id alone (no client cache in between).
func (c *cluster) metadata(id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := c.admin[id].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// partitionState is one partition as a broker's metadata answers it.
type partitionState struct {
	leader   int32
	epoch    int32
	replicas []int32
	isr      []int32
}

// anyMetadata asks the live brokers in turn, preferring prefer (0: none).
func (c *cluster) anyMetadata(prefer int32, topics ...string) (*kmsg.MetadataResponse, int32, error) {
	order := []int32{}
	if prefer != 0 {
		order = append(order, prefer)
	}
	for _, n := range c.nodes {
		if n.id != prefer {
			order = append(order, n.id)
		}
	}
	var lastErr error = fmt.Errorf("no live broker")
	for _, id := range order {
		if !c.node(id).live() {
			continue
		}
		m, err := c.metadata(id, topics...)
		if err == nil {
			return m, id, nil
		}
		lastErr = err
	}
	return nil, 0, lastErr
}

// partitions returns topic's partitions as seen by a live broker (the
// partition's leader when prefer is that leader).
func (c *cluster) partitions(prefer int32, topic string) (map[int32]partitionState, int32, error) {
	m, via, err := c.anyMetadata(prefer, topic)
	if err != nil {
		return nil, 0, err
	}
	out := map[int32]partitionState{}
	for _, tp := range m.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		if tp.ErrorCode != 0 {
			return nil, via, kerr.ErrorForCode(tp.ErrorCode)
		}
		for _, p := range tp.Partitions {
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			out[p.Partition] = partitionState{leader: p.Leader, epoch: p.LeaderEpoch, replicas: slices.Clone(p.Replicas), isr: isr}
		}
	}
	return out, via, nil
}

// controller is the controller id a live broker reports.
func (c *cluster) controller() int32 {
	m, _, err := c.anyMetadata(0)
	if err != nil {
		return -1
	}
	return m.ControllerID
}

// countLogLines counts the brokers' log lines containing text logged at or
// after since.
func (c *cluster) countLogLines(text string, since time.Time) int {
	n := 0
	for _, nd := range c.nodes {
		b, _ := os.ReadFile(nd.logPath)
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, text) || !strings.HasPrefix(line, "time=") {
				continue
			}
			ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && !at.Before(since.Truncate(time.Millisecond)) {
				n++
			}
		}
	}
	return n
}

// etcdStatus asks each live member for its member id and the raft leader's:
// it returns node -> member id and the node that leads (-1 if none).
func (c *cluster) etcdStatus() (map[int32]uint64, int32) {
	ids := map[int32]uint64{}
	leader := int32(-1)
	for _, n := range c.nodes {
		if !n.live() {
			continue
		}
		ep := fmt.Sprintf("http://127.0.0.1:%d", n.clientPort)
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		cli.Close()
		if err != nil {
			continue
		}
		ids[n.id] = st.Header.MemberId
		if st.Leader != 0 && st.Leader == st.Header.MemberId {
			leader = n.id
		}
	}
	return ids, leader
}

// etcdLeader is the broker whose embedded etcd member leads the etcd
// cluster (raft leader), -1 if no live member says it leads.
func (c *cluster) etcdLeader() int32 {
	_, l := c.etcdStatus()
	return l
}

// moveEtcdLeader hands the etcd cluster's raft leadership to broker to's
// member (etcdctl move-leader) and waits until it leads.
func (c *cluster) moveEtcdLeader(to int32) {
	c.t.Helper()
	c.eventually(15*time.Second, fmt.Sprintf("etcd leadership moved to broker %d's member", to), func() error {
		ids, leader := c.etcdStatus()
		if leader == to {
			return nil
		}
		if leader < 0 || ids[to] == 0 {
			return fmt.Errorf("etcd leader %d, members %v", leader, ids)
		}
		ep := fmt.Sprintf("http://127.0.0.1:%d", c.node(leader).clientPort)
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cli.MoveLeader(ctx, ids[to]); err != nil {
			return fmt.Errorf("move-leader from %d to %d: %w", leader, to, err)
		}
		return fmt.Errorf("moved; checking")
	})
}

// eventually polls f every 100 ms until it returns nil, failing the test
// with the last error after timeout. It returns the time it took.
func (c *cluster) eventually(timeout time.Duration, what string, f func() error) time.Duration {
	c.t.Helper()
	start := time.Now()
	var err error
	for {
		if err = f(); err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopic creates topic with partitions x rf (or an explicit assignment)
// and the given configs, then waits until every live broker lists every
// partition with a leader and a full ISR.
func (c *cluster) createTopic(topic string, partitions int32, rf int16, assignment [][]int32, configs map[string]string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = partitions, rf
	if assignment != nil {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for i, replicas := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
	}
	for k, v := range configs {
		cf := kmsg.NewCreateTopicsRequestTopicConfig()
		cf.Name, cf.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cf)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.admin[1])
	if err != nil {
		c.t.Fatalf("creating %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if resp.Topics[0].ErrorMessage != nil {
			msg = *resp.Topics[0].ErrorMessage
		}
		c.t.Fatalf("creating %s: %v %s", topic, err, msg)
	}
	want := int(partitions)
	if assignment != nil {
		want = len(assignment)
	}
	c.eventually(30*time.Second, "topic "+topic+" fully replicated on every broker", func() error {
		for _, n := range c.nodes {
			if !n.live() {
				continue
			}
			m, err := c.metadata(n.id, topic)
			if err != nil {
				return err
			}
			got := 0
			for _, tp := range m.Topics {
				if tp.ErrorCode != 0 {
					return fmt.Errorf("broker %d: %v", n.id, kerr.ErrorForCode(tp.ErrorCode))
				}
				for _, p := range tp.Partitions {
					if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
						return fmt.Errorf("broker %d: partition %d leader %d replicas %v isr %v", n.id, p.Partition, p.Leader, p.Replicas, p.ISR)
					}
					got++
				}
			}
			if got != want {
				return fmt.Errorf("broker %d lists %d of %d partitions", n.id, got, want)
			}
		}
		return nil
	})
}
