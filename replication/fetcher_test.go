package replication

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
)

// TestCloseWaitsForFetchers: Close cancels the fetchers' requests in flight
// and returns only once every fetcher goroutine has ended, those stopped
// earlier for want of partitions included; none starts afterwards.
func TestCloseWaitsForFetchers(t *testing.T) {
	var (
		inFlight atomic.Int32
		calls    atomic.Int32
		entered  = make(chan int32, 16)
	)
	client := clientFunc(func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		calls.Add(1)
		select {
		case entered <- broker:
		default:
		}
		<-ctx.Done()
		// A slow return: Close must still wait for it.
		time.Sleep(20 * time.Millisecond)
		return nil, ctx.Err()
	})
	e := newEnv(t, func(c *Config) { c.FetchBackoff = time.Millisecond }, client)
	// Node 1 follows broker 2 on f-0 and broker 3 on f-1.
	e.topic("f", []int32{2, 1}, []int32{3, 1})
	for range 2 {
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the fetchers sent no request")
		}
	}
	// f-1's leader moves to broker 2: broker 3's fetcher falls idle and
	// stops, without anyone waiting for it yet.
	e.meta.setPartition("f", 1, func(pi *controller.PartitionInfo) { pi.Leader = 2; pi.LeaderEpoch++ })

	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := inFlight.Load(); n != 0 {
		t.Fatalf("%d fetcher requests still running after Close", n)
	}
	after := calls.Load()
	e.m.fetchers.follow(e.m.Partition("f", 0), 2, 5) // ignored once closed
	time.Sleep(30 * time.Millisecond)
	if n := calls.Load(); n != after {
		t.Fatalf("%d requests after Close", n-after)
	}
}

// TestFollowerAppendsFetchedRecords: a follower truncates by leader epoch,
// then appends what the leader returns, byte for byte, and takes the
// leader's high watermark bounded by its own log end offset.
func TestFollowerAppendsFetchedRecords(t *testing.T) {
	batch := testBatch(3)
	var mu sync.Mutex
	fetches := 0
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
			mu.Lock()
			fetches++
			mu.Unlock()
			resp := echoFetch(r, func(_ *kmsg.FetchRequestTopic, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition) {
				sp.HighWatermark = 2
				if rp.FetchOffset == 0 {
					// A whole batch followed by a torn one (KIP-74).
					sp.RecordBatches = append(append([]byte{}, batch...), batch[:20]...)
				}
			})
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
			return resp, nil
		}
		t.Errorf("unexpected request %T", req)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e := newEnv(t, nil, client)
	e.topic("follow", []int32{2, 1})
	p := e.m.Partition("follow", 0)
	if p == nil || p.IsLeader() {
		t.Fatal("follow-0 is not followed here")
	}
	waitUntil(t, "the follower to append the fetched batch", func() bool { return p.Log().LogEndOffset() == 3 })
	waitUntil(t, "the leader's high watermark", func() bool { return p.Log().HighWatermark() == 2 })
}

// TestRefusedBackoff: a partition the leader refused for not leading it
// (yet) asks again after 50 ms, doubling up to replica.fetch.backoff.ms;
// other errors pause the whole back-off, as Kafka's fetcher does.
func TestRefusedBackoff(t *testing.T) {
	f := &fetcher{m: &Manager{cfg: Config{FetchBackoff: time.Second}}}
	for _, code := range []int16{kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code} {
		st := &followState{}
		var got []time.Duration
		for range 7 {
			got = append(got, f.refusedBackoff(st, code))
		}
		want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
			400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
		if !slices.Equal(got, want) {
			t.Errorf("%v: back-offs %v, want %v", kerr.ErrorForCode(code), got, want)
		}
	}
	for _, code := range []int16{kerr.FencedLeaderEpoch.Code, kerr.UnknownTopicOrPartition.Code, kerr.KafkaStorageError.Code} {
		if got := f.refusedBackoff(&followState{}, code); got != time.Second {
			t.Errorf("%v: back-off %v, want replica.fetch.backoff.ms (1s)", kerr.ErrorForCode(code), got)
		}
	}
}

// TestNewFollowerAsksAgainSoon: after a leadership change the new leader
// may not know it leads yet (it applies the metadata on its own time) and
// refuses the follower's first fetch; the follower, whose log has an epoch,
// asks no OffsetForLeaderEpoch and fetches again without waiting
// replica.fetch.backoff.ms (an hour here), and its fetches right after the
// change wait at most 50 ms at the leader.
func TestNewFollowerAsksAgainSoon(t *testing.T) {
	var (
		mu        sync.Mutex
		asked     int
		fetched   int
		fetchWait []int32
	)
	client := clientFunc(func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
		switch r := req.(type) {
		case *kmsg.OffsetForLeaderEpochRequest:
			mu.Lock()
			asked++
			mu.Unlock()
			return kmsg.NewPtrOffsetForLeaderEpochResponse(), nil
		case *kmsg.FetchRequest:
			mu.Lock()
			fetchWait = append(fetchWait, r.MaxWaitMillis)
			listed := 0
			for _, rt := range r.Topics {
				listed += len(rt.Partitions)
			}
			refuse := fetched == 0
			fetched += listed
			mu.Unlock()
			resp := echoFetch(r, func(_ *kmsg.FetchRequestTopic, _ *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition) {
				if refuse {
					sp.ErrorCode, sp.HighWatermark, sp.LogStartOffset = kerr.NotLeaderForPartition.Code, -1, -1
				}
			})
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
	e := newEnv(t, func(c *Config) { c.FetchBackoff = time.Hour }, client)
	// Node 1 leads at epoch 1 and writes a record, so that its log has an
	// epoch; then broker 2 takes over at epoch 2.
	e.topic("r", []int32{1, 2})
	p := e.m.Partition("r", 0)
	produce(t, p, 1)
	e.meta.setPartition("r", 0, func(pi *controller.PartitionInfo) { pi.Leader = 2; pi.LeaderEpoch++ })
	waitUntil(t, "the follower to fetch again after the new leader's refusal", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return fetched >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if asked != 0 {
		t.Errorf("the follower sent %d OffsetForLeaderEpoch requests, want none (its log has an epoch)", asked)
	}
	if fetchWait[0] > 50 {
		t.Errorf("the first fetch after the change waits up to %d ms at the leader, want at most 50", fetchWait[0])
	}
}

// TestAddedPartitionPreemptsParkedFetch: a partition that starts following
// a leader while the fetcher's fetch is parked there (replica.fetch.wait.max.ms,
// here a minute, with nothing appended) does not wait for that fetch: it
// is cancelled and the next fetch lists the new partition at once.
func TestAddedPartitionPreemptsParkedFetch(t *testing.T) {
	var (
		mu        sync.Mutex
		fetches   [][]string // the partitions each fetch listed
		cancelled int
		parked    int // fetches waiting at the leader for longer than followingWait
	)
	client := clientFunc(func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
		r, ok := req.(*kmsg.FetchRequest)
		if !ok {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		var listed []string
		resp := echoFetch(r, func(rt *kmsg.FetchRequestTopic, _ *kmsg.FetchRequestTopicPartition, _ *kmsg.FetchResponseTopicPartition) {
			listed = append(listed, rt.Topic)
		})
		slices.Sort(listed)
		long := time.Duration(r.MaxWaitMillis)*time.Millisecond > followingWait
		mu.Lock()
		fetches = append(fetches, listed)
		if long {
			parked++
		}
		mu.Unlock()
		// The leader holds a fetch with nothing new for its whole wait.
		select {
		case <-ctx.Done():
			mu.Lock()
			cancelled++
			mu.Unlock()
			return nil, ctx.Err()
		case <-time.After(time.Duration(r.MaxWaitMillis) * time.Millisecond):
			return resp, nil
		}
	})
	e := newEnv(t, func(c *Config) { c.FetchWaitMaxMs = 60_000 }, client)
	e.topic("a", []int32{2, 1})
	// Past the following window of a's addition, the fetch parks for a
	// minute.
	waitUntil(t, "a fetch parked at the leader", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return parked == 1
	})
	e.topic("b", []int32{2, 1})
	waitUntil(t, "a fetch listing the added partition", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(fetches, func(l []string) bool { return slices.Contains(l, "b") })
	})
	mu.Lock()
	defer mu.Unlock()
	if cancelled != 1 {
		t.Errorf("%d fetches cancelled, want the parked one", cancelled)
	}
	i := slices.IndexFunc(fetches, func(l []string) bool { return slices.Contains(l, "b") })
	if !slices.Equal(fetches[i], []string{"a", "b"}) {
		t.Errorf("the fetch after the cancelled one lists %v, want a and b", fetches[i])
	}
}
