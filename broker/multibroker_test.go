package broker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/freeport"
)

// freeLoopbackPort is a port of 127.0.0.1 free a moment ago, from below the
// ephemeral range (internal/freeport), so that no :0 listener or client
// connection is handed it before the test binds it.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// TestThreeBrokersOneEtcdCluster: three brokers, configured with the etcd.*
// keys so that their embedded etcd members form one etcd cluster, make one
// Kafka cluster: each lists all three, partitions of an RF=1 topic spread
// over them, and clients produce, consume and run a consumer group across
// the three (replication between them: replication_test.go).
func TestThreeBrokersOneEtcdCluster(t *testing.T) {
	peers := make([]int, 3)
	var initial []string
	for i := range peers {
		peers[i] = freeLoopbackPort(t)
		initial = append(initial, fmt.Sprintf("b%d=http://127.0.0.1:%d", i+1, peers[i]))
	}
	srvs := make([]*broker.Server, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range srvs {
		cfg, _, err := config.Parse(map[string]string{
			"node.id":               fmt.Sprint(i + 1),
			"listeners":             "PLAINTEXT://127.0.0.1:0",
			"log.dirs":              t.TempDir(),
			"etcd.name":             fmt.Sprintf("b%d", i+1),
			"etcd.initial.cluster":  strings.Join(initial, ","),
			"etcd.listen.peer.urls": fmt.Sprintf("http://127.0.0.1:%d", peers[i]),
		})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := broker.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srvs[i] = srv
		wg.Add(1)
		go func(i int) { // a member waits for the others' quorum: start together
			defer wg.Done()
			errs[i] = srvs[i].Start()
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("broker %d: %v", i+1, err)
		}
	}
	defer func() {
		var cw sync.WaitGroup
		for _, s := range srvs {
			cw.Add(1)
			go func(s *broker.Server) { defer cw.Done(); s.Close() }(s)
		}
		cw.Wait()
	}()
	if srvs[0].ClusterID() != srvs[1].ClusterID() || srvs[1].ClusterID() != srvs[2].ClusterID() {
		t.Fatalf("cluster ids differ: %s %s %s", srvs[0].ClusterID(), srvs[1].ClusterID(), srvs[2].ClusterID())
	}

	cl := newClient(t, srvs[0], kgo.DefaultProduceTopic("spread"))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var meta kadm.Metadata
	for { // registrations reach every broker's cache through etcd
		var err error
		meta, err = adm.Metadata(ctx)
		if err == nil && len(meta.Brokers) == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("brokers listed: %v (%v)", meta.Brokers, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	createTopic(t, cl, "spread", 6, nil)
	// CreateTopics returns once the broker that handled it has the topic;
	// the others apply it from etcd a moment later, so look until all six
	// partitions are listed (by a fresh client: kadm caches metadata).
	fresh := kadm.NewClient(newClient(t, srvs[2]))
	leaders := map[int32]bool{}
	for {
		topics, err := fresh.ListTopics(ctx, "spread")
		if err == nil && len(topics["spread"].Partitions) == 6 {
			for _, p := range topics["spread"].Partitions {
				leaders[p.Leader] = true
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("topic spread not listed with 6 partitions: %v %+v", err, topics["spread"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(leaders) != 3 {
		t.Fatalf("6 partitions led by %d brokers, want all 3: %v", len(leaders), leaders)
	}

	recs := testRecords("spread", 3000)
	produceAll(t, cl, recs)
	checkRecords(t, recs, consumeAll(t, srvs[1], "spread", len(recs)))

	// A consumer group across the cluster: its coordinator is on whichever
	// broker leads its __consumer_offsets partition.
	group := newClient(t, srvs[2], kgo.ConsumerGroup("spread-group"), kgo.ConsumeTopics("spread"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < len(recs) {
		fs := group.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group consumed %d of %d", got, len(recs))
		}
		got += len(fs.Records())
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit across the cluster: %v", err)
	}
}
