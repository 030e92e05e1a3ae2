package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCreateTopicValidation(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	for _, name := range []string{"a_b", "existing"} {
		if _, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: name, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("x", 250)
	for _, tc := range []struct {
		name string
		req  CreateTopicRequest
		code *kerr.Error
		msg  string
	}{
		{"empty name", CreateTopicRequest{Name: "", NumPartitions: 1, ReplicationFactor: 1},
			kerr.InvalidTopicException, "Topic name is invalid: the empty string is not allowed"},
		{"dot", CreateTopicRequest{Name: ".", NumPartitions: 1, ReplicationFactor: 1},
			kerr.InvalidTopicException, "Topic name is invalid: '.' is not allowed"},
		{"dot dot", CreateTopicRequest{Name: "..", NumPartitions: 1, ReplicationFactor: 1},
			kerr.InvalidTopicException, "Topic name is invalid: '..' is not allowed"},
		{"too long", CreateTopicRequest{Name: long, NumPartitions: 1, ReplicationFactor: 1},
			kerr.InvalidTopicException, "Topic name is invalid: the length of '" + long + "' is longer than the max allowed length 249"},
		{"illegal char", CreateTopicRequest{Name: "a/b", NumPartitions: 1, ReplicationFactor: 1},
			kerr.InvalidTopicException, "Topic name is invalid: 'a/b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"collision", CreateTopicRequest{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1},
			kerr.InvalidTopicException, "Topic 'a.b' collides with existing topic: a_b"},
		{"exists", CreateTopicRequest{Name: "existing", NumPartitions: 1, ReplicationFactor: 1},
			kerr.TopicAlreadyExists, "Topic 'existing' already exists."},
		{"exists with collision chars", CreateTopicRequest{Name: "a_b", NumPartitions: 1, ReplicationFactor: 1},
			kerr.TopicAlreadyExists, "Topic 'a_b' already exists."},
		{"zero partitions", CreateTopicRequest{Name: "t", NumPartitions: 0, ReplicationFactor: 1},
			kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."},
		{"negative partitions", CreateTopicRequest{Name: "t", NumPartitions: -2, ReplicationFactor: 1},
			kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."},
		{"zero replication", CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 0},
			kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."},
		{"replication above brokers", CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 3},
			kerr.InvalidReplicationFactor, "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered."},
		{"too many partitions", CreateTopicRequest{Name: "t", NumPartitions: 10000, ReplicationFactor: 1},
			kerr.PolicyViolation, "Unable to perform excessively large batch operation."},
		{"manual with replication factor", CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: 1, Assignments: map[int32][]int32{0: {1}}},
			kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1."},
		{"manual with partition count", CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}}},
			kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1."},
		{"manual empty replicas", CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {}}},
			kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."},
		{"manual unknown broker", CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 7}}},
			kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker 7, but no such broker is registered."},
		{"manual duplicate broker", CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 1}}},
			kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker 1 more than once."},
		{"manual gap", CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 2: {1}}},
			kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreateTopic(ctxT(t), tc.req)
			requireCode(t, err, tc.code, tc.msg)
			if tc.req.Name != "existing" && tc.req.Name != "a_b" {
				if _, ok := c.Topic(tc.req.Name); ok {
					t.Fatal("a rejected topic was created")
				}
			}
		})
	}
	if got := len(c.Topics()); got != 2 {
		t.Fatalf("%d topics after rejected creations, want 2", got)
	}
}

func TestCreateTopicDefaultsAndManualAssignment(t *testing.T) {
	cfg := testConfig(t, 1)
	cfg.DefaultNumPartitions = 5
	c := startController(t, cfg)
	topic, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "defaults", NumPartitions: -1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(topic.Partitions) != 5 || len(topic.Partitions[0].Replicas) != 1 {
		t.Fatalf("defaults not applied: %+v", topic.Partitions)
	}
	topic, err = c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "manual", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{1: {1}, 0: {1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(topic.Partitions) != 2 || topic.Partitions[1].Leader != 1 {
		t.Fatalf("manual assignment: %+v", topic.Partitions)
	}
}

func TestValidateTopicName(t *testing.T) {
	for name, valid := range map[string]bool{
		"orders": true, "a.b_c-D9": true, strings.Repeat("x", 249): true, "...": true,
		"": false, ".": false, "..": false, strings.Repeat("x", 250): false, "é": false, "a b": false, "a/b": false,
	} {
		if got := validateTopicName(name) == ""; got != valid {
			t.Errorf("validateTopicName(%q) valid = %v, want %v", name, got, valid)
		}
	}
}

func TestExportedValidateTopicName(t *testing.T) {
	if err := ValidateTopicName("ok.name"); err != nil {
		t.Fatal(err)
	}
	requireCode(t, ValidateTopicName(".."), kerr.InvalidTopicException, "Topic name is invalid: '..' is not allowed")
}
