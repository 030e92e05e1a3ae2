package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreatePartitionsGrowsTopic: kadm grows a topic; validate_only changes
// nothing; the new partitions have logs on disk as soon as the response
// arrives, Metadata shows them, records go to and come from them, and the
// count survives a restart.
func TestCreatePartitionsGrowsTopic(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir)
	cl := newClient(t, srv, kgo.DefaultProduceTopic("grow"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	createTopic(t, cl, "grow", 1, nil)
	produceAll(t, cl, []*kgo.Record{{Value: []byte("p0")}})

	vr, err := adm.ValidateUpdatePartitions(ctx, 5, "grow")
	if err != nil || vr["grow"].Err != nil {
		t.Fatalf("validate only: %v %v", err, vr["grow"].Err)
	}
	if n := partitionCount(t, adm, "grow"); n != 1 {
		t.Fatalf("validate only changed the topic: %d partitions", n)
	}

	res, err := adm.UpdatePartitions(ctx, 3, "grow")
	if err != nil || res["grow"].Err != nil {
		t.Fatalf("update partitions: %v %v", err, res["grow"].Err)
	}
	for _, p := range []string{"grow-1", "grow-2"} {
		if _, err := os.Stat(filepath.Join(dir, "logs", p)); err != nil {
			t.Errorf("log of the new partition: %v", err)
		}
	}
	if n := partitionCount(t, adm, "grow"); n != 3 {
		t.Fatalf("after growing to 3: %d partitions", n)
	}
	// kadm's CreatePartitions adds to the current count.
	if res, err := adm.CreatePartitions(ctx, 1, "grow"); err != nil || res["grow"].Err != nil {
		t.Fatalf("add one partition: %v %v", err, res["grow"].Err)
	}
	if n := partitionCount(t, adm, "grow"); n != 4 {
		t.Fatalf("after adding one: %d partitions", n)
	}
	var recs []*kgo.Record
	for p := int32(1); p < 4; p++ {
		recs = append(recs, &kgo.Record{Partition: p, Value: []byte{'p', byte('0' + p)}})
	}
	// A fresh client: cl's cached metadata still shows one partition.
	produceAll(t, newClient(t, srv, kgo.DefaultProduceTopic("grow"), kgo.RecordPartitioner(kgo.ManualPartitioner())), recs)
	got := consumeAll(t, srv, "grow", 4)
	for _, r := range got {
		if want := []byte{'p', byte('0' + r.Partition)}; string(r.Value) != string(want) || r.Offset != 0 {
			t.Errorf("partition %d offset %d: %q", r.Partition, r.Offset, r.Value)
		}
	}

	srv.Close()
	srv = startBroker(t, dir)
	defer srv.Close()
	adm = kadm.NewClient(newClient(t, srv))
	if n := partitionCount(t, adm, "grow"); n != 4 {
		t.Fatalf("after a restart: %d partitions", n)
	}
	consumeAll(t, srv, "grow", 4)
}

// TestCreatePartitionsErrors: Kafka's codes and messages for counts that are
// no increase, wrong assignments, unknown and duplicate topics, at every
// version.
func TestCreatePartitionsErrors(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	ctx := context.Background()
	createTopic(t, cl, "cp", 2, nil)

	topic := func(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		if assignment != nil {
			rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
			for _, a := range assignment {
				rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
			}
		}
		return rt
	}
	type want struct {
		code *kerr.Error
		msg  string // "-": null
	}
	cases := []struct {
		name string
		rt   kmsg.CreatePartitionsRequestTopic
		want want
	}{
		{"same count", topic("cp", 2), want{kerr.InvalidPartitions, "Topic already has 2 partition(s)."}},
		{"decrease", topic("cp", 1), want{kerr.InvalidPartitions, "The topic cp currently has 2 partition(s); 1 would not be an increase."}},
		{"unknown topic", topic("nope", 3), want{kerr.UnknownTopicOrPartition, "-"}},
		{"too few assignments", topic("cp", 4, []int32{1}),
			want{kerr.InvalidReplicaAssignment, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."}},
		{"empty assignment list", topic("cp", 3, [][]int32{}...),
			want{kerr.InvalidReplicaAssignment, "Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified."}},
		{"unknown broker", topic("cp", 3, []int32{7}), want{kerr.InvalidReplicaAssignment, ""}},
		{"replication factor differs", topic("cp", 3, []int32{1, 1}), want{kerr.InvalidReplicaAssignment, ""}},
	}
	for v := int16(0); v <= 3; v++ {
		for _, c := range cases {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.Version = v
			req.TimeoutMillis = 5000
			req.Topics = []kmsg.CreatePartitionsRequestTopic{c.rt}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != c.rt.Topic {
				t.Fatalf("v%d %s: topics %+v", v, c.name, resp.Topics)
			}
			r := resp.Topics[0]
			if err := kerr.ErrorForCode(r.ErrorCode); !errors.Is(err, c.want.code) {
				t.Errorf("v%d %s: got %v, want %v", v, c.name, err, c.want.code)
			}
			switch {
			case c.want.msg == "-" && r.ErrorMessage != nil:
				t.Errorf("v%d %s: message %q, want null", v, c.name, *r.ErrorMessage)
			case c.want.msg == "" && r.ErrorMessage == nil:
				t.Errorf("v%d %s: no message", v, c.name)
			case c.want.msg != "" && c.want.msg != "-" && (r.ErrorMessage == nil || *r.ErrorMessage != c.want.msg):
				t.Errorf("v%d %s: message %q, want %q", v, c.name, deref(r.ErrorMessage), c.want.msg)
			}
		}
	}

	// A duplicated name: one INVALID_REQUEST result for it, first; the
	// other topic is still grown (by the explicit assignment).
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 5000
	req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("cp", 3, []int32{1}), topic("dup", 5), topic("dup", 6)}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 {
		t.Fatalf("duplicates: %+v", resp.Topics)
	}
	if r := resp.Topics[0]; r.Topic != "dup" || r.ErrorCode != kerr.InvalidRequest.Code || deref(r.ErrorMessage) != "Duplicate topic name." {
		t.Errorf("duplicate topic: %+v", r)
	}
	if r := resp.Topics[1]; r.Topic != "cp" || r.ErrorCode != 0 || r.ErrorMessage != nil {
		t.Errorf("grow with an assignment: %+v", r)
	}
	if n := partitionCount(t, kadm.NewClient(cl), "cp"); n != 3 {
		t.Errorf("after growing with an assignment: %d partitions", n)
	}
}

func partitionCount(t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	td, err := adm.ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		t.Fatalf("describe %s: %v", topic, d.Err)
	}
	return len(d.Partitions)
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// TestCreatePartitionsQuotaPerTopic: controller_mutation_rate is taken per
// topic as the controller plans it (Kafka's applyPartitionChangeQuota, after
// the topic and count are validated): in one strict (v3) request the first
// topic spends the tokens, into debt, and the next is refused with
// THROTTLING_QUOTA_EXCEEDED, while an unknown topic still answers
// UNKNOWN_TOPIC_OR_PARTITION; the topics that pass are created.
func TestCreatePartitionsQuotaPerTopic(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newClient(t, srv, kgo.ClientID("grower"))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "qa", 1, nil)
	createTopic(t, cl, "qb", 1, nil)
	r, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("grower")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}},
	}})
	if err != nil || r[0].Err != nil {
		t.Fatalf("set quota: %v %+v", err, r)
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(3)
	req.TimeoutMillis = 10000
	for _, tc := range []struct {
		name  string
		count int32
	}{{"qa", 13}, {"nope", 2}, {"qb", 2}} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = tc.name, tc.count
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if codes["qa"] != 0 || codes["nope"] != kerr.UnknownTopicOrPartition.Code || codes["qb"] != kerr.ThrottlingQuotaExceeded.Code {
		t.Errorf("codes %v, want qa created, nope UNKNOWN_TOPIC_OR_PARTITION, qb THROTTLING_QUOTA_EXCEEDED", codes)
	}
	if resp.ThrottleMillis <= 0 {
		t.Errorf("throttle %d ms, want the time to repay the debt", resp.ThrottleMillis)
	}
	if n := partitionCount(t, adm, "qa"); n != 13 {
		t.Errorf("qa: %d partitions, want 13", n)
	}
	if n := partitionCount(t, adm, "qb"); n != 1 {
		t.Errorf("qb: %d partitions, want 1", n)
	}
}
