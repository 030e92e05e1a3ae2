package broker

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
)

// TestElectLeadersPreferredMovesLeader: a second broker (only its
// controller, on this broker's embedded etcd) is the preferred replica of a
// partition led by this broker with both in the ISR; ElectLeaders first
// refuses while the preferred replica is out of the ISR, then moves the
// leadership to it, and this broker's partition follows the new state.
func TestElectLeadersPreferredMovesLeader(t *testing.T) {
	etcdURL := freeURL(t) // broker 2 (a bare controller) shares this broker's etcd
	srv := startTestBroker(t, map[string]string{"auto.leader.rebalance.enable": "false", "etcd.listen.client.urls": etcdURL})
	defer srv.Close()
	<-srv.Ready()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	startBroker2 := func() *controller.Controller {
		c, err := controller.New(controller.Config{
			NodeID:          2,
			Endpoints:       []controller.Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 1, SecurityProtocol: "PLAINTEXT"}},
			EtcdEndpoints:   []string{etcdURL},
			Prefix:          srv.cfg.Etcd.Prefix,
			LeaseTTLSeconds: 10, // it leaves by controlled shutdown; a 1 s lease expired on a loaded machine and moved the leadership away
			Logger:          logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitFor := func(what string, cond func(controller.PartitionInfo) bool) controller.PartitionInfo {
		t.Helper()
		for ctx.Err() == nil {
			if tp, ok := srv.ctrl.Topic("pref"); ok && cond(tp.Partitions[0]) {
				return tp.Partitions[0]
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s", what)
		return controller.PartitionInfo{}
	}

	// Broker 2 must be registered and unfenced before the topic is
	// created, or the creation elects broker 1 (a fenced broker cannot
	// lead; the fence lasts longer on a loaded machine).
	b2Ready := func() bool {
		for _, b := range srv.ctrl.Brokers() {
			if b.NodeID == 2 && !b.Fenced {
				return true
			}
		}
		return false
	}
	b2 := startBroker2()
	for ctx.Err() == nil && !b2Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := srv.ctrl.CreateTopic(ctx, controller.CreateTopicRequest{
		Name: "pref", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {2, 1}},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor("broker 2 to lead", func(p controller.PartitionInfo) bool { return p.Leader == 2 })
	// Broker 2 leaves (a controlled shutdown) and comes back: broker 1
	// leads, broker 2 is out of the ISR.
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	p := waitFor("broker 1 to lead alone", func(p controller.PartitionInfo) bool {
		return p.Leader == 1 && !slices.Contains(p.ISR, 2)
	})
	b2 = startBroker2()
	defer b2.Close()
	for ctx.Err() == nil && !b2Ready() {
		time.Sleep(10 * time.Millisecond)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	elect := func() kmsg.ElectLeadersResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrElectLeadersRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "pref", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("response %+v", resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	if r := elect(); r.ErrorCode != kerr.PreferredLeaderNotAvailable.Code ||
		r.ErrorMessage == nil || *r.ErrorMessage != "The preferred leader was not available." {
		t.Fatalf("preferred replica out of the ISR: %+v", r)
	}

	// Leader 1 takes broker 2 back into the ISR (as it would once broker 2
	// caught up); now the election can happen.
	p, err = srv.ctrl.AlterPartitionISR(ctx, controller.AlterPartitionRequest{
		Topic: "pref", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		NewISR: []controller.ISRMember{{BrokerID: 1, BrokerEpoch: -1}, {BrokerID: 2, BrokerEpoch: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := elect(); r.ErrorCode != 0 || r.ErrorMessage != nil {
		t.Fatalf("preferred election: %+v", r)
	}
	after := waitFor("broker 2 to lead again", func(q controller.PartitionInfo) bool { return q.Leader == 2 })
	if after.LeaderEpoch <= p.LeaderEpoch {
		t.Errorf("leader epoch %d after the election, %d before", after.LeaderEpoch, p.LeaderEpoch)
	}
	if lp := srv.replicas.Partition("pref", 0); lp == nil || lp.IsLeader() || lp.LeaderEpoch() != after.LeaderEpoch {
		t.Errorf("this broker's partition did not follow the election: %+v", lp)
	}
	if r := elect(); r.ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Errorf("second election: %+v", r)
	}
}
