package brokerproc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Node is one broker of a Cluster: its process, the address clients dial,
// its embedded etcd member's client URL and its directory, all kept across
// restarts.
type Node struct {
	Proc
	Addr    string // host:port of its Kafka listener
	EtcdURL string // its etcd member's client URL, to ask who leads etcd
	Dir     string
}

// Cluster is brokers whose embedded etcd members form one etcd cluster. A
// harness fills Nodes (each with its command line) and calls Start.
type Cluster struct {
	TB    testing.TB
	Nodes []*Node
	// Admin holds one client per broker, seeded with that broker alone,
	// for requests to it and no other.
	Admin map[int32]*kgo.Client
}

// Start starts every broker together (an etcd member waits for a quorum),
// waits for their ready lines, opens the admin clients with clientOpts, and
// waits until every broker lists them all. The cluster is closed at the
// test's cleanup.
func (c *Cluster) Start(readyTimeout time.Duration, clientOpts ...kgo.Opt) {
	c.TB.Helper()
	c.Admin = map[int32]*kgo.Client{}
	c.TB.Cleanup(c.Close)
	StartAll(c.TB, c.Procs(), readyTimeout)
	for _, n := range c.Nodes {
		opts := append(append([]kgo.Opt(nil), clientOpts...), kgo.SeedBrokers(n.Addr), kgo.RetryTimeout(time.Second),
			kgo.DialTimeout(time.Second))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			c.TB.Fatal(err)
		}
		c.Admin[n.ID] = cl
	}
	// Every broker lists all once the registrations reached its cache.
	c.Eventually(30*time.Second, fmt.Sprintf("every broker lists %d brokers", len(c.Nodes)), func() error {
		for _, n := range c.Nodes {
			m, err := c.Metadata(n.ID)
			if err != nil {
				return err
			}
			if len(m.Brokers) != len(c.Nodes) {
				return fmt.Errorf("broker %d lists %d brokers", n.ID, len(m.Brokers))
			}
		}
		return nil
	})
}

// Node is the broker with id (ids run from 1).
func (c *Cluster) Node(id int32) *Node { return c.Nodes[id-1] }

// Close closes the admin clients and stops every broker.
func (c *Cluster) Close() {
	for _, cl := range c.Admin {
		cl.Close()
	}
	StopAll(c.TB, c.Procs(), 15*time.Second)
}

// Procs are the brokers' processes.
func (c *Cluster) Procs() []*Proc {
	procs := make([]*Proc, len(c.Nodes))
	for i, n := range c.Nodes {
		procs[i] = &n.Proc
	}
	return procs
}

// Seeds are every broker's address.
func (c *Cluster) Seeds() []string {
	s := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		s = append(s, n.Addr)
	}
	return s
}

// Metadata asks broker id alone (no client cache in between).
func (c *Cluster) Metadata(id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	return Metadata(c.Admin[id], topics...)
}

// Eventually is Eventually on the cluster's test.
func (c *Cluster) Eventually(timeout time.Duration, what string, f func() error) time.Duration {
	c.TB.Helper()
	return Eventually(c.TB, timeout, what, f)
}

// EtcdStatus asks each live broker's etcd member for its member id and the
// raft leader's: it returns broker -> member id and the broker whose member
// leads (-1 if none says so).
func (c *Cluster) EtcdStatus() (map[int32]uint64, int32) {
	ids := map[int32]uint64{}
	leader := int32(-1)
	for _, n := range c.Nodes {
		if !n.Live() {
			continue
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{n.EtcdURL}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, n.EtcdURL)
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

// EtcdLeader is the broker whose etcd member leads the etcd cluster, -1 if
// no live member says it leads.
func (c *Cluster) EtcdLeader() int32 {
	_, l := c.EtcdStatus()
	return l
}

// CreateTopic creates topic with partitions x rf (or an explicit
// assignment) and the given configs through broker 1, then waits until
// every live broker lists every partition with a leader and a full ISR.
func (c *Cluster) CreateTopic(topic string, partitions int32, rf int16, assignment [][]int32, configs map[string]string) {
	c.TB.Helper()
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
	resp, err := req.RequestWith(ctx, c.Admin[1])
	if err != nil {
		c.TB.Fatalf("creating %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if resp.Topics[0].ErrorMessage != nil {
			msg = *resp.Topics[0].ErrorMessage
		}
		c.TB.Fatalf("creating %s: %v %s", topic, err, msg)
	}
	want := int(partitions)
	if assignment != nil {
		want = len(assignment)
	}
	c.WaitHealthy(30*time.Second, topic, want)
}

// WaitHealthy waits until every live broker lists want partitions of topic,
// each with a leader and a full ISR, and returns the time it took.
func (c *Cluster) WaitHealthy(timeout time.Duration, topic string, want int) time.Duration {
	c.TB.Helper()
	return c.Eventually(timeout, "topic "+topic+" fully replicated on every broker", func() error {
		for _, n := range c.Nodes {
			if !n.Live() {
				continue
			}
			m, err := c.Metadata(n.ID, topic)
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
