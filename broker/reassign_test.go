package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// createAssignedTopic creates topic with an explicit replica assignment (one
// list per partition) and waits until every assigned broker has opened its
// replica.
func (c *replicatedCluster) createAssignedTopic(topic string, assignment [][]int32, configs map[string]string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), c.client())
	if err != nil {
		c.t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		c.t.Fatalf("create topic %s: %v: %s", topic, err, *resp.Topics[0].ErrorMessage)
	}
	waitFor(c.t, 10*time.Second, "replicas of "+topic, func() bool {
		for p, replicas := range assignment {
			for _, id := range replicas {
				if c.partitionOn(int(id-1), topic, int32(p)) == nil {
					return false
				}
			}
		}
		return true
	})
}

// partitionMetadata is topic-p as broker i's Metadata shows it (a request
// to that broker: kadm's Metadata may answer from the client's cache).
func (c *replicatedCluster) partitionMetadata(i int, topic string, p int32) (kmsg.MetadataResponseTopicPartition, bool) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[i]))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return kmsg.MetadataResponseTopicPartition{}, false
	}
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		for _, rp := range t.Partitions {
			if t.Topic != nil && *t.Topic == topic && rp.Partition == p && rp.ErrorCode == 0 {
				return rp, true
			}
		}
	}
	return kmsg.MetadataResponseTopicPartition{}, false
}

// reassignmentListed reports whether ListPartitionReassignments shows
// topic-p, and how.
func reassignmentListed(t *testing.T, adm *kadm.Client, topic string, p int32) (kadm.ListPartitionReassignmentsResponse, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {p: {}}})
	if err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	r, ok := list[topic][p]
	return r, ok
}

func sortedCopy(s []int32) []int32 { return slices.Sorted(slices.Values(s)) }

// TestReassignPartitionUnderLoad moves a partition of an RF=3 topic from
// brokers {1,2,3} to {2,3,4}, its leader (broker 1) included, while an
// idempotent acks=all producer keeps writing: the reassignment completes
// (broker 4 joins the ISR, broker 1 leaves and deletes its replica), the
// producer follows the leader to its new broker, and every acknowledged
// record is read back exactly once, in order.
func TestReassignPartitionUnderLoad(t *testing.T) {
	c := startReplicatedCluster(t, 4, nil)
	c.createAssignedTopic("moving", [][]int32{{1, 2, 3}, {2, 3, 1}},
		map[string]string{"min.insync.replicas": "2", "file.delete.delay.ms": "0"})
	adm := kadm.NewClient(c.client())

	// A short metadata min age: Strait's Produce responses do not carry the
	// new leader (KIP-951's current_leader), so after NOT_LEADER_OR_FOLLOWER
	// kgo waits for a metadata refresh, which its default 5 s min age holds
	// back.
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("moving"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1<<30),
		kgo.RetryTimeout(60*time.Second), kgo.ProducerLinger(time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	var mu sync.Mutex
	acked := map[int32][]int{}
	ackedCount := func(p int32) int { mu.Lock(); defer mu.Unlock(); return len(acked[p]) }
	// A backlog of 10 MB for broker 4 to copy, so the reassignment stays in
	// progress for a while under the producer; the keys are padding, the
	// values the sequence numbers checked at the end.
	const preload = 20000
	pad := []byte(strings.Repeat("k", 500))
	var backlog []*kgo.Record
	for seq := range preload {
		backlog = append(backlog, &kgo.Record{Partition: 0, Key: pad, Value: fmt.Appendf(nil, "%d", seq)})
	}
	if err := cl.ProduceSync(context.Background(), backlog...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for seq := range preload {
		acked[0] = append(acked[0], seq)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range int32(2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := 0
			if p == 0 {
				first = preload
			}
			for seq := first; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				r := &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d", seq)}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Errorf("partition %d seq %d: %v", p, seq, err)
					return
				}
				mu.Lock()
				acked[p] = append(acked[p], seq)
				mu.Unlock()
			}
		}()
	}
	stopProducing := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopProducing()
	waitFor(t, 10*time.Second, "the producer to get going", func() bool { return ackedCount(0) >= preload+50 })

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, []int32{2, 3, 4})
	res, err := adm.AlterPartitionAssignments(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["moving"][0]; r.Err != nil {
		t.Fatalf("reassigning moving-0: %v %s", r.Err, r.ErrMessage)
	}
	atAlter := ackedCount(0)
	// Usually still in progress here; broker 4 may have caught up already.
	if r, ok := reassignmentListed(t, adm, "moving", 0); ok {
		if !slices.Equal(r.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(r.AddingReplicas, []int32{4}) ||
			!slices.Equal(r.RemovingReplicas, []int32{1}) {
			t.Fatalf("ongoing reassignment listed as %+v, want replicas [2 3 4 1] adding [4] removing [1]", r)
		}
	} else {
		t.Log("the reassignment had completed by the first listing")
	}

	waitFor(t, 30*time.Second, "the reassignment to complete", func() bool {
		_, ok := reassignmentListed(t, adm, "moving", 0)
		return !ok
	})
	// Every broker's Metadata shows the new replicas, broker 4 in the ISR.
	for i := range c.srvs {
		var d kmsg.MetadataResponseTopicPartition
		waitFor(t, 10*time.Second, fmt.Sprintf("broker %d's metadata to show moving-0 on [2 3 4]", i+1), func() bool {
			var ok bool
			d, ok = c.partitionMetadata(i, "moving", 0)
			return ok && slices.Equal(d.Replicas, []int32{2, 3, 4}) && slices.Equal(sortedCopy(d.ISR), []int32{2, 3, 4}) &&
				slices.Contains(d.Replicas, d.Leader)
		})
		if i == 0 {
			t.Logf("moving-0 after the reassignment: leader %d (epoch %d), ISR %v", d.Leader, d.LeaderEpoch, d.ISR)
		}
	}
	if d, _ := c.partitionMetadata(1, "moving", 1); !slices.Equal(d.Replicas, []int32{2, 3, 1}) {
		t.Errorf("moving-1 replicas %v, want [2 3 1] (not reassigned)", d.Replicas)
	}

	// Broker 1 stopped replicating moving-0 and deleted its directory
	// (file.delete.delay.ms=0: the renamed -delete directory goes at once).
	dir1 := c.cfgs[0].Log.Dirs[0]
	waitFor(t, 10*time.Second, "broker 1 to delete its replica of moving-0", func() bool {
		if c.partitionOn(0, "moving", 0) != nil {
			return false
		}
		entries, err := os.ReadDir(dir1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() == "moving-0" || strings.HasPrefix(e.Name(), "moving-0.") {
				return false
			}
		}
		return true
	})
	if _, err := os.Stat(filepath.Join(dir1, "moving-1")); err != nil {
		t.Errorf("broker 1 lost its replica of moving-1: %v", err)
	}

	// The producer carries on with the new leader.
	done := ackedCount(0)
	waitFor(t, 20*time.Second, "acknowledged writes to the new leader", func() bool { return ackedCount(0) >= done+50 })
	stopProducing()
	if t.Failed() {
		t.FailNow()
	}
	mu.Lock()
	total := len(acked[0]) + len(acked[1])
	mu.Unlock()
	t.Logf("acknowledged %d records to moving-0 (%d before the reassignment, %d once it completed) and %d to moving-1",
		len(acked[0]), atAlter, done, len(acked[1]))

	got := consumeAll(t, c.client(kgo.ConsumeTopics("moving"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), total)
	for p := range int32(2) {
		if len(got[p]) != len(acked[p]) {
			t.Errorf("partition %d: read %d records, %d acknowledged", p, len(got[p]), len(acked[p]))
		}
		for j, v := range got[p] {
			if want := fmt.Sprint(j); v != want {
				t.Fatalf("partition %d offset %d: %q, want %q (lost, doubled or reordered records)", p, j, v, want)
			}
		}
	}

	// The three replicas of moving-0 hold the same log, broker 4's copied
	// from scratch.
	waitFor(t, 10*time.Second, "the replicas of moving-0 to agree", func() bool {
		for _, i := range []int{1, 2, 3} {
			p := c.partitionOn(i, "moving", 0)
			if p == nil || p.Log().LogEndOffset() != int64(len(acked[0])) {
				return false
			}
		}
		return true
	})
	want := readLogBytes(t, c.partitionOn(1, "moving", 0))
	for _, i := range []int{2, 3} {
		if got := readLogBytes(t, c.partitionOn(i, "moving", 0)); !slices.Equal(got, want) {
			t.Errorf("broker %d's moving-0 differs from broker 2's (%d vs %d bytes)", i+1, len(got), len(want))
		}
	}
}

// TestReassignCancelAndErrors: a reassignment that cannot complete (broker
// 4 cannot create its replica) stays listed until cancelled with null
// replicas, which restores the original replicas; and the errors are
// Kafka's, with its messages, for v0 and v1.
func TestReassignCancelAndErrors(t *testing.T) {
	c := startReplicatedCluster(t, 4, nil)
	c.createAssignedTopic("stuck", [][]int32{{1, 2, 3}}, nil)
	adm := kadm.NewClient(c.client())
	// A file where broker 4 would put the replica's directory: its log
	// cannot be opened, so broker 4 never catches up.
	if err := os.WriteFile(filepath.Join(c.cfgs[3].Log.Dirs[0], "stuck-0"), []byte("in the way\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("stuck"))
	produce := func(vals ...string) {
		t.Helper()
		for _, v := range vals {
			if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	produce("a", "b")

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("stuck", 0, []int32{2, 3, 4})
	res, err := adm.AlterPartitionAssignments(context.Background(), req)
	if err != nil || res["stuck"][0].Err != nil {
		t.Fatalf("reassign: %v %+v", err, res)
	}
	time.Sleep(time.Second) // broker 4 tries and fails
	r, ok := reassignmentListed(t, adm, "stuck", 0)
	if !ok || !slices.Equal(r.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(r.AddingReplicas, []int32{4}) ||
		!slices.Equal(r.RemovingReplicas, []int32{1}) {
		t.Fatalf("listed %v %+v, want replicas [2 3 4 1] adding [4] removing [1]", ok, r)
	}
	if d, _ := c.partitionMetadata(0, "stuck", 0); !slices.Equal(d.Replicas, []int32{2, 3, 4, 1}) || slices.Contains(d.ISR, 4) {
		t.Fatalf("metadata during the reassignment: replicas %v ISR %v, want [2 3 4 1] without 4 in the ISR", d.Replicas, d.ISR)
	}
	produce("c") // acks=all waits for the ISR, which broker 4 is not in

	// Cancel: the replicas being added leave, those being removed stay. As
	// in Kafka's PartitionReassignmentRevert the order is that of the
	// reassignment's replica list, so [2 3 1] rather than [1 2 3].
	var cancelReq kadm.AlterPartitionAssignmentsReq
	cancelReq.CancelAssign("stuck", 0)
	res, err = adm.AlterPartitionAssignments(context.Background(), cancelReq)
	if err != nil || res["stuck"][0].Err != nil {
		t.Fatalf("cancel: %v %+v", err, res)
	}
	if _, ok := reassignmentListed(t, adm, "stuck", 0); ok {
		t.Fatal("cancelled reassignment still listed")
	}
	for i := range c.srvs {
		var d kmsg.MetadataResponseTopicPartition
		waitFor(t, 10*time.Second, fmt.Sprintf("broker %d's metadata to show the cancellation", i+1), func() bool {
			var ok bool
			d, ok = c.partitionMetadata(i, "stuck", 0)
			return ok && slices.Equal(d.Replicas, []int32{2, 3, 1}) && slices.Equal(sortedCopy(d.ISR), []int32{1, 2, 3})
		})
		// Broker 1 normally keeps leading; a loaded machine can let its
		// session lapse, which moves leadership within the ISR.
		if !slices.Contains([]int32{1, 2, 3}, d.Leader) {
			t.Errorf("broker %d: leader %d after the cancellation, want one of [1 2 3]", i+1, d.Leader)
		}
	}
	// Cancelling again: nothing to cancel, and no message beside the code.
	res, err = adm.AlterPartitionAssignments(context.Background(), cancelReq)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["stuck"][0]; !errors.Is(r.Err, kerr.NoReassignmentInProgress) || r.ErrMessage != "" {
		t.Errorf("second cancel: %v %q, want NO_REASSIGNMENT_IN_PROGRESS without a message", r.Err, r.ErrMessage)
	}
	produce("d")
	got := consumeAll(t, c.client(kgo.ConsumeTopics("stuck"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 4)
	if !slices.Equal(got[0], []string{"a", "b", "c", "d"}) {
		t.Errorf("read back %q, want a b c d", got[0])
	}

	// Errors, one result per mention in request order, at v1 and at v0.
	type want struct {
		topic     string
		partition int32
		code      *kerr.Error
		msg       string
	}
	errorsReq := func(allowRF bool) (*kmsg.AlterPartitionAssignmentsRequest, []want) {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.TimeoutMillis = 10000
		req.AllowReplicationFactorChange = allowRF
		add := func(topic string, p int32, replicas []int32) {
			if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != topic {
				rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				rt.Topic = topic
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition, rp.Replicas = p, replicas
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		add("nope", 0, []int32{1})
		add("stuck", 7, []int32{1})
		add("stuck", 0, []int32{1, 99})
		add("stuck", 0, []int32{})
		add("stuck", 0, []int32{1, 2, 1})
		add("stuck", 0, []int32{1, 2})
		wants := []want{
			{"nope", 0, kerr.UnknownTopicOrPartition, "Unable to find a topic named nope."},
			{"stuck", 7, kerr.UnknownTopicOrPartition, "Unable to find partition stuck:7."},
			{"stuck", 0, kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker 99, but no such broker is registered."},
			{"stuck", 0, kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."},
			{"stuck", 0, kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker 1 more than once."},
			{"stuck", 0, kerr.InvalidReplicationFactor, "The replication factor is changed from 3 to 2"},
		}
		return req, wants
	}
	check := func(name string, cl *kgo.Client, allowRF bool, wantVersion int16) {
		t.Helper()
		req, wants := errorsReq(allowRF)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if req.GetVersion() != wantVersion {
			t.Fatalf("%s: sent v%d, want v%d", name, req.GetVersion(), wantVersion)
		}
		if resp.ErrorCode != 0 || resp.ErrorMessage != nil {
			t.Errorf("%s: top-level error %d %v", name, resp.ErrorCode, resp.ErrorMessage)
		}
		if wantVersion >= 1 && resp.AllowReplicationFactorChange != allowRF {
			t.Errorf("%s: allow_replication_factor_change echoed as %v", name, resp.AllowReplicationFactorChange)
		}
		var gotAll []want
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				w := want{topic: rt.Topic, partition: rp.Partition, code: nil}
				if rp.ErrorCode != 0 {
					w.code = kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error)
				}
				if rp.ErrorMessage != nil {
					w.msg = *rp.ErrorMessage
				}
				gotAll = append(gotAll, w)
			}
		}
		if allowRF { // the last target shrinks the partition: allowed
			wants[len(wants)-1].code, wants[len(wants)-1].msg = nil, ""
		}
		if len(gotAll) != len(wants) {
			t.Fatalf("%s: %d results, want %d: %+v", name, len(gotAll), len(wants), gotAll)
		}
		for i := range wants {
			if gotAll[i] != wants[i] {
				t.Errorf("%s: result %d = %+v, want %+v", name, i, gotAll[i], wants[i])
			}
		}
	}
	check("v1 disallowing a replication factor change", c.client(), false, 1)
	// v0 always allows it: [1 2] is accepted and completes at once (both in
	// the ISR); put the third replica back afterwards.
	check("v0", c.client(kgo.MaxVersions(kversion.V4_0_0())), true, 0)
	waitFor(t, 10*time.Second, "stuck-0 on [1 2]", func() bool {
		d, ok := c.partitionMetadata(0, "stuck", 0)
		return ok && slices.Equal(d.Replicas, []int32{1, 2})
	})

	// kadm's ForbidAlterRf is v1 with allow_replication_factor_change false.
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign("stuck", 0, []int32{1, 2, 3})
	res, err = adm.AlterPartitionAssignments(kadm.ForbidAlterRf(context.Background()), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["stuck"][0]; !errors.Is(r.Err, kerr.InvalidReplicationFactor) || r.ErrMessage != "The replication factor is changed from 2 to 3" {
		t.Errorf("ForbidAlterRf growing the partition: %v %q", r.Err, r.ErrMessage)
	}

	// An empty request writes nothing: Kafka's default response.
	empty := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	resp, err := empty.RequestWith(context.Background(), c.client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ErrorMessage == nil || *resp.ErrorMessage != "" || len(resp.Topics) != 0 ||
		!resp.AllowReplicationFactorChange {
		t.Errorf("empty request: %+v", resp)
	}
}
