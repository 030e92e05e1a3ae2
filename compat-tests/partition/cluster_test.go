package partition

// Three bin/strait processes, one per namespace, each with its own embedded
// etcd member (the three form one etcd cluster), as in compat-tests/cluster
// but on the namespaces' addresses instead of loopback ports. The process
// handling and the cluster type are compat-tests/internal/brokerproc,
// shared with it.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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

// cluster is the three brokers, one per namespace, and the namespaces.
type cluster struct {
	*brokerproc.Cluster
	t    *testing.T
	topo *topo
	// clockFiles holds each broker's --test-clock-file; empty when the
	// broker lacks the flag.
	clockFiles map[int32]string
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
	c := &cluster{Cluster: &brokerproc.Cluster{TB: t}, t: t, topo: tp, clockFiles: map[int32]string{}}
	clock := clockSupported(bin)
	var initial []string
	for i := 1; i <= 3; i++ {
		ip := tp.ip(i)
		n := &brokerproc.Node{
			Addr:    fmt.Sprintf("%s:%d", ip, kafkaPort),
			EtcdURL: fmt.Sprintf("http://%s:%d", ip, etcdPort),
			Dir:     filepath.Join(base, fmt.Sprintf("b%d", i)),
		}
		n.ID, n.LogPath = int32(i), filepath.Join(n.Dir, "broker.log")
		// A SIGKILLed broker normally goes at once; the bound keeps a
		// wedged one from hanging the schedule.
		n.KillWait = 10 * time.Second
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		initial = append(initial, fmt.Sprintf("b%d=http://%s:%d", i, ip, peerPort))
		c.Nodes = append(c.Nodes, n)
	}
	for i, n := range c.Nodes {
		ip := tp.ip(i + 1)
		props := map[string]string{
			"node.id":                 fmt.Sprint(n.ID),
			"log.dirs":                filepath.Join(n.Dir, "data"),
			"listeners":               "PLAINTEXT://" + n.Addr,
			"etcd.name":               fmt.Sprintf("b%d", n.ID),
			"etcd.initial.cluster":    strings.Join(initial, ","),
			"etcd.listen.peer.urls":   fmt.Sprintf("http://%s:%d", ip, peerPort),
			"etcd.listen.client.urls": n.EtcdURL,
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
			f := filepath.Join(n.Dir, "clock")
			os.WriteFile(f, []byte("0s\n"), 0o644)
			c.clockFiles[n.ID] = f
			n.Args = append(n.Args, "--test-clock-file="+f)
		}
		n.Args = append(n.Args, brokerproc.OverrideArgs(props)...)
	}
	// Start registers the cluster's cleanup after newTopo's, so it runs
	// first: brokers stop before their namespaces go.
	c.Start(60 * time.Second)
	return c
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
		m, err := c.Metadata(id, topic)
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

// createTopic creates topic at RF 3 and waits for a leader and full ISR
// everywhere.
func (c *cluster) createTopic(topic string, partitions int32, configs map[string]string) {
	c.t.Helper()
	c.CreateTopic(topic, partitions, 3, nil, configs)
}
