package broker_test

// Fetching from the closest replica (KIP-392), end to end on three brokers
// in three racks, through straittest and franz-go.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strait/strait/config"
	"github.com/strait/strait/straittest"
)

// rackAssignment places the three partitions of the test topic on every
// broker, each broker leading one: partition 0 broker 1, partition 1 broker
// 3, partition 2 broker 2.
var rackAssignment = [][]int32{{1, 2, 3}, {3, 1, 2}, {2, 3, 1}}

const rackRecordsPerPartition = 1000

// startRackCluster starts brokers 1, 2, 3 in racks rack-a, rack-b, rack-c
// (with opts), creates topic "near" with rackAssignment, all replicas in
// sync, and writes rackRecordsPerPartition records to each partition with
// acks=all. It returns the cluster and the records' values by partition.
func startRackCluster(t *testing.T, opts ...straittest.Option) (*straittest.Cluster, [][]string) {
	t.Helper()
	opts = append(opts,
		straittest.WithBrokerConfig(1, "broker.rack", "rack-a"),
		straittest.WithBrokerConfig(2, "broker.rack", "rack-b"),
		straittest.WithBrokerConfig(3, "broker.rack", "rack-c"))
	c := straittest.StartCluster(t, 3, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Client()

	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "near", -1, -1
	for i, replicas := range rackAssignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, adm)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create near: %v", err)
	}
	// Every broker's metadata shows each partition led by its first
	// replica with all three in sync.
	for _, b := range c.Brokers() {
		cl := c.Client(kgo.SeedBrokers(b.Addr()))
		for i := 0; ; i++ {
			if i == 200 {
				t.Fatalf("broker %d: topic near not led as assigned with full ISRs", b.ID())
			}
			mreq := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr("near")
			mreq.Topics = append(mreq.Topics, mt)
			mresp, err := cl.Broker(int(b.ID())).RetriableRequest(ctx, mreq)
			if err == nil && topicAsAssigned(mresp.(*kmsg.MetadataResponse)) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	values := make([][]string, len(rackAssignment))
	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("near"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for p := range values {
		for i := range rackRecordsPerPartition {
			v := fmt.Sprintf("p%d-%05d", p, i)
			values[p] = append(values[p], v)
			rs = append(rs, &kgo.Record{Partition: int32(p), Value: []byte(v)})
		}
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c, values
}

func topicAsAssigned(m *kmsg.MetadataResponse) bool {
	if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) != len(rackAssignment) {
		return false
	}
	for _, p := range m.Topics[0].Partitions {
		want := rackAssignment[p.Partition]
		if p.ErrorCode != 0 || p.Leader != want[0] || len(p.ISR) != len(want) {
			return false
		}
	}
	return true
}

// fetchSources counts, per broker, the Fetch responses a client read and
// the records of the batches it consumed.
type fetchSources struct {
	mu      sync.Mutex
	fetches map[int32]int
	records map[int32]map[int32]int // broker -> partition -> records
}

func newFetchSources() *fetchSources {
	return &fetchSources{fetches: map[int32]int{}, records: map[int32]map[int32]int{}}
}

func (h *fetchSources) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Fetch) && err == nil {
		h.mu.Lock()
		h.fetches[meta.NodeID]++
		h.mu.Unlock()
	}
}

func (h *fetchSources) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, partition int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.records[meta.NodeID] == nil {
		h.records[meta.NodeID] = map[int32]int{}
	}
	h.records[meta.NodeID][partition] += m.NumRecords
}

func (h *fetchSources) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("fetch responses by broker %v, records by broker and partition %v", h.fetches, h.records)
}

// consumeNear reads topic near from the start with opts until it has every
// record of values (in order per partition), within 30 s.
func consumeNear(t *testing.T, c *straittest.Cluster, values [][]string, opts ...kgo.Opt) *fetchSources {
	t.Helper()
	h := newFetchSources()
	cl := c.Client(append([]kgo.Opt{kgo.ConsumeTopics("near"), kgo.WithHooks(h),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	got := make([][]string, len(values))
	total, want := 0, 0
	for _, vs := range values {
		want += len(vs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for total < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records in 30 s (%s)", total, want, h)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch error %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			total++
		})
	}
	for p := range values {
		if !slices.Equal(got[p], values[p]) {
			t.Fatalf("partition %d: consumed %d records, not the %d produced in order", p, len(got[p]), len(values[p]))
		}
	}
	return h
}

// TestFetchFromClosestReplica: with replica.selector.class set to Kafka's
// RackAwareReplicaSelector, a consumer in rack-b reads every partition from
// broker 2, the replica in its rack, although brokers 1 and 3 lead two of
// them: the leaders answer its first fetch with broker 2 as preferred read
// replica and no records, and broker 2 serves every record. A consumer
// whose rack holds no replica reads from the leaders.
func TestFetchFromClosestReplica(t *testing.T) {
	c, values := startRackCluster(t, straittest.WithConfig("replica.selector.class", config.RackAwareReplicaSelector))

	h := consumeNear(t, c, values, kgo.Rack("rack-b"))
	t.Logf("rack-b consumer: %s", h)
	h.mu.Lock()
	for broker, parts := range h.records {
		if broker != 2 {
			t.Errorf("broker %d served records %v to the rack-b consumer; only broker 2 (rack-b) should", broker, parts)
		}
	}
	// The leaders of partitions 0 and 1 were asked first and sent it on.
	if h.fetches[1] == 0 || h.fetches[3] == 0 {
		t.Errorf("the leaders in rack-a and rack-c were never fetched from: %v", h.fetches)
	}
	h.mu.Unlock()

	h = consumeNear(t, c, values, kgo.Rack("rack-z"))
	t.Logf("rack-z consumer: %s", h)
	checkReadFromLeaders(t, h)
}

// checkReadFromLeaders checks that each partition's records came from its
// leader only.
func checkReadFromLeaders(t *testing.T, h *fetchSources) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for broker, parts := range h.records {
		for p, n := range parts {
			if leader := rackAssignment[p][0]; broker != leader && n > 0 {
				t.Errorf("broker %d served %d records of partition %d, led by broker %d", broker, n, p, leader)
			}
		}
	}
}

// TestFetchFromFollowerRequests: the requests behind KIP-392 one by one,
// against brokers in racks, without a replica selector and with one.
func TestFetchFromFollowerRequests(t *testing.T) {
	t.Run("leader selector", func(t *testing.T) {
		// Without a selector (Kafka's LeaderSelector) the leader serves
		// every consumer, rack or not.
		c, values := startRackCluster(t, straittest.WithConfig("replica.selector.class", config.LeaderSelector))
		h := consumeNear(t, c, values, kgo.Rack("rack-b"))
		checkReadFromLeaders(t, h)
	})
	c, _ := startRackCluster(t, straittest.WithConfig("replica.selector.class", config.RackAwareReplicaSelector))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetch := func(cl *kgo.Client, broker int32, rack string, offset int64) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = -1, 1<<20, 0, -1
		req.Rack = rack
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "near"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 0, offset, 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := cl.Broker(int(broker)).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch from broker %d: %d topics in the response", broker, len(fr.Topics))
		}
		return fr.Topics[0].Partitions[0]
	}
	// Topic ids from v13: kgo fills them in only for its own fetches, so
	// the requests here stay at v12.
	v12 := kversion.Stable()
	v12.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	cl := c.Client(kgo.MaxVersions(v12))
	v10 := kversion.Stable()
	v10.SetMaxKeyVersion(int16(kmsg.Fetch), 10)
	cl10 := c.Client(kgo.MaxVersions(v10))

	// Partition 0 is led by broker 1 (rack-a); broker 2 (rack-b) follows.
	p := fetch(cl, 1, "rack-b", 0)
	if p.ErrorCode != 0 || p.PreferredReadReplica != 2 || len(p.RecordBatches) != 0 || p.HighWatermark != rackRecordsPerPartition {
		t.Errorf("leader, rack-b: error %d, preferred read replica %d, %d record bytes, high watermark %d; want 0, 2, none, %d",
			p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark, rackRecordsPerPartition)
	}
	for _, rack := range []string{"", "rack-a", "rack-z"} {
		if p := fetch(cl, 1, rack, 0); p.ErrorCode != 0 || p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 {
			t.Errorf("leader, rack %q: error %d, preferred read replica %d, %d record bytes; want records from the leader",
				rack, p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches))
		}
	}
	// From v11 a follower serves consumers, up to its high watermark.
	waitHW := func() kmsg.FetchResponseTopicPartition {
		for i := 0; ; i++ {
			p := fetch(cl, 2, "rack-b", 0)
			if p.ErrorCode != 0 || p.HighWatermark == rackRecordsPerPartition || i == 100 {
				return p
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if p := waitHW(); p.ErrorCode != 0 || p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 || p.HighWatermark != rackRecordsPerPartition {
		t.Errorf("follower: error %d, preferred read replica %d, %d record bytes, high watermark %d; want records up to %d",
			p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark, rackRecordsPerPartition)
	}
	// Past the follower's log end: OFFSET_OUT_OF_RANGE, as from the leader.
	if p := fetch(cl, 2, "rack-b", rackRecordsPerPartition+10); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("follower, past its log end: error %d, want OFFSET_OUT_OF_RANGE", p.ErrorCode)
	}
	// Before v11 only the leader serves.
	if p := fetch(cl10, 2, "", 0); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("follower, Fetch v10: error %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
	}
	if p := fetch(cl10, 1, "", 0); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Errorf("leader, Fetch v10: error %d, %d record bytes", p.ErrorCode, len(p.RecordBatches))
	}
}
