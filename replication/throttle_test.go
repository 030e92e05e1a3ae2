package replication

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
)

// throttledTopic publishes topic with one partition per replica list, led by
// the first replica, all in sync, and the given topic configs.
func (e *testEnv) throttledTopic(name string, configs map[string]string, replicas ...[]int32) {
	t := controller.TopicInfo{Name: name, ID: [16]byte{byte(len(name)), name[0], 2}, Configs: configs}
	for i, r := range replicas {
		t.Partitions = append(t.Partitions, controller.PartitionInfo{
			Partition: int32(i), Replicas: r, Leader: r[0], LeaderEpoch: 1, ISR: slices.Clone(r), PartitionEpoch: 1,
		})
	}
	e.meta.set(t)
}

// TestLeaderThrottle: the topic's throttled replica lists mark this broker's
// replicas ("partition:broker" entries naming node 1, or "*"), follow
// config changes, and the leader withholds records only from a replica
// outside the ISR, and only once the leader quota is exceeded.
func TestLeaderThrottle(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.throttledTopic("lt", map[string]string{
		"leader.replication.throttled.replicas":   "0:1, 1:2",
		"follower.replication.throttled.replicas": "*",
	}, []int32{1, 2}, []int32{1, 2})
	p0, p1 := e.m.Partition("lt", 0), e.m.Partition("lt", 1)
	if !p0.LeaderThrottled() || p1.LeaderThrottled() {
		t.Fatalf("leader throttled: partition 0 %v (want true), partition 1 %v (want false: 1:2 names broker 2)",
			p0.LeaderThrottled(), p1.LeaderThrottled())
	}
	if !p0.FollowerThrottled() || !p1.FollowerThrottled() {
		t.Fatal("'*' does not throttle every partition on the follower side")
	}

	// Partition 0: broker 2 leaves the ISR.
	e.meta.setPartition("lt", 0, func(pi *controller.PartitionInfo) { pi.ISR = []int32{1}; pi.PartitionEpoch++ })
	if p0.ShouldLeaderThrottle(2) {
		t.Fatal("throttled without a rate set")
	}
	e.m.leaderQuota.SetBound(1000)
	p0.RecordLeaderBytes(100_000)
	p1.RecordLeaderBytes(100_000) // not throttled: not counted
	if got := e.m.leaderQuota.Rate(e.clock.Now()); got != 100_000.0/10 {
		t.Fatalf("leader quota measures %v B/s, want %v (100,000 bytes over the 10 s minimum window)", got, 100_000.0/10)
	}
	if !p0.ShouldLeaderThrottle(2) {
		t.Fatal("a throttled replica outside the ISR is not throttled over the quota")
	}
	if p0.ShouldLeaderThrottle(1) || p1.ShouldLeaderThrottle(2) {
		t.Fatal("an in-sync replica, or a partition not throttled, is throttled")
	}
	// The windows pass: the rate decays below the bound.
	e.clock.Advance(12 * time.Second)
	if p0.ShouldLeaderThrottle(2) {
		t.Fatal("still throttled once the samples expired")
	}

	// Removing the lists removes the throttle.
	e.throttledTopic("lt", nil, []int32{1, 2}, []int32{1, 2})
	if p0.LeaderThrottled() || p0.FollowerThrottled() {
		t.Fatal("the throttle outlived its topic configs")
	}
}

// TestFollowerThrottle: once the follower quota is exceeded, a throttled
// partition that is behind the leader's high watermark is left out of the
// fetches, while a throttled one that is in sync is still fetched; lifting
// the bound brings it back.
func TestFollowerThrottle(t *testing.T) {
	batch := testBatch(3)
	var (
		mu   sync.Mutex
		last []int32 // the partitions of the latest fetch
		n    int
	)
	client := clientFunc(func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
		switch r := req.(type) {
		case *kmsg.OffsetForLeaderEpochRequest:
			resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
			for _, rt := range r.Topics {
				st := kmsg.NewOffsetForLeaderEpochResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
					sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, rp.LeaderEpoch, 0
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil
		case *kmsg.FetchRequest:
			var parts []int32
			resp := echoFetch(r, func(_ *kmsg.FetchRequestTopic, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition) {
				parts = append(parts, rp.Partition)
				// Partition 0 lags far behind; partition 1 is caught up
				// by its first fetch.
				sp.HighWatermark = 1000
				if rp.Partition == 1 {
					sp.HighWatermark = 3
				}
				if rp.FetchOffset == 0 {
					sp.RecordBatches = batch
				}
			})
			slices.Sort(parts)
			mu.Lock()
			last, n = parts, n+1
			mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
			return resp, nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e := newEnv(t, nil, client)
	e.throttledTopic("ft", map[string]string{"follower.replication.throttled.replicas": "0:1,1:1"}, []int32{2, 1}, []int32{2, 1})
	p0, p1 := e.m.Partition("ft", 0), e.m.Partition("ft", 1)
	waitUntil(t, "both partitions' first batch", func() bool {
		return p0.Log().LogEndOffset() == 3 && p1.Log().LogEndOffset() == 3
	})
	// The bytes of throttled partitions count with or without a bound.
	e.m.followerQuota.SetBound(1)
	if !e.m.followerQuota.Exceeded(e.clock.Now()) {
		t.Fatal("the follower quota (1 B/s) is not exceeded after fetching two batches")
	}
	fetchedOnly := func(want []int32) func() bool {
		mu.Lock()
		seen := n
		mu.Unlock()
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return n >= seen+2 && slices.Equal(last, want)
		}
	}
	waitUntil(t, "fetches of partition 1 alone (partition 0 lags and is throttled)", fetchedOnly([]int32{1}))
	e.m.followerQuota.SetBound(-1)
	waitUntil(t, "fetches of both partitions once unthrottled", fetchedOnly([]int32{0, 1}))
}
