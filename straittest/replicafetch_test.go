package straittest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// TestNewTopicDoesNotWaitForParkedReplicaFetches: with
// replica.fetch.wait.max.ms at 25 s, the followers' fetches of an idle topic
// wait that long at its leaders; a topic created meanwhile is still
// replicated at once, because a fetcher cancels its parked fetch when
// partitions start following, so an acks=all produce to every partition of
// the new topic is answered within 10 s (in tens of milliseconds here). Without that, the new partitions'
// first fetches would wait for the parked ones to end.
func TestNewTopicDoesNotWaitForParkedReplicaFetches(t *testing.T) {
	c := straittest.StartCluster(t, 3,
		straittest.WithConfig("replica.fetch.wait.max.ms", "25000"),
		straittest.WithTopic("idle", 3, 3))
	for p := range int32(3) {
		c.WaitISR("idle", p, 3, 30*time.Second)
	}
	// Past the fetchers' following window (a second after partitions were
	// added, their fetches wait at most 50 ms): they now park for 25 s.
	time.Sleep(1500 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, "fresh"); err != nil {
		t.Fatalf("creating the topic: %v", err)
	}
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	began := time.Now()
	var recs []*kgo.Record
	for p := range int32(3) {
		recs = append(recs, &kgo.Record{Topic: "fresh", Partition: p, Value: []byte("v")})
	}
	// The client waits for a produce in flight whatever its context, so
	// the bound is checked after the answer.
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("acks=all produce to the new topic after %v: %v", time.Since(began), err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("acks=all produce to the new topic answered after %v, want the followers fetching it at once, not after their parked fetches", took)
	}
	t.Logf("acks=all produce to the new topic answered in %v", time.Since(began))
}
