package controller

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// sharedEtcd starts a standalone embedded etcd for several controllers, so
// that any of them can crash or leave, and returns its client URLs. It stops
// after the controllers (cleanups run last-registered first).
func sharedEtcd(t testing.TB) []string {
	t.Helper()
	var quiet atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, client, err := startEmbeddedEtcd(ctx, t.TempDir(), testLogger(), &quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		quiet.Store(true)
		e.Close()
	})
	return []string{embeddedClientURL(e)}
}

// memberConfig is the configuration of broker id on the shared etcd, with a
// one-second lease so that crashes are noticed quickly, a rack per broker
// and auto leader rebalancing off (tests that want it turn it on).
func memberConfig(t *testing.T, endpoints []string, id int32) Config {
	cfg := testConfig(t, id)
	cfg.DataDir = ""
	cfg.EtcdEndpoints = endpoints
	cfg.LeaseTTLSeconds = 1
	cfg.Rack = fmt.Sprintf("rack-%d", id)
	off := false
	cfg.AutoLeaderRebalanceEnable = &off
	return cfg
}

// startMembers starts controllers 1..n on the shared etcd, in order (so 1 is
// the active controller), and waits until each sees all of them.
func startMembers(t *testing.T, endpoints []string, n int) []*Controller {
	t.Helper()
	var out []*Controller
	for id := int32(1); id <= int32(n); id++ {
		out = append(out, startController(t, memberConfig(t, endpoints, id)))
	}
	for _, c := range out {
		eventually(t, "every broker registered and unfenced", func() bool { return activeBrokers(c) == n })
	}
	return out
}

// activeBrokers counts the brokers c's cache shows as active.
func activeBrokers(c *Controller) int {
	n := 0
	for _, b := range c.Brokers() {
		if isActive(b) {
			n++
		}
	}
	return n
}

// crash stops c as a killed process would (Kill): keepalives stop without
// the lease being revoked (the registration and the controller candidacy
// expire after the TTL) and no controlled shutdown is made.
func crash(t testing.TB, c *Controller) {
	t.Helper()
	if err := c.Kill(); err != nil {
		t.Logf("kill of broker %d: %v", c.cfg.NodeID, err)
	}
}

// partitionOn returns partition p of topic as c's cache shows it.
func partitionOn(t *testing.T, c *Controller, topic string, p int32) PartitionInfo {
	t.Helper()
	info, ok := c.Topic(topic)
	if !ok || int(p) >= len(info.Partitions) {
		t.Fatalf("%s-%d not in broker %d's cache", topic, p, c.cfg.NodeID)
	}
	return info.Partitions[p]
}

// waitPartition waits until every controller's cache shows partition p of
// topic satisfying cond and returns the state the first one shows.
func waitPartition(t *testing.T, cs []*Controller, topic string, p int32, what string, cond func(PartitionInfo) bool) PartitionInfo {
	t.Helper()
	eventually(t, what, func() bool {
		for _, c := range cs {
			info, ok := c.Topic(topic)
			if !ok || int(p) >= len(info.Partitions) || !cond(info.Partitions[p]) {
				return false
			}
		}
		return true
	})
	return partitionOn(t, cs[0], topic, p)
}

// createAssigned creates topic with an explicit assignment through c.
func createAssigned(t *testing.T, c *Controller, topic string, assignment [][]int32, configs map[string]string) TopicInfo {
	t.Helper()
	req := CreateTopicRequest{Name: topic, NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{}, Configs: configs}
	for p, replicas := range assignment {
		req.Assignments[int32(p)] = replicas
	}
	info, err := c.CreateTopic(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// requirePartition fails unless p has the given leader, ISR, replicas and
// epochs.
func requirePartition(t *testing.T, p PartitionInfo, leader int32, isr, replicas []int32, leaderEpoch, partitionEpoch int32) {
	t.Helper()
	if p.Leader != leader || !slices.Equal(p.ISR, isr) || !slices.Equal(p.Replicas, replicas) ||
		p.LeaderEpoch != leaderEpoch || p.PartitionEpoch != partitionEpoch {
		t.Fatalf("partition %d = leader %d isr %v replicas %v epochs %d/%d\nwant            leader %d isr %v replicas %v epochs %d/%d",
			p.Partition, p.Leader, p.ISR, p.Replicas, p.LeaderEpoch, p.PartitionEpoch,
			leader, isr, replicas, leaderEpoch, partitionEpoch)
	}
}

// requireELR checks p's eligible leader replicas and last known ELR.
func requireELR(t *testing.T, p PartitionInfo, elr, lastKnown []int32) {
	t.Helper()
	if !slices.Equal(p.ELR, elr) || !slices.Equal(p.LastKnownELR, lastKnown) {
		t.Fatalf("partition %d: elr %v lastKnownElr %v, want %v and %v", p.Partition, p.ELR, p.LastKnownELR, elr, lastKnown)
	}
}

// activeControllers returns the node ids of the controllers performing the
// active controller's duties.
func activeControllers(cs ...*Controller) []int32 {
	var out []int32
	for _, c := range cs {
		if c.active.Load() {
			out = append(out, c.cfg.NodeID)
		}
	}
	return out
}

// restart starts a new controller for broker id on the shared etcd, as a
// broker process started again.
func restart(t *testing.T, endpoints []string, id int32, configure func(*Config)) *Controller {
	t.Helper()
	cfg := memberConfig(t, endpoints, id)
	if configure != nil {
		configure(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("restarting broker %d: %v", id, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startEmbeddedEtcd starts a single-member etcd in dataDir and returns it
// with an in-process client. It binds no fixed port: no peer listener (a
// single member has no peers) and, unlike a controller's default, a client
// listener on 127.0.0.1:0 for the test's external clients. On error nothing
// is left running.
func startEmbeddedEtcd(ctx context.Context, dataDir string, log *slog.Logger, quiet *atomic.Bool) (*embed.Etcd, *clientv3.Client, error) {
	return startEmbeddedMember(ctx, dataDir, singleMember(), EtcdSecurity{}, log, quiet)
}

// singleMember is the configuration of a member without peers, with a
// loopback client listener.
func singleMember() embeddedMember {
	m, _ := withClientURL(Config{}).resolveEmbeddedMember() // always resolves
	return m
}

// withClientURL gives cfg's embedded etcd a client listener on a free
// loopback port (etcd.listen.client.urls), for tests whose other
// controllers reach it as an external etcd.
func withClientURL(cfg Config) Config {
	cfg.EtcdListenClientURLs = []string{"http://127.0.0.1:0"}
	return cfg
}
