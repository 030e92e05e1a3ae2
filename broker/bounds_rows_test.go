package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCommittedOffsetsSurviveInternalTopicAttacks is the acknowledged-data
// half of the internal-topics row ("committed offsets lost"): after
// DeleteTopics of __consumer_offsets by name and by id, a CreateTopics of
// it with one partition and a produce to it, a committed offset is still
// fetched, and still fetched after a restart (read back from the topic).
func TestCommittedOffsetsSurviveInternalTopicAttacks(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir)
	cl := newClient(t, srv)
	createTopic(t, cl, "data", 2, nil)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "data", Partition: 0, At: 7, LeaderEpoch: -1, Metadata: "m0"})
	offs.Add(kadm.Offset{Topic: "data", Partition: 1, At: 11, LeaderEpoch: -1, Metadata: "m1"})
	if r, err := adm.CommitOffsets(ctx, "g", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	check := func(adm *kadm.Client, when string) {
		t.Helper()
		got, err := adm.FetchOffsets(ctx, "g")
		if err != nil || got.Error() != nil {
			t.Fatalf("fetch offsets %s: %v %v", when, err, got.Error())
		}
		for p, want := range map[int32]int64{0: 7, 1: 11} {
			if o, ok := got.Lookup("data", p); !ok || o.At != want {
				t.Fatalf("offset of data/%d %s: %+v (found %v); want %d", p, when, o, ok, want)
			}
		}
	}

	td, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil || td["__consumer_offsets"].Err != nil {
		t.Fatalf("describe __consumer_offsets: %v", err)
	}
	adm.DeleteTopics(ctx, "__consumer_offsets") // refused (internal_topics_test.go asserts the codes)
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = td["__consumer_offsets"].ID
	del.Topics = []kmsg.DeleteTopicsRequestTopic{dt}
	del.RequestWith(ctx, cl)
	adm.CreateTopic(ctx, 1, 1, nil, "__consumer_offsets")
	check(adm, "after the deletion and creation attempts")

	srv.Close()
	srv = startBroker(t, dir)
	defer srv.Close()
	check(kadm.NewClient(newClient(t, srv)), "after a restart")
}
