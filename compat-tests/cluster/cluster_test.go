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

// node is one broker process and its ports; it keeps them and its directory
// across restarts.
type node struct {
	brokerproc.Proc
	port       int
	peerPort   int
	clientPort int // the embedded etcd member's client URL, to ask who leads the etcd cluster
	dir        string
}

func (n *node) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.port) }

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
	bin := brokerproc.Binary(t)
	base := filepath.Join(workDir(), t.Name())
	os.RemoveAll(base)
	c := &cluster{t: t, admin: map[int32]*kgo.Client{}}
	var initial []string
	for i := 1; i <= 3; i++ {
		n := &node{port: freePort(t), peerPort: freePort(t), clientPort: freePort(t), dir: filepath.Join(base, fmt.Sprintf("b%d", i))}
		n.ID, n.LogPath = int32(i), filepath.Join(n.dir, "broker.log")
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		initial = append(initial, fmt.Sprintf("b%d=http://127.0.0.1:%d", i, n.peerPort))
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		props := map[string]string{
			"node.id":                 fmt.Sprint(n.ID),
			"log.dirs":                filepath.Join(n.dir, "data"),
			"etcd.name":               fmt.Sprintf("b%d", n.ID),
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
		n.Args = append([]string{bin}, brokerproc.OverrideArgs(props)...)
	}
	t.Cleanup(c.close)
	brokerproc.StartAll(t, c.procs(), 60*time.Second)
	for _, n := range c.nodes {
		cl, err := kgo.NewClient(append(clientOpts(), kgo.SeedBrokers(n.addr()), kgo.RetryTimeout(time.Second),
			kgo.DialTimeout(time.Second))...)
		if err != nil {
			t.Fatal(err)
		}
		c.admin[n.ID] = cl
	}
	// Every broker lists all three once the registrations reached its cache.
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

// metadata asks broker id alone (no client cache in between).
func (c *cluster) metadata(id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	return brokerproc.Metadata(c.admin[id], topics...)
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
		if n.ID != prefer {
			order = append(order, n.ID)
		}
	}
	var lastErr error = fmt.Errorf("no live broker")
	for _, id := range order {
		if !c.node(id).Live() {
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

// etcdStatus asks each live member for its member id and the raft leader's:
// it returns node -> member id and the node that leads (-1 if none).
func (c *cluster) etcdStatus() (map[int32]uint64, int32) {
	ids := map[int32]uint64{}
	leader := int32(-1)
	for _, n := range c.nodes {
		if !n.Live() {
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
		ids[n.ID] = st.Header.MemberId
		if st.Leader != 0 && st.Leader == st.Header.MemberId {
			leader = n.ID
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
	return brokerproc.Eventually(c.t, timeout, what, f)
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
			if !n.Live() {
				continue
			}
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
						return fmt.Errorf("broker %d: partition %d leader %d replicas %v isr %v", n.ID, p.Partition, p.Leader, p.Replicas, p.ISR)
					}
					got++
				}
			}
			if got != want {
				return fmt.Errorf("broker %d lists %d of %d partitions", n.ID, got, want)
			}
		}
		return nil
	})
}
