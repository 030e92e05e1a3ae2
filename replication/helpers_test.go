package replication

import (
	"context"
	"github.com/strait/strait/config"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage"
)

// fakeMeta is a MetadataView whose topics the test sets.
type fakeMeta struct {
	mu        sync.Mutex
	listeners []func(controller.TopicChange)
	topics    map[string]controller.TopicInfo
	// brokers has its own lock: the listeners, called under mu, read it
	// (the controller's cache serves both from lock-free snapshots).
	brokersMu sync.Mutex
	brokers   []controller.BrokerInfo
	// clusterID is ClusterID's answer, set before a Manager starts.
	clusterID string
}

func newFakeMeta(brokers ...int32) *fakeMeta {
	f := &fakeMeta{topics: map[string]controller.TopicInfo{}, clusterID: "StraitFakeClusterIdAAA"}
	for _, id := range brokers {
		f.brokers = append(f.brokers, controller.BrokerInfo{NodeID: id, Epoch: 100 + int64(id), TruncatesOnFetch: true})
	}
	return f
}

func (f *fakeMeta) Listen(fn func(controller.TopicChange)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listeners = append(f.listeners, fn)
	for _, t := range f.topics {
		fn(controller.TopicChange{Topic: t})
	}
}

func (f *fakeMeta) Topic(name string) (controller.TopicInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[name]
	return t, ok
}

func (f *fakeMeta) Brokers() []controller.BrokerInfo {
	f.brokersMu.Lock()
	defer f.brokersMu.Unlock()
	return slices.Clone(f.brokers)
}

func (f *fakeMeta) BrokerEpoch() int64 { return 101 }

func (f *fakeMeta) ClusterID() string { return f.clusterID }

// set publishes t (a creation or a change) to the listeners, as the
// controller's cache does, in order.
func (f *fakeMeta) set(t controller.TopicInfo) { f.setChanged(t, nil) }

// setChanged is set for a change of only the partitions named (sorted), as
// the cache reports a change of partition states.
func (f *fakeMeta) setChanged(t controller.TopicInfo, partitions []int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics[t.Name] = t
	for _, fn := range f.listeners {
		fn(controller.TopicChange{Topic: t, Partitions: partitions})
	}
}

// setPartition changes one partition of topic name with change.
func (f *fakeMeta) setPartition(name string, idx int32, change func(*controller.PartitionInfo)) {
	t, _ := f.Topic(name)
	parts := slices.Clone(t.Partitions)
	pi := parts[idx]
	pi.ISR = slices.Clone(pi.ISR)
	change(&pi)
	parts[idx] = pi
	t.Partitions = parts
	f.setChanged(t, []int32{idx})
}

// fakeISR is an ISRWriter that records the requests and, when apply is
// set, applies them to meta as the controller would.
type fakeISR struct {
	meta  *fakeMeta
	apply bool
	mu    sync.Mutex
	reqs  []controller.AlterPartitionRequest
	sent  chan controller.AlterPartitionRequest
}

func newFakeISR(meta *fakeMeta) *fakeISR {
	return &fakeISR{meta: meta, apply: true, sent: make(chan controller.AlterPartitionRequest, 16)}
}

func (f *fakeISR) AlterPartitionISR(_ context.Context, req controller.AlterPartitionRequest) (controller.PartitionInfo, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	var got controller.PartitionInfo
	if f.apply {
		f.meta.setPartition(req.Topic, req.Partition, func(pi *controller.PartitionInfo) {
			pi.ISR = nil
			for _, m := range req.NewISR {
				pi.ISR = append(pi.ISR, m.BrokerID)
			}
			pi.PartitionEpoch++
			got = *pi
		})
	}
	f.sent <- req
	return got, nil
}

// awaitISR returns the next AlterPartition request, failing after a while.
func (f *fakeISR) awaitISR(t *testing.T) []int32 {
	t.Helper()
	select {
	case req := <-f.sent:
		var ids []int32
		for _, m := range req.NewISR {
			ids = append(ids, m.BrokerID)
		}
		return ids
	case <-time.After(5 * time.Second):
		t.Fatal("no ISR change was proposed")
		return nil
	}
}

// noISR fails if an ISR change was proposed.
func (f *fakeISR) noISR(t *testing.T) {
	t.Helper()
	select {
	case req := <-f.sent:
		t.Fatalf("unexpected ISR change %+v", req.NewISR)
	case <-time.After(20 * time.Millisecond):
	}
}

// echoFetch is a fake leader's answer to r: an entry for each partition r
// lists, in its order, with the partition's number, a log start of 0 and
// a high watermark at the fetch offset, then changed by each (when not
// nil).
func echoFetch(r *kmsg.FetchRequest, each func(rt *kmsg.FetchRequestTopic, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition)) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	for ti := range r.Topics {
		rt := &r.Topics[ti]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.HighWatermark, sp.LogStartOffset = rp.Partition, rp.FetchOffset, 0
			if each != nil {
				each(rt, rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// clientFunc is a BrokerClient.
type clientFunc func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)

func (f clientFunc) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return f(ctx, broker, req)
}

// fakeClock is a settable clock. It starts at the system time: the logs
// read it too, and refuse records stamped an hour past it
// (message.timestamp.after.max.ms).
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type testEnv struct {
	m     *Manager
	meta  *fakeMeta
	isr   *fakeISR
	clock *fakeClock
	dir   string
}

// newEnv starts a Manager for node 1 over fakes, with the loops' intervals
// long enough not to interfere unless cfg sets them.
// newEnv starts a manager with the default configuration, with the
// maintenance and checkpoint loops slowed to an hour (tests drive them), as
// changed by set (when not nil).
func newEnv(t *testing.T, set func(*Config), client BrokerClient) *testEnv {
	t.Helper()
	env := &testEnv{meta: newFakeMeta(1, 2, 3), clock: &fakeClock{t: time.Now()}, dir: t.TempDir()}
	env.isr = newFakeISR(env.meta)
	cfg := ConfigFrom(config.Default())
	cfg.NodeID = 1
	cfg.LogDirs = []string{env.dir}
	cfg.MaintenanceInterval = time.Hour
	cfg.HighWatermarkCheckpointInterval = time.Hour
	cfg.ReplicaLagTimeMax = 10 * time.Second
	if set != nil {
		set(&cfg)
	}
	if client == nil {
		client = clientFunc(func(ctx context.Context, _ int32, _ kmsg.Request) (kmsg.Response, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	env.m = New(cfg, Deps{
		Metadata: env.meta, ISR: env.isr, Brokers: client,
		TopicConfig: func(map[string]string) (storage.LogConfig, int32, error) {
			return storage.DefaultLogConfig(), 2, nil
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:    env.clock.Now,
	})
	if err := env.m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return env
}

// topic publishes a topic of one partition per replica list, led by the
// first replica of each, all in sync.
func (e *testEnv) topic(name string, replicas ...[]int32) {
	t := controller.TopicInfo{Name: name, ID: [16]byte{byte(len(name)), name[0], 1}}
	for i, r := range replicas {
		t.Partitions = append(t.Partitions, controller.PartitionInfo{
			Partition: int32(i), Replicas: r, Leader: r[0], LeaderEpoch: 1, ISR: slices.Clone(r), PartitionEpoch: 1,
		})
	}
	e.meta.set(t)
}

// produce appends a batch of n records as leader, as the broker's produce
// path does.
func produce(t *testing.T, p *Partition, n int) storage.AppendInfo {
	t.Helper()
	info, err := p.Log().AppendAsLeader(testBatch(n), p.LeaderEpoch())
	if err != nil {
		t.Fatal(err)
	}
	p.Appended()
	return info
}

// testBatch is a magic-v2 batch of n small records as a producer sends it.
func testBatch(n int) []byte {
	b := recordbatch.NewBuilder(time.Now().UnixMilli())
	for range n {
		b.Add(nil, []byte("v"))
	}
	return b.Build()
}
