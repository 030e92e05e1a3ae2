package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/internal/freeport"
)

// freeLoopbackPorts returns n ports free on 127.0.0.1 a moment ago, from
// below the ephemeral range (internal/freeport), so that no :0 listener of
// another member is handed one meanwhile.
func freeLoopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := freeport.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// clusterMemberConfig is broker id as member "m<id>" of initialCluster.
func clusterMemberConfig(t *testing.T, id int32, dataDir, initialCluster string) Config {
	cfg := testConfig(t, id)
	cfg.DataDir = dataDir
	cfg.Rack = fmt.Sprintf("rack-%d", id)
	cfg.LeaseTTLSeconds = 1
	cfg.EtcdName = fmt.Sprintf("m%d", id)
	cfg.EtcdInitialCluster = initialCluster
	cfg.EtcdInitialClusterToken = "strait-test"
	// Faster than etcd's network defaults (100 ms / 1 s): loopback.
	cfg.EtcdHeartbeatIntervalMs, cfg.EtcdElectionTimeoutMs = 20, 200
	return cfg
}

// startConcurrently starts the controllers at once: each member's start waits
// for a majority of the initial cluster.
func startConcurrently(t *testing.T, cfgs []Config) []*Controller {
	t.Helper()
	out := make([]*Controller, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			errs[i] = c.Start(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("starting member %d: %v", i+1, err)
		}
	}
	return out
}

// Three brokers whose embedded etcd members form one three-member cluster
// see each other's registrations and topics, elect one active controller,
// and keep working when one member is lost; the lost member rejoins from its
// data directory.
func TestThreeEmbeddedMembersFormOneCluster(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	ports := freeLoopbackPorts(t, 3)
	var members []string
	for i, p := range ports {
		members = append(members, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, p))
	}
	initialCluster := strings.Join(members, ",")
	var cfgs []Config
	for id := int32(1); id <= 3; id++ {
		cfgs = append(cfgs, clusterMemberConfig(t, id, t.TempDir(), initialCluster))
	}
	cs := startConcurrently(t, cfgs)
	closed := make([]bool, 3)
	t.Cleanup(func() {
		// The last member alone has no quorum to revoke its lease: it is
		// stopped as a crash, not left waiting for a quorum.
		var open []*Controller
		for i, c := range cs {
			if !closed[i] {
				open = append(open, c)
			}
		}
		for i, c := range open {
			if i == len(open)-1 {
				crash(t, c)
			} else if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})

	resp, err := cs[0].client.MemberList(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Members) != 3 {
		t.Fatalf("etcd has %d members, want 3: %+v", len(resp.Members), resp.Members)
	}
	for _, c := range cs {
		eventually(t, "all three brokers registered everywhere", func() bool { return activeBrokers(c) == 3 })
		if c.ClusterID() != cs[0].ClusterID() {
			t.Fatalf("cluster ids differ: %s and %s", c.ClusterID(), cs[0].ClusterID())
		}
		// Peers, but still no client listener: only etcd.listen.client.urls opens one.
		if u := embeddedClientURL(c.etcd); u != "" || len(c.etcd.Clients) != 0 {
			t.Fatalf("embedded client URL %q, %d client listeners: want none", u, len(c.etcd.Clients))
		}
	}
	var controller int32
	eventually(t, "one active controller that every broker agrees on", func() bool {
		active := activeControllers(cs...)
		if len(active) != 1 {
			return false
		}
		controller = active[0]
		return cs[0].ControllerID() == controller && cs[1].ControllerID() == controller && cs[2].ControllerID() == controller
	})

	created, err := cs[1].CreateTopic(ctxT(t), CreateTopicRequest{Name: "replicated", NumPartitions: 3, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		eventually(t, "every broker to see the topic", func() bool { t2, ok := c.Topic("replicated"); return ok && t2.ID == created.ID })
	}
	leaders := map[int32]bool{}
	for _, p := range created.Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders not spread over the three brokers: %+v", created.Partitions)
	}

	// Lose the member of the active controller: the other two keep a quorum.
	lost := controller - 1
	crash(t, cs[lost])
	closed[lost] = true
	var survivors []*Controller
	for i, c := range cs {
		if int32(i) != lost {
			survivors = append(survivors, c)
		}
	}
	// The survivors elect a new etcd leader first; a request in that window
	// times out ("possibly due to previous leader failure") and, as a client
	// would, is sent again. A retry after a timeout whose write did commit
	// finds the topic.
	var more TopicInfo
	for attempt := 1; ; attempt++ {
		more, err = survivors[0].CreateTopic(ctxT(t), CreateTopicRequest{Name: "after-loss", NumPartitions: 1, ReplicationFactor: 2})
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "request timed out") {
			break
		}
	}
	if err != nil {
		var ke *kerr.Error
		if !errors.As(err, &ke) || ke != kerr.TopicAlreadyExists {
			t.Fatalf("creating a topic with 2 of 3 members: %v", err)
		}
		more, _ = survivors[0].Topic("after-loss")
	}
	eventually(t, "the other survivor to see the new topic", func() bool { _, ok := survivors[1].Topic("after-loss"); return ok })
	eventually(t, "the lost broker's registration to expire and a survivor to take over", func() bool {
		active := activeControllers(survivors...)
		return activeBrokers(survivors[0]) == 2 && activeBrokers(survivors[1]) == 2 && len(active) == 1 &&
			survivors[0].ControllerID() == active[0] && survivors[1].ControllerID() == active[0]
	})
	for p := range created.Partitions {
		waitPartition(t, survivors, "replicated", int32(p), "the lost broker to leave leadership and ISR", func(p PartitionInfo) bool {
			return p.Leader != controller && p.Leader >= 0 && !slices.Contains(p.ISR, controller)
		})
	}

	// The lost member comes back on its data: it rejoins the same cluster.
	back, err := New(cfgs[lost])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := back.Start(ctx); err != nil {
		t.Fatalf("restarting the lost member: %v", err)
	}
	cs[lost], closed[lost] = back, false
	if back.ClusterID() != survivors[0].ClusterID() {
		t.Fatal("the restarted member joined another cluster")
	}
	if t2, ok := back.Topic("after-loss"); !ok || t2.ID != more.ID {
		t.Fatal("the restarted member does not see the topic created while it was away")
	}
	eventually(t, "three brokers again", func() bool { return activeBrokers(survivors[0]) == 3 && activeBrokers(back) == 3 })
}

func TestEtcdClusterConfigValidation(t *testing.T) {
	base := func() Config { return Config{NodeID: 1, DataDir: t.TempDir()} }
	for name, tc := range map[string]struct {
		change func(*Config)
		want   string
	}{
		"name not in cluster": {func(c *Config) {
			c.EtcdName = "x"
			c.EtcdInitialCluster = "a=http://127.0.0.1:2380"
		}, `etcd.name "x" is not a member of etcd.initial.cluster`},
		"bad state": {func(c *Config) { c.EtcdInitialClusterState = "old" }, "etcd.initial.cluster.state"},
		"existing without cluster": {func(c *Config) { c.EtcdInitialClusterState = "existing" },
			"etcd.initial.cluster.state=existing needs etcd.initial.cluster"},
		"bad peer url":   {func(c *Config) { c.EtcdListenPeerURLs = []string{"127.0.0.1:2380"} }, "etcd.listen.peer.urls"},
		"bad client url": {func(c *Config) { c.EtcdAdvertiseClientURLs = []string{"ftp://x:1"} }, "etcd.advertise.client.urls"},
		"malformed list": {func(c *Config) { c.EtcdInitialCluster = "a" }, "etcd.initial.cluster"},
		"election < 5 ticks": {func(c *Config) { c.EtcdHeartbeatIntervalMs, c.EtcdElectionTimeoutMs = 100, 400 },
			"at least 5 times"},
		"external and member": {func(c *Config) {
			c.EtcdEndpoints = []string{"http://127.0.0.1:2379"}
			c.EtcdInitialCluster = "strait=http://127.0.0.1:2380"
		}, "exclude each other"},
	} {
		cfg := base()
		tc.change(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error = %v, want one containing %q", name, err, tc.want)
		}
	}

	// Defaults: a single member has no peer listener and fast ticks; a
	// cluster member listens on its URL from the initial cluster.
	single, err := base().withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if m := single.member; m.hasPeers() || m.name != "strait" || m.tickMs != 10 || m.electMs != 50 ||
		m.initialCluster != "strait=http://127.0.0.1:0" || m.token != "strait" || m.state != "new" ||
		len(m.listenClient) != 0 {
		t.Fatalf("single member defaults: %+v", m)
	}
	cfg := base()
	cfg.EtcdName = "b"
	cfg.EtcdInitialCluster = "a=http://127.0.0.1:2380,b=http://127.0.0.1:2381"
	clustered, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := clustered.member
	if !m.hasPeers() || m.listenPeer[0].String() != "http://127.0.0.1:2381" || m.advertisePeer[0].String() != "http://127.0.0.1:2381" ||
		m.tickMs != 100 || m.electMs != 1000 || len(m.listenClient) != 0 || len(m.advertiseClient) != 0 {
		t.Fatalf("cluster member defaults: %+v", m)
	}
}
