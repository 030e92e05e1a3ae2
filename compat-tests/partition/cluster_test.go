package partition

// Three bin/strait processes, one per namespace, each with its own embedded
// etcd member (the three form one etcd cluster), as in compat-tests/cluster
// but on the namespaces' addresses instead of loopback ports. The process
// handling is compat-tests/internal/brokerproc, shared with it.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/strait/strait/compat-tests/internal/brokerproc"
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

// clockSupported says whether the broker has the test-only clock offset flag
// (--test-clock-file); the clock-jump fault runs only then.
func clockSupported(bin string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return bytes.Contains(out, []byte("test-clock-file"))
}

type node struct {
	brokerproc.Proc
	ip        string
	dir       string
	clockFile string // "" when the broker lacks --test-clock-file
}

func (n *node) addr() string { return fmt.Sprintf("%s:%d", n.ip, kafkaPort) }

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
	bin := brokerproc.Binary(t)
	tp := newTopo(t, 3)
	base := filepath.Join(workDir(), t.Name())
	os.RemoveAll(base)
	c := &cluster{t: t, topo: tp, admin: map[int32]*kgo.Client{}}
	clock := clockSupported(bin)
	var initial []string
	for i := 1; i <= 3; i++ {
		n := &node{ip: tp.ip(i), dir: filepath.Join(base, fmt.Sprintf("b%d", i))}
		n.ID, n.LogPath = int32(i), filepath.Join(n.dir, "broker.log")
		// A SIGKILLed broker normally goes at once; the bound keeps a
		// wedged one from hanging the schedule.
		n.KillWait = 10 * time.Second
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		initial = append(initial, fmt.Sprintf("b%d=http://%s:%d", i, n.ip, peerPort))
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		props := map[string]string{
			"node.id":                 fmt.Sprint(n.ID),
			"log.dirs":                filepath.Join(n.dir, "data"),
			"listeners":               "PLAINTEXT://" + n.addr(),
			"etcd.name":               fmt.Sprintf("b%d", n.ID),
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
		// ip netns exec execs the broker after setns: the pid signalled is
		// the broker's.
		n.Args = []string{"ip", "netns", "exec", tp.ns(int(n.ID)), bin}
		if clock {
			n.clockFile = filepath.Join(n.dir, "clock")
			os.WriteFile(n.clockFile, []byte("0s\n"), 0o644)
			n.Args = append(n.Args, "--test-clock-file="+n.clockFile)
		}
		n.Args = append(n.Args, brokerproc.OverrideArgs(props)...)
	}
	// Registered after newTopo's cleanup, so it runs first: brokers stop
	// before their namespaces go.
	t.Cleanup(c.close)
	brokerproc.StartAll(t, c.procs(), 60*time.Second)
	for _, n := range c.nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.RetryTimeout(time.Second), kgo.DialTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		c.admin[n.ID] = cl
	}
	c.eventually(30*time.Second, "every broker lists three brokers", func() error {
		for _, n := range c.nodes {
			m, err := c.metadata(n.ID)
			if err != nil {
				return err
			}
			if len(m.Brokers) != 3 {
				return fmt.Errorf("broker %d lists %d brokers", n.ID, len(m.Brokers))
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
	brokerproc.StopAll(c.t, c.procs(), 15*time.Second)
}

func (c *cluster) procs() []*brokerproc.Proc {
	procs := make([]*brokerproc.Proc, len(c.nodes))
	for i, n := range c.nodes {
		procs[i] = &n.Proc
	}
	return procs
}

func (c *cluster) seeds() []string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.addr())
	}
	return s
}

func (c *cluster) metadata(id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	return brokerproc.Metadata(c.admin[id], topics...)
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
			return n.ID
		}
	}
	return -1
}

func (c *cluster) eventually(timeout time.Duration, what string, f func() error) time.Duration {
	c.t.Helper()
	return brokerproc.Eventually(c.t, timeout, what, f)
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
			m, err := c.metadata(n.ID, topic)
			if err != nil {
				return err
			}
			got := 0
			for _, tp := range m.Topics {
				if tp.ErrorCode != 0 {
					return fmt.Errorf("broker %d: %v", n.ID, kerr.ErrorForCode(tp.ErrorCode))
				}
				for _, p := range tp.Partitions {
					if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
						return fmt.Errorf("broker %d: partition %d leader %d isr %v", n.ID, p.Partition, p.Leader, p.ISR)
					}
					got++
				}
			}
			if got != int(partitions) {
				return fmt.Errorf("broker %d lists %d of %d partitions", n.ID, got, partitions)
			}
		}
		return nil
	})
}
