package broker_test

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeCluster: cluster id, controller and brokers; the controller
// endpoint type is refused as a Kafka broker refuses it.
func TestDescribeCluster(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ClusterID != srv.ClusterID() || resp.ControllerID != srv.NodeID() ||
		len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != srv.NodeID() || resp.ClusterAuthorizedOperations != 8096 {
		t.Fatalf("describe cluster: %+v", resp)
	}
	req = kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2
	if resp, err = req.RequestWith(ctxFor(t), cl); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.MismatchedEndpointType.Code || resp.ClusterAuthorizedOperations != math.MinInt32 {
		t.Fatalf("controller endpoint type: %+v", resp)
	}
}

// TestDescribeTopicPartitionsCursor: partitions come in topic order, at most
// the limit per response, and the cursor continues where the last one ended.
func TestDescribeTopicPartitionsCursor(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "dtp-b", 3, nil)
	createTopic(t, cl, "dtp-a", 5, nil)

	var got []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 10 {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range []string{"dtp-b", "dtp-a", "dtp-missing"} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit = 3
		req.Cursor = cursor
		resp, err := req.RequestWith(ctxFor(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				got = append(got, *rt.Topic+":"+kerr.ErrorForCode(rt.ErrorCode).Error())
				continue
			}
			for _, p := range rt.Partitions {
				if p.LeaderID != srv.NodeID() || len(p.Replicas) != 1 || p.EligibleLeaderReplicas == nil {
					t.Errorf("%s-%d: %+v", *rt.Topic, p.Partition, p)
				}
				got = append(got, *rt.Topic+"-"+string(rune('0'+p.Partition)))
			}
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []string{"dtp-a-0", "dtp-a-1", "dtp-a-2", "dtp-a-3", "dtp-a-4", "dtp-b-0", "dtp-b-1", "dtp-b-2",
		"dtp-missing:" + kerr.UnknownTopicOrPartition.Error()}
	if len(got) != len(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v\nwant %v", got, want)
		}
	}

	// A cursor on a topic the request does not name is INVALID_REQUEST.
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "dtp-b"
	req.Topics = append(req.Topics, rt)
	req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-a"}
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("cursor outside the topics: %+v", resp.Topics)
	}
}

// TestDescribeLogDirsAndEpochs: the log dir with its partitions' sizes and
// the volume's space; OffsetForLeaderEpoch for the current epoch, an unknown
// one and a stale current_leader_epoch; no reassignments in progress.
func TestDescribeLogDirsAndEpochs(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("dirs"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "dirs", 2, nil)
	for range 10 {
		if err := cl.ProduceSync(ctxFor(t), &kgo.Record{Value: []byte("value"), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	dirs, err := adm.DescribeAllLogDirs(ctxFor(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	dirs.Each(func(d kadm.DescribedLogDir) {
		n++
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Errorf("log dir %s: %+v", d.Dir, d)
		}
		p0, ok0 := d.Topics.Lookup("dirs", 0)
		p1, ok1 := d.Topics.Lookup("dirs", 1)
		if !ok0 || !ok1 || p0.Size <= 0 || p1.Size != 0 || p0.OffsetLag != 0 || p0.IsFuture {
			t.Errorf("partitions in %s: %+v %+v", d.Dir, p0, p1)
		}
	})
	if n != 1 {
		t.Fatalf("%d log dirs", n)
	}
	some, err := adm.DescribeAllLogDirs(ctxFor(t), kadm.TopicsSet{"dirs": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	some.Each(func(d kadm.DescribedLogDir) {
		if _, ok := d.Topics.Lookup("dirs", 0); ok || len(d.Topics) != 1 {
			t.Errorf("filtered log dir lists %v", d.Topics)
		}
	})

	md, err := adm.Metadata(ctxFor(t), "dirs")
	if err != nil {
		t.Fatal(err)
	}
	epoch := md.Topics["dirs"].Partitions[0].LeaderEpoch
	var req kadm.OffsetForLeaderEpochRequest
	req.Add("dirs", 0, epoch)
	req.Add("dirs", 1, epoch+1)
	res, err := adm.OffsetForLeaderEpoch(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["dirs"][0]; r.Err != nil || r.LeaderEpoch != epoch || r.EndOffset != 10 {
		t.Errorf("current epoch: %+v", r)
	}
	if r := res["dirs"][1]; r.Err != nil || r.LeaderEpoch != -1 || r.EndOffset != -1 {
		t.Errorf("future epoch: %+v", r)
	}
	raw := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "dirs"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = epoch+1, epoch
	rt.Partitions = append(rt.Partitions, rp)
	raw.Topics = append(raw.Topics, rt)
	resp, err := raw.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("current_leader_epoch above the leader's: %v", kerr.ErrorForCode(code))
	}

	reassigning, err := adm.ListPartitionReassignments(ctxFor(t), kadm.TopicsSet{"dirs": {0: {}, 1: {}}})
	if err != nil || len(reassigning) != 0 {
		t.Errorf("reassignments: %v %v", reassigning, err)
	}
	all := kmsg.NewPtrListPartitionReassignmentsRequest()
	lr, err := all.RequestWith(ctxFor(t), cl)
	if err != nil || lr.ErrorCode != 0 || len(lr.Topics) != 0 {
		t.Errorf("all reassignments: %+v %v", lr, err)
	}
}
