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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/strait/strait/compat-tests/internal/brokerproc"
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

// cluster is three brokers whose embedded etcd members form one cluster.
type cluster struct {
	*brokerproc.Cluster
	t *testing.T
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
	bin := brokerproc.Binary(t)
	base := filepath.Join(workDir(), t.Name())
	os.RemoveAll(base)
	c := &cluster{Cluster: &brokerproc.Cluster{TB: t}, t: t}
	var initial, peerURLs []string
	for i := 1; i <= 3; i++ {
		n := &brokerproc.Node{
			Addr:    fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			EtcdURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			Dir:     filepath.Join(base, fmt.Sprintf("b%d", i)),
		}
		n.ID, n.LogPath = int32(i), filepath.Join(n.Dir, "broker.log")
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		peerURLs = append(peerURLs, peer)
		initial = append(initial, fmt.Sprintf("b%d=%s", i, peer))
		c.Nodes = append(c.Nodes, n)
	}
	for i, n := range c.Nodes {
		props := map[string]string{
			"node.id":                 fmt.Sprint(n.ID),
			"log.dirs":                filepath.Join(n.Dir, "data"),
			"etcd.name":               fmt.Sprintf("b%d", n.ID),
			"etcd.initial.cluster":    strings.Join(initial, ","),
			"etcd.listen.peer.urls":   peerURLs[i],
			"etcd.listen.client.urls": n.EtcdURL,
		}
		for k, v := range listenerSettings(t, n.Addr) {
			props[k] = v
		}
		for k, v := range settings {
			props[k] = v
		}
		n.Args = append([]string{bin}, brokerproc.OverrideArgs(props)...)
	}
	c.Start(60*time.Second, clientOpts()...)
	return c
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
	for _, n := range c.Nodes {
		if n.ID != prefer {
			order = append(order, n.ID)
		}
	}
	var lastErr error = fmt.Errorf("no live broker")
	for _, id := range order {
		if !c.Node(id).Live() {
			continue
		}
		m, err := c.Metadata(id, topics...)
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
	for _, nd := range c.Nodes {
		b, _ := os.ReadFile(nd.LogPath)
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

// moveEtcdLeader hands the etcd cluster's raft leadership to broker to's
// member (etcdctl move-leader) and waits until it leads.
func (c *cluster) moveEtcdLeader(to int32) {
	c.t.Helper()
	c.Eventually(15*time.Second, fmt.Sprintf("etcd leadership moved to broker %d's member", to), func() error {
		ids, leader := c.EtcdStatus()
		if leader == to {
			return nil
		}
		if leader < 0 || ids[to] == 0 {
			return fmt.Errorf("etcd leader %d, members %v", leader, ids)
		}
		ep := c.Node(leader).EtcdURL
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
