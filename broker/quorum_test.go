package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quorumRequest(topic string, partitions ...int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestDescribeQuorumSingleBroker: the one embedded member is the voter and
// leader, with the broker's node id; a partition other than
// __cluster_metadata-0 is UNKNOWN_TOPIC_OR_PARTITION, as Kafka's raft
// client answers.
func TestDescribeQuorumSingleBroker(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	resp, err := quorumRequest("__cluster_metadata", 0).RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("describe quorum: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != srv.NodeID() || p.LeaderEpoch < 1 || p.HighWatermark <= 0 ||
		len(p.CurrentVoters) != 1 || len(p.Observers) != 0 {
		t.Fatalf("partition: %+v", p)
	}
	v := p.CurrentVoters[0]
	if v.ReplicaID != srv.NodeID() || v.LogEndOffset < p.HighWatermark || v.LastFetchTimestamp <= 0 ||
		v.LastCaughtUpTimestamp <= 0 || v.ReplicaDirectoryID == [16]byte{} {
		t.Fatalf("voter: %+v", v)
	}
	if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != srv.NodeID() || len(resp.Nodes[0].Listeners) != 0 {
		t.Fatalf("nodes (a member without peers has no reachable peer URL): %+v", resp.Nodes)
	}
	for _, req := range []*kmsg.DescribeQuorumRequest{quorumRequest("__cluster_metadata", 1), quorumRequest("other", 0), quorumRequest("__cluster_metadata", 0, 1)} {
		resp, err := req.RequestWith(ctxFor(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(req.Topics[0].Partitions) {
			t.Fatalf("%+v: %+v", req.Topics, resp)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.ErrorMessage == nil {
				t.Errorf("%s: %+v", req.Topics[0].Topic, p)
			}
		}
	}
}

// TestQuorumAPIsAuthorized: without ALTER (DESCRIBE for DescribeQuorum) on
// the CLUSTER each API is refused as the controller refuses it.
func TestQuorumAPIsAuthorized(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found", "false")
	defer srv.Close()
	cl := newClient(t, srv)
	denied := kerr.ClusterAuthorizationFailed.Code
	dq, err := quorumRequest("__cluster_metadata", 0).RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if dq.ErrorCode != denied || len(dq.Topics) != 0 {
		t.Errorf("DescribeQuorum: %+v", dq)
	}
	uf := kmsg.NewPtrUpdateFeaturesRequest()
	uf.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "metadata.version", MaxVersionLevel: 33, UpgradeType: 1}}
	if r, err := uf.RequestWith(ctxFor(t), cl); err != nil || r.ErrorCode != denied || len(r.Results) != 0 {
		t.Errorf("UpdateFeatures: %+v %v", r, err)
	}
	ub := kmsg.NewPtrUnregisterBrokerRequest()
	ub.BrokerID = srv.NodeID()
	if r, err := ub.RequestWith(ctxFor(t), cl); err != nil || r.ErrorCode != denied {
		t.Errorf("UnregisterBroker: %+v %v", r, err)
	}
	uc := kmsg.NewPtrUnregisterControllerRequest()
	uc.ControllerID = srv.NodeID()
	if r, err := uc.RequestWith(ctxFor(t), cl); err != nil || r.ErrorCode != denied {
		t.Errorf("UnregisterController: %+v %v", r, err)
	}
	av := kmsg.NewPtrAddRaftVoterRequest()
	av.VoterID, av.VoterDirectoryID = 2, [16]byte{2}
	if r, err := av.RequestWith(ctxFor(t), cl); err != nil || r.ErrorCode != denied {
		t.Errorf("AddRaftVoter: %+v %v", r, err)
	}
	rv := kmsg.NewPtrRemoveRaftVoterRequest()
	rv.VoterID, rv.VoterDirectoryID = srv.NodeID(), [16]byte{1}
	if r, err := rv.RequestWith(ctxFor(t), cl); err != nil || r.ErrorCode != denied {
		t.Errorf("RemoveRaftVoter: %+v %v", r, err)
	}
}
