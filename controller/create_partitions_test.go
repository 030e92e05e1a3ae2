package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// New partitions are placed rack-aware across the live brokers with leaders
// spread over the racks, start with every replica in the ISR and the first as leader, and
// are visible in every cache.
func TestCreatePartitionsPlacesAcrossRacks(t *testing.T) {
	endpoints := sharedEtcd(t)
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
	var cs []*Controller
	for id := int32(1); id <= 4; id++ {
		cfg := memberConfig(t, endpoints, id)
		cfg.Rack = racks[id]
		cs = append(cs, startController(t, cfg))
	}
	for _, c := range cs {
		eventually(t, "four active brokers", func() bool { return activeBrokers(c) == 4 })
	}
	if _, err := cs[0].CreateTopic(ctxT(t), CreateTopicRequest{Name: "t", NumPartitions: 2, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	grown, err := cs[1].CreatePartitions(ctxT(t), "t", 10, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(grown.Partitions) != 10 {
		t.Fatalf("%d partitions after growing to 10", len(grown.Partitions))
	}
	// The striped placer alternates the leader's rack partition by
	// partition; within a rack it does not promise an even spread (with two
	// brokers per rack and RF 2 Kafka's placer keeps picking the same one
	// until it reshuffles).
	leaderRacks := map[string]int{}
	for _, p := range grown.Partitions {
		if len(p.Replicas) != 2 || racks[p.Replicas[0]] == racks[p.Replicas[1]] {
			t.Fatalf("partition %d replicas %v not on two racks", p.Partition, p.Replicas)
		}
		requirePartition(t, p, p.Replicas[0], p.Replicas, p.Replicas, 0, 0)
		if p.Partition >= 2 {
			leaderRacks[racks[p.Leader]]++
		}
	}
	if leaderRacks["a"] != 4 || leaderRacks["b"] != 4 {
		t.Fatalf("leaders of the 8 new partitions per rack %v, want 4 and 4", leaderRacks)
	}
	for _, c := range cs {
		eventually(t, "every broker to see 10 partitions", func() bool {
			info, ok := c.Topic("t")
			return ok && len(info.Partitions) == 10
		})
	}
}

func TestCreatePartitionsValidation(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2}, {2, 1}}, nil)
	c := cs[0]
	for _, tc := range []struct {
		name        string
		topic       string
		count       int32
		assignments [][]int32
		code        *kerr.Error
		msg         string
	}{
		{"unknown topic", "nope", 3, nil, kerr.UnknownTopicOrPartition, ""},
		{"same count", "t", 2, nil, kerr.InvalidPartitions, "Topic already has 2 partition(s)."},
		{"decrease", "t", 1, nil, kerr.InvalidPartitions, "The topic t currently has 2 partition(s); 1 would not be an increase."},
		{"too few assignments", "t", 4, [][]int32{{1, 2}}, kerr.InvalidReplicaAssignment,
			"Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"wrong replication factor", "t", 3, [][]int32{{1}}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with 1 replica(s), but this is not consistent " +
				"with previous partitions, which have 2 replica(s)."},
		{"unregistered broker", "t", 3, [][]int32{{1, 9}}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 9, but no such broker is registered."},
		{"duplicate broker", "t", 3, [][]int32{{1, 1}}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes the broker 1 more than once."},
		{"too many partitions", "t", 20000, nil, kerr.PolicyViolation, "Unable to perform excessively large batch operation."},
	} {
		_, err := c.CreatePartitions(ctxT(t), tc.topic, tc.count, tc.assignments, false)
		var ke *kerr.Error
		if !asKerr(err, &ke) || ke != tc.code || tc.msg != "" && ErrorMessage(err) != tc.msg {
			t.Errorf("%s: error %v (%q), want %s %q", tc.name, err, ErrorMessage(err), tc.code.Message, tc.msg)
		}
	}

	// Validation only: the plan is returned, nothing is written.
	planned, err := c.CreatePartitions(ctxT(t), "t", 3, [][]int32{{3, 1}}, true)
	if err != nil || len(planned.Partitions) != 3 {
		t.Fatalf("validate only: %+v, %v", planned, err)
	}
	requirePartition(t, planned.Partitions[2], 3, []int32{3, 1}, []int32{3, 1}, 0, 0)
	resp, err := c.client.Get(ctxT(t), c.ks.partition("t", 2), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Fatalf("validate only wrote the partition (%v)", err)
	}
	if info, _ := c.Topic("t"); len(info.Partitions) != 2 {
		t.Fatal("validate only changed the cache")
	}

	// An explicit assignment on brokers that are all shutting down is refused.
	if err := cs[2].ControlledShutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 1 to see broker 3 shutting down", func() bool { return activeBrokers(c) == 2 })
	_, err = c.CreatePartitions(ctxT(t), "t", 3, [][]int32{{3}}, false)
	requireCode(t, err, kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with 1 replica(s), "+
		"but this is not consistent with previous partitions, which have 2 replica(s).")
	createAssigned(t, c, "single", [][]int32{{1}}, nil)
	_, err = c.CreatePartitions(ctxT(t), "single", 2, [][]int32{{3}}, false)
	requireCode(t, err, kerr.InvalidReplicaAssignment,
		"All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled shutdown.")

	// An explicit assignment: the ISR is its active replicas.
	grown, err := c.CreatePartitions(ctxT(t), "t", 3, [][]int32{{3, 1}}, false)
	if err != nil {
		t.Fatal(err)
	}
	requirePartition(t, grown.Partitions[2], 1, []int32{1}, []int32{3, 1}, 0, 0)
	if !slices.Equal(grown.Partitions[0].Replicas, []int32{1, 2}) {
		t.Fatalf("existing partitions changed: %+v", grown.Partitions[0])
	}
}
