package partition

// Three bin/strait processes, one per namespace, each with its own embedded
// etcd member (the three form one etcd cluster), as in compat-tests/cluster
// but on the namespaces' addresses instead of loopback ports. The process
// handling is a trimmed copy of compat-tests/cluster's (that package is all
// _test files, so it cannot be imported).

import (
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
)

const (
	kafkaPort = 9092
	peerPort  = 2380
	etcdPort  = 2379
)

func workDir() string {
	if d := os.Getenv("STRAIT_PARTITION_WORK"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "strait-partition-test")
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

// clockSupported says whether the broker has the test-only clock offset flag
// (--test-clock-file); the clock-jump fault runs only then.
func clockSupported(bin string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return bytes.Contains(out, []byte("test-clock-file"))
}

type node struct {
	id        int32
	ip        string
	dir       string
	logPath   string
	clockFile string // "" when the broker lacks --test-clock-file
	args      []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
	logFrom int64
}

func (n *node) addr() string { return fmt.Sprintf("%s:%d", n.ip, kafkaPort) }

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
	// ip netns exec execs the broker after setns: the pid is the broker's.
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

func (n *node) kill9() {
	n.signal(syscall.SIGKILL)
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited != nil {
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	}
}

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
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

type cluster struct {
	t     *testing.T
	topo  *topo
	nodes []*node
	admin map[int32]*kgo.Client
}

func defaultSettings() map[string]string {
	return map[string]string{
		"broker.session.timeout.ms":                "3000",
		"replica.lag.time.max.ms":                  "5000",
		"default.replication.factor":               "3",
		"min.insync.replicas":                      "2",
		"offsets.topic.replication.factor":         "3",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"transaction.max.timeout.ms":               "60000",
		"group.initial.rebalance.delay.ms":         "0",
	}
}

// startCluster builds the namespaces and starts one broker in each.
func startCluster(t *testing.T, settings map[string]string) *cluster {
	t.Helper()
	bin := brokerBinary(t)
	tp := newTopo(t, 3)
	base := filepath.Join(workDir(), t.Name())
	os.RemoveAll(base)
	c := &cluster{t: t, topo: tp, admin: map[int32]*kgo.Client{}}
	clock := clockSupported(bin)
	var initial []string
	for i := 1; i <= 3; i++ {
		n := &node{id: int32(i), ip: tp.ip(i), dir: filepath.Join(base, fmt.Sprintf("b%d", i))}
		n.logPath = filepath.Join(n.dir, "broker.log")
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		initial = append(initial, fmt.Sprintf("b%d=http://%s:%d", i, n.ip, peerPort))
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		props := map[string]string{
			"node.id":                 fmt.Sprint(n.id),
			"log.dirs":                filepath.Join(n.dir, "data"),
			"listeners":               "PLAINTEXT://" + n.addr(),
			"etcd.name":               fmt.Sprintf("b%d", n.id),
			"etcd.initial.cluster":    strings.Join(initial, ","),
			"etcd.listen.peer.urls":   fmt.Sprintf("http://%s:%d", n.ip, peerPort),
			"etcd.listen.client.urls": fmt.Sprintf("http://%s:%d", n.ip, etcdPort),
		}
		for k, v := range defaultSettings() {
			props[k] = v
		}
		for k, v := range settings {
			props[k] = v
		}
		n.args = []string{"ip", "netns", "exec", tp.ns(int(n.id)), bin}
		if clock {
			n.clockFile = filepath.Join(n.dir, "clock")
			os.WriteFile(n.clockFile, []byte("0s\n"), 0o644)
			n.args = append(n.args, "--test-clock-file="+n.clockFile)
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			n.args = append(n.args, "--override", k+"="+props[k])
		}
	}
	// Registered after newTopo's cleanup, so it runs first: brokers stop
	// before their namespaces go.
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
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.RetryTimeout(time.Second), kgo.DialTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		c.admin[n.id] = cl
	}
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

// leaders maps partition -> leader as broker `via` answers (0: any that
// answers).
func (c *cluster) leaders(via int32, topic string) (map[int32]int32, error) {
	order := []int32{1, 2, 3}
	if via != 0 {
		order = []int32{via}
	}
	var lastErr error
	for _, id := range order {
		m, err := c.metadata(id, topic)
		if err != nil {
			lastErr = err
			continue
		}
		out := map[int32]int32{}
		for _, tp := range m.Topics {
			if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
				return nil, err
			}
			for _, p := range tp.Partitions {
				out[p.Partition] = p.Leader
			}
		}
		return out, nil
	}
	return nil, lastErr
}

// etcdLeader is the broker whose etcd member leads, -1 if none says so.
func (c *cluster) etcdLeader() int32 {
	for _, n := range c.nodes {
		ep := fmt.Sprintf("http://%s:%d", n.ip, etcdPort)
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		cli.Close()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return n.id
		}
	}
	return -1
}

func (c *cluster) eventually(timeout time.Duration, what string, f func() error) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopic creates topic and waits for a leader and full ISR everywhere.
func (c *cluster) createTopic(topic string, partitions int32, configs map[string]string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 3
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
		c.t.Fatalf("creating %s: %v", topic, err)
	}
	c.waitHealthy(30*time.Second, topic, partitions)
}

// waitHealthy waits until every broker lists every partition of topic with a
// leader and a full ISR.
func (c *cluster) waitHealthy(timeout time.Duration, topic string, partitions int32) time.Duration {
	c.t.Helper()
	return c.eventually(timeout, "topic "+topic+" fully replicated on every broker", func() error {
		for _, n := range c.nodes {
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
						return fmt.Errorf("broker %d: partition %d leader %d isr %v", n.id, p.Partition, p.Leader, p.ISR)
					}
					got++
				}
			}
			if got != int(partitions) {
				return fmt.Errorf("broker %d lists %d of %d partitions", n.id, got, partitions)
			}
		}
		return nil
	})
}
