package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCreatePartitionsBatch: the topics of one CreatePartitions request are
// answered one by one, as Kafka's ReplicationControlManager.createPartitions
// answers them, and the new partitions of those that pass are written in
// one etcd transaction (one revision), Kafka's one atomic batch; admit (the
// controller mutation quota) is asked once per topic whose count is valid,
// and refusing it leaves that topic alone.
func TestCreatePartitionsBatch(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	c := cs[0]
	for _, name := range []string{"x", "y", "z", "q"} {
		createAssigned(t, c, name, [][]int32{{1, 2}}, nil)
	}
	changes := []PartitionsChange{
		{Topic: "x", Count: 3},
		{Topic: "nope", Count: 2},
		{Topic: "y", Count: 1},
		{Topic: "z", Count: 2, Assignments: [][]int32{{1}}},
		{Topic: "q", Count: 4},
		{Topic: "y", Count: 2, Assignments: [][]int32{{3, 1}}},
	}
	var asked []int
	errQuota := &Error{Err: kerr.ThrottlingQuotaExceeded, Message: "quota"}
	admit := func(i, added int) error {
		asked = append(asked, i, added)
		if changes[i].Topic == "q" {
			return errQuota
		}
		return nil
	}
	errs := c.CreatePartitionsBatch(ctxT(t), changes, false, admit)
	want := []*kerr.Error{nil, kerr.UnknownTopicOrPartition, kerr.InvalidPartitions, kerr.InvalidReplicaAssignment, kerr.ThrottlingQuotaExceeded, nil}
	for i, err := range errs {
		var ke *kerr.Error
		if want[i] == nil && err != nil || want[i] != nil && (!errors.As(err, &ke) || ke != want[i]) {
			t.Errorf("change %d (%s): error %v, want %v", i, changes[i].Topic, err, want[i])
		}
	}
	// Topics with a valid count are admitted once each, with the
	// partitions they add.
	if wantAsked := []int{0, 2, 3, 1, 4, 3, 5, 1}; !slices.Equal(asked, wantAsked) {
		t.Errorf("admit asked (change, added) %v, want %v", asked, wantAsked)
	}
	for name, n := range map[string]int{"x": 3, "y": 2, "z": 1, "q": 1} {
		if info, ok := c.Topic(name); !ok || len(info.Partitions) != n {
			t.Errorf("topic %s: %d partitions, want %d", name, len(info.Partitions), n)
		}
	}
	// One transaction: every new partition key has the same revision.
	var revs []int64
	for _, key := range []string{c.ks.partition("x", 1), c.ks.partition("x", 2), c.ks.partition("y", 1)} {
		resp, err := c.client.Get(ctxT(t), key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s: %v", key, err)
		}
		revs = append(revs, resp.Kvs[0].ModRevision)
	}
	if revs[0] != revs[1] || revs[1] != revs[2] {
		t.Errorf("new partitions written at revisions %v, want one", revs)
	}
	info, _ := c.Topic("y")
	requirePartition(t, info.Partitions[1], 3, []int32{3, 1}, []int32{3, 1}, 0, 0)

	// More than 10,000 new partitions in one request: the topic that
	// crosses the bound is refused, the others go on (validated only here).
	errs = c.CreatePartitionsBatch(ctxT(t), []PartitionsChange{
		{Topic: "x", Count: 6003}, {Topic: "z", Count: 6001}, {Topic: "q", Count: 4001},
	}, true, nil)
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("validate only within the bound: %v", errs)
	}
	requireCode(t, errs[1], kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
	if resp, err := c.client.Get(ctxT(t), c.ks.partition("x", 3), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("validate only wrote partitions (%v)", err)
	}
}
