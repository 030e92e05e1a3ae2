package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInternalTopicsGuarded: a client cannot create __consumer_offsets with
// a shape other than the coordinator's, cannot delete it by name or by id
// (Kafka 4.4 deletes it; see DIFFERENCES.md), cannot produce to it; the
// topic and its partition count are unchanged afterwards.
func TestInternalTopicsGuarded(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close() // before t.TempDir goes: etcd exits the process when its WAL dir vanishes under it
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, name := range []string{"__consumer_offsets", "__transaction_state", "__share_group_state"} {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if got := resp.Topics[0].ErrorCode; got != kerr.InvalidRequest.Code || resp.Topics[0].ErrorMessage == nil {
			t.Fatalf("create %s with 1 partition, not compacted: code %d, want INVALID_REQUEST with a message", name, got)
		}
	}

	// The group coordinator creates the topic itself.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	fc.CoordinatorKeys = []string{"g"}
	if _, err := fc.RequestWith(ctx, cl); err != nil {
		t.Fatalf("find coordinator: %v", err)
	}
	td := describeOffsetsTopic(ctx, t, adm)
	parts := len(td.Partitions)
	if parts < 1 {
		t.Fatalf("__consumer_offsets not created by the coordinator: %+v", td)
	}

	// Creating it again is TOPIC_ALREADY_EXISTS, whatever the shape.
	cr, err := adm.CreateTopic(ctx, 1, 1, nil, "__consumer_offsets")
	if !errorIs(err, cr.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("create existing __consumer_offsets: %v %v, want TOPIC_ALREADY_EXISTS", err, cr.Err)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TopicNames = []string{"__consumer_offsets", "__transaction_state", "__share_group_state"}
	dresp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("delete by name: %v", err)
	}
	for _, r := range dresp.Topics {
		if r.ErrorCode != kerr.InvalidTopicException.Code || r.ErrorMessage == nil {
			t.Fatalf("delete %v by name: code %d, want INVALID_TOPIC_EXCEPTION with a message", r.Topic, r.ErrorCode)
		}
	}
	del = kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = td.ID
	del.Topics = append(del.Topics, dt)
	dresp, err = del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("delete by id: %v", err)
	}
	if r := dresp.Topics[0]; r.ErrorCode != kerr.InvalidTopicException.Code || r.Topic == nil || *r.Topic != "__consumer_offsets" {
		t.Fatalf("delete __consumer_offsets by id: code %d topic %v, want INVALID_TOPIC_EXCEPTION", r.ErrorCode, r.Topic)
	}

	pr := cl.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")})
	if err := pr.FirstErr(); !errorIs(err, nil, kerr.InvalidTopicException) {
		t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
	}

	after := describeOffsetsTopic(ctx, t, adm)
	if after.ID != td.ID || len(after.Partitions) != parts {
		t.Fatalf("__consumer_offsets changed: id %v -> %v, %d -> %d partitions", td.ID, after.ID, parts, len(after.Partitions))
	}
}

func describeOffsetsTopic(ctx context.Context, t *testing.T, adm *kadm.Client) kadm.TopicDetail {
	t.Helper()
	tds, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	td := tds["__consumer_offsets"]
	if td.Err != nil {
		t.Fatalf("describe __consumer_offsets: %v", td.Err)
	}
	return td
}

func errorIs(err, perTopic error, want *kerr.Error) bool {
	if err == nil {
		err = perTopic
	}
	return errors.Is(err, want)
}
