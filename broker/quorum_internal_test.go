package broker

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeQuorum sends DescribeQuorum for __cluster_metadata-0 to srv.
func describeQuorum(t *testing.T, srv *Server) *kmsg.DescribeQuorumResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("describe quorum: %+v", resp)
	}
	return resp
}

// TestDescribeQuorumEtcdCluster: three brokers whose embedded members form
// one etcd cluster are the three voters, the etcd leader's broker is the
// leader, and each member's log end offset is learned from its broker; a
// stopped broker's member stays a voter with an unknown log end offset.
func TestDescribeQuorumEtcdCluster(t *testing.T) {
	srvs, cfgs := startEtcdCluster(t, 3)
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q, err := srvs[2].ctrl.Quorum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := int32(-1)
	for _, m := range q.Members {
		if m.ID == q.Leader {
			leader = m.NodeID
		}
	}
	resp := describeQuorum(t, srvs[2])
	p := resp.Topics[0].Partitions[0]
	if resp.Topics[0].Topic != "__cluster_metadata" || p.LeaderID != leader || leader < 1 || p.LeaderEpoch < 1 ||
		p.HighWatermark <= 0 || len(p.Observers) != 0 {
		t.Fatalf("partition: %+v (etcd leader's broker %d)", p, leader)
	}
	var ids []int32
	for _, v := range p.CurrentVoters {
		ids = append(ids, v.ReplicaID)
		if v.LogEndOffset <= 0 || v.LastFetchTimestamp <= 0 {
			t.Errorf("voter %d: %+v", v.ReplicaID, v)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("voters %v", ids)
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("nodes: %+v", resp.Nodes)
	}
	for _, n := range resp.Nodes {
		peer, err := url.Parse(cfgs[n.NodeID-1].Etcd.ListenPeerURLs[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Listeners) != 1 || n.Listeners[0].Name != "ETCD_PEER" || strconv.Itoa(int(n.Listeners[0].Port)) != peer.Port() {
			t.Errorf("node %d: %+v, peer URL %s", n.NodeID, n.Listeners, peer)
		}
	}

	// Broker 1 stops: its member stays a voter, its offsets unknown.
	if err := srvs[0].Close(); err != nil {
		t.Fatal(err)
	}
	p = describeQuorum(t, srvs[2]).Topics[0].Partitions[0]
	for _, v := range p.CurrentVoters {
		if stopped := v.ReplicaID == 1; stopped != (v.LogEndOffset == -1) {
			t.Errorf("voter %d after broker 1 stopped: %+v", v.ReplicaID, v)
		}
	}
	if len(p.CurrentVoters) != 3 {
		t.Errorf("voters after broker 1 stopped: %+v", p.CurrentVoters)
	}
	// Its registration went with its lease: nothing to unregister.
	if code := unregisterBroker(t, srvs[2], 1); code != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("unregister the stopped broker 1: code %d", code)
	}
}

// unregisterBroker sends UnregisterBroker for id to srv and returns the
// error code.
func unregisterBroker(t *testing.T, srv *Server, id int32) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return kresp.(*kmsg.UnregisterBrokerResponse).ErrorCode
}

// TestUnregisterBroker: a running broker's registration is removed and the
// broker registers again (a new broker epoch), as a Kafka broker does on
// its next heartbeat; an id nobody holds is BROKER_ID_NOT_REGISTERED.
func TestUnregisterBroker(t *testing.T) {
	srv := startTestBroker(t)
	defer srv.Close()
	epoch := srv.ctrl.BrokerEpoch()
	if code := unregisterBroker(t, srv, 99); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister 99: code %d", code)
	}
	if code := unregisterBroker(t, srv, srv.NodeID()); code != 0 {
		t.Fatalf("unregister self: code %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for srv.ctrl.BrokerEpoch() == epoch || len(srv.ctrl.Brokers()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("broker not registered again: epoch %d (was %d), brokers %+v", srv.ctrl.BrokerEpoch(), epoch, srv.ctrl.Brokers())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
