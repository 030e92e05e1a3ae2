package controller

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestStartRegistersBrokerAndElectsController(t *testing.T) {
	cfg := testConfig(t, 3)
	c := startController(t, cfg)

	brokers := c.Brokers()
	if len(brokers) != 1 || brokers[0].NodeID != 3 || brokers[0].Rack != "rack-a" ||
		!slices.Equal(brokers[0].Endpoints, cfg.Endpoints) {
		t.Fatalf("Brokers() = %+v, want only broker 3 with its rack and endpoints", brokers)
	}
	if got := c.ControllerID(); got != 3 {
		t.Fatalf("ControllerID() = %d, want 3", got)
	}
	id := c.ClusterID()
	if len(id) != 22 {
		t.Fatalf("ClusterID() = %q, want 22 base64url characters", id)
	}
	if _, err := ParseUUID(id); err != nil {
		t.Fatal(err)
	}
}

func TestCreateTopicIsVisibleInCacheAndListenersOnReturn(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	var mu sync.Mutex
	var changes []TopicChange
	c.Listen(func(ch TopicChange) {
		mu.Lock()
		changes = append(changes, ch)
		mu.Unlock()
	})

	created, err := c.CreateTopic(ctxT(t), CreateTopicRequest{
		Name: "orders", NumPartitions: 3, ReplicationFactor: 1, Configs: map[string]string{"cleanup.policy": "compact"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.ID == ([16]byte{}) {
		t.Fatal("topic id is the zero UUID")
	}
	// No waiting: CreateTopic returns only once the cache and listeners have it.
	mu.Lock()
	got := slices.Clone(changes)
	mu.Unlock()
	if len(got) != 1 || got[0].Deleted || got[0].Topic.Name != "orders" || got[0].Topic.ID != created.ID {
		t.Fatalf("listener saw %+v, want the creation of orders", got)
	}
	topic, ok := c.Topic("orders")
	if !ok || topic.ID != created.ID {
		t.Fatalf("Topic(orders) = %+v, %v", topic, ok)
	}
	byID, ok := c.TopicByID(created.ID)
	if !ok || byID.Name != "orders" {
		t.Fatalf("TopicByID = %+v, %v", byID, ok)
	}
	if all := c.Topics(); len(all) != 1 || all[0].Name != "orders" {
		t.Fatalf("Topics() = %+v", all)
	}
	if topic.Configs["cleanup.policy"] != "compact" || topic.Internal {
		t.Fatalf("configs/internal not kept: %+v", topic)
	}
	if len(topic.Partitions) != 3 {
		t.Fatalf("partitions = %+v", topic.Partitions)
	}
	for i, p := range topic.Partitions {
		if p.Partition != int32(i) || !slices.Equal(p.Replicas, []int32{1}) || p.Leader != 1 ||
			!slices.Equal(p.ISR, []int32{1}) || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Fatalf("partition %d = %+v", i, p)
		}
	}
}

func TestListenReplaysExistingTopicsThenChanges(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	for _, name := range []string{"b", "a"} {
		if _, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: name, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var changes []TopicChange // appended on the cache goroutine, read after writes returned
	var mu sync.Mutex
	c.Listen(func(ch TopicChange) { mu.Lock(); changes = append(changes, ch); mu.Unlock() })
	mu.Lock()
	if len(changes) != 2 || changes[0].Topic.Name != "a" || changes[1].Topic.Name != "b" {
		t.Fatalf("replay = %+v, want a and b", changes)
	}
	mu.Unlock()
	if err := c.DeleteTopic(ctxT(t), "a"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 3 || !changes[2].Deleted || changes[2].Topic.Name != "a" || len(changes[2].Topic.Partitions) != 1 {
		t.Fatalf("changes = %+v, want a's deletion with its last state", changes)
	}
}

func TestListenBeforeStartSeesLoadedTopics(t *testing.T) {
	cfg := testConfig(t, 1)
	first := startController(t, cfg)
	if _, err := first.CreateTopic(ctxT(t), CreateTopicRequest{Name: "kept", NumPartitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	c.Listen(func(ch TopicChange) { names = append(names, ch.Topic.Name) })
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The load reports the topic as created; registering again then bumps
	// the leader epoch of the partitions this broker led (rejoin), which
	// reports changes of the same topic.
	if len(names) == 0 || slices.ContainsFunc(names, func(n string) bool { return n != "kept" }) {
		t.Fatalf("listener registered before Start saw %v, want only kept", names)
	}
}

func TestValidateOnlyWritesNothing(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	info, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "dry", NumPartitions: 4, ReplicationFactor: 1, ValidateOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "dry" || len(info.Partitions) != 4 {
		t.Fatalf("validate-only result = %+v", info)
	}
	if _, ok := c.Topic("dry"); ok {
		t.Fatal("validate-only created the topic in the cache")
	}
	resp, err := c.client.Get(ctxT(t), c.ks.root()+"partitions/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	resp2, err := c.client.Get(ctxT(t), c.ks.topic("dry"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 || resp2.Count != 0 {
		t.Fatalf("validate-only wrote %d partition keys and %d topic keys", resp.Count, resp2.Count)
	}
	// Validation still applies.
	_, err = c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "dry", NumPartitions: 0, ReplicationFactor: 1, ValidateOnly: true})
	if err == nil {
		t.Fatal("validate-only accepted zero partitions")
	}
}

func TestDeleteTopic(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	first, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "gone", NumPartitions: 2, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctxT(t), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Topic("gone"); ok {
		t.Fatal("deleted topic still in the cache")
	}
	if _, ok := c.TopicByID(first.ID); ok {
		t.Fatal("deleted topic still found by id")
	}
	resp, err := c.client.Get(ctxT(t), c.ks.partitionRange("gone"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Fatalf("partition keys left after delete: %d (%v)", resp.Count, err)
	}
	requireCode(t, c.DeleteTopic(ctxT(t), "gone"), kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")

	again, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "gone", NumPartitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == first.ID {
		t.Fatal("a re-created topic reused the deleted topic's id")
	}
}

func TestRestartKeepsTopicsAndClusterID(t *testing.T) {
	cfg := testConfig(t, 1)
	c := startController(t, cfg)
	created, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "durable", NumPartitions: 2, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	clusterID := c.ClusterID()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	c2 := startController(t, cfg)
	if c2.ClusterID() != clusterID {
		t.Fatalf("cluster id changed across restart: %s -> %s", clusterID, c2.ClusterID())
	}
	topic, ok := c2.Topic("durable")
	if !ok || topic.ID != created.ID || len(topic.Partitions) != 2 {
		t.Fatalf("after restart Topic(durable) = %+v, %v", topic, ok)
	}
	if b := c2.Brokers(); len(b) != 1 || b[0].NodeID != 1 || c2.ControllerID() != 1 {
		t.Fatalf("after restart brokers %+v controller %d", b, c2.ControllerID())
	}
}

func TestRestartAfterCrashRevokesStaleRegistration(t *testing.T) {
	cfg := testConfig(t, 1)
	cfg.LeaseTTLSeconds = 60 // waiting for it to expire would fail the 10s deadline below
	c := runController(t, ctxT(t), cfg)
	// Simulate a crash: shut down without revoking the lease.
	c.sessionMu.Lock()
	c.session.Orphan()
	c.session = nil
	c.sessionMu.Unlock()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c2.Start(ctx); err != nil {
		t.Fatalf("restart after a crash: %v", err)
	}
	defer c2.Close()
	if b := c2.Brokers(); len(b) != 1 || c2.ControllerID() != 1 {
		t.Fatalf("brokers %+v controller %d", b, c2.ControllerID())
	}
}

func TestTwoEmbeddedControllersSideBySide(t *testing.T) {
	a := startController(t, withClientURL(testConfig(t, 1)))
	b := startController(t, withClientURL(testConfig(t, 1)))
	if a.ClusterID() == b.ClusterID() {
		t.Fatal("two independent clusters share a cluster id")
	}
	if embeddedClientURL(a.etcd) == embeddedClientURL(b.etcd) {
		t.Fatal("two embedded etcds share a client URL")
	}
	if _, err := a.CreateTopic(ctxT(t), CreateTopicRequest{Name: "only-a", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic(ctxT(t), CreateTopicRequest{Name: "only-b", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Topic("only-a"); ok {
		t.Fatal("b sees a's topic")
	}
	if _, ok := a.Topic("only-b"); ok {
		t.Fatal("a sees b's topic")
	}
}

func TestControllersSharingOneEtcd(t *testing.T) {
	a := startController(t, withClientURL(testConfig(t, 1)))
	cfgB := testConfig(t, 2)
	cfgB.DataDir = ""
	cfgB.EtcdEndpoints = []string{embeddedClientURL(a.etcd)}
	b := startController(t, cfgB)

	if a.ClusterID() != b.ClusterID() {
		t.Fatalf("cluster ids differ: %s, %s", a.ClusterID(), b.ClusterID())
	}
	ids := func(c *Controller) []int32 {
		var out []int32
		for _, br := range c.Brokers() {
			out = append(out, br.NodeID)
		}
		return out
	}
	eventually(t, "both brokers registered on both", func() bool {
		return slices.Equal(ids(a), []int32{1, 2}) && slices.Equal(ids(b), []int32{1, 2})
	})
	if a.ControllerID() != 1 || b.ControllerID() != 1 {
		t.Fatalf("ControllerID: a=%d b=%d, want both 1 (a campaigned first)", a.ControllerID(), b.ControllerID())
	}

	var seen sync.Map
	a.Listen(func(ch TopicChange) { seen.Store(ch.Topic.Name, ch) })
	created, err := b.CreateTopic(ctxT(t), CreateTopicRequest{Name: "shared", NumPartitions: 4, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's listener to see b's topic", func() bool { _, ok := seen.Load("shared"); return ok })
	topic, ok := a.Topic("shared")
	if !ok || topic.ID != created.ID {
		t.Fatalf("a.Topic(shared) = %+v, %v", topic, ok)
	}
	leaders := map[int32]int{}
	for _, p := range topic.Partitions {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || p.Leader != p.Replicas[0] {
			t.Fatalf("bad assignment %+v", p)
		}
		leaders[p.Leader]++
	}
	if leaders[1] != 2 || leaders[2] != 2 {
		t.Fatalf("leaders not spread evenly: %v", leaders)
	}
	_, err = a.CreateTopic(ctxT(t), CreateTopicRequest{Name: "shared", NumPartitions: 1, ReplicationFactor: 1})
	requireCode(t, err, kerr.TopicAlreadyExists, "Topic 'shared' already exists.")

	// A clean Close revokes the lease: the broker vanishes at once, not after the TTL.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to see broker 2 leave", func() bool { return slices.Equal(ids(a), []int32{1}) })
}

func TestControllerFailover(t *testing.T) {
	// A standalone etcd, so either broker can leave.
	var quiet atomic.Bool
	e, client, err := startEmbeddedEtcd(ctxT(t), t.TempDir(), testLogger(), &quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // runs after the controllers' cleanups
		client.Close()
		quiet.Store(true)
		e.Close()
	})
	endpoints := []string{embeddedClientURL(e)}
	cfgA, cfgB := testConfig(t, 1), testConfig(t, 2)
	cfgA.EtcdEndpoints, cfgB.EtcdEndpoints = endpoints, endpoints
	a := startController(t, cfgA)
	b := startController(t, cfgB)
	if a.ControllerID() != 1 || b.ControllerID() != 1 {
		t.Fatalf("ControllerID: a=%d b=%d, want 1", a.ControllerID(), b.ControllerID())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 2 to become controller", func() bool { return b.ControllerID() == 2 })
}

func TestSameNodeIDInSharedEtcdIsRefused(t *testing.T) {
	a := startController(t, withClientURL(testConfig(t, 1)))
	cfg := testConfig(t, 1)
	cfg.DataDir = ""
	cfg.EtcdEndpoints = []string{embeddedClientURL(a.etcd)}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = c.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "another broker is registered with that broker id") {
		t.Fatalf("Start with a live duplicate id: %v", err)
	}
	if b := a.Brokers(); len(b) != 1 {
		t.Fatalf("the duplicate changed the registry: %+v", b)
	}
}

// etcd's default limit is 128 operations per transaction; the embedded one
// takes a topic of Kafka's maximum size in one.
func TestCreateLargeTopicInOneTransaction(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	began := time.Now()
	topic, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "wide", NumPartitions: 9999, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created 9999 partitions in %v", time.Since(began))
	if len(topic.Partitions) != 9999 || topic.Partitions[9998].Partition != 9998 {
		t.Fatalf("got %d partitions", len(topic.Partitions))
	}
	if err := c.DeleteTopic(ctxT(t), "wide"); err != nil {
		t.Fatal(err)
	}
}
