package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestDeleteTopicDisabled: with delete.topic.enable=false, DeleteTopics
// answers TOPIC_DELETION_DISABLED for every topic named (INVALID_REQUEST
// before v3, as Kafka's ControllerApis), by name or by id, existing or
// not, and the topic stays.
func TestDeleteTopicDisabled(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "delete.topic.enable", "false")
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "kept", 1, nil)
	ctx := context.Background()

	for _, version := range []int16{1, 2, 3, 5, 6} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(version)
		req.TimeoutMillis = 5000
		if version >= 6 {
			kept, missing := kmsg.NewDeleteTopicsRequestTopic(), kmsg.NewDeleteTopicsRequestTopic()
			kept.Topic, missing.Topic = kmsg.StringPtr("kept"), kmsg.StringPtr("missing")
			req.Topics = append(req.Topics, kept, missing)
		} else {
			req.TopicNames = []string{"kept", "missing"}
		}
		// The client sends its newest version unless told otherwise.
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(req.Key(), version)
		vcl := newClient(t, srv, kgo.MaxVersions(vs))
		resp, err := req.RequestWith(ctx, vcl)
		vcl.Close()
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		want := kerr.TopicDeletionDisabled.Code
		if version < 3 {
			want = kerr.InvalidRequest.Code
		}
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d (answered v%d): %d results: %+v", version, resp.GetVersion(), len(resp.Topics), resp)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != want || rt.Topic == nil {
				t.Fatalf("v%d: %v: code %d, want %d", version, rt.Topic, rt.ErrorCode, want)
			}
		}
	}

	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("kept")
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("the topic is gone: %+v", mresp.Topics)
	}
}
