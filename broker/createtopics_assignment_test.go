package broker_test

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsManualAssignment: CreateTopics with a replica assignment
// (num_partitions and replication_factor -1, as Kafka requires) creates the
// partitions where assigned and answers the counts the assignment implies;
// with a count beside it, INVALID_REQUEST.
func TestCreateTopicsManualAssignment(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	create := func(np int32, rf int16) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "assigned", np, rf
		for p := range int32(2) {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, []int32{1}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	if st := create(2, -1); st.ErrorCode == 0 {
		t.Fatal("an assignment beside num_partitions 2 was accepted")
	}
	st := create(-1, -1)
	if st.ErrorCode != 0 || st.NumPartitions != 2 || st.ReplicationFactor != 1 {
		t.Fatalf("create with an assignment: code %d (%v), %d partitions, replication factor %d",
			st.ErrorCode, st.ErrorMessage, st.NumPartitions, st.ReplicationFactor)
	}
	md, err := kadm.NewClient(cl).Metadata(context.Background(), "assigned")
	if err != nil {
		t.Fatal(err)
	}
	for p, d := range md.Topics["assigned"].Partitions {
		if !slices.Equal(d.Replicas, []int32{1}) {
			t.Errorf("partition %d on %v, want [1]", p, d.Replicas)
		}
	}
}
