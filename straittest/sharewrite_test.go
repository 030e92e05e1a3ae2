package straittest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// A ShareFetch whose state write to the share coordinator (another broker)
// keeps failing answers without the records it acquired and gives them
// back uncounted, as Kafka's SharePartition rolls a transition back when
// its persister write fails: once the coordinator answers again, the
// records go out as first deliveries (count 1, not 2).
func TestShareFetchGivesBackWhatItCouldNotWrite(t *testing.T) {
	const topic, group = "sq-wfail", "sq-wfail-g"
	c := straittest.StartCluster(t, 2, straittest.WithTopic(topic, 4, 1),
		straittest.WithConfigs(map[string]string{
			"share.coordinator.state.topic.num.partitions":     "1",
			"share.coordinator.state.topic.replication.factor": "1",
			"share.coordinator.state.topic.min.isr":            "1",
		}))
	admin := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setShareEarliest(t, ctx, c, group)
	topicID := topicIDByName(t, ctx, admin, topic)

	// __share_group_state exists once a state call names a key; its one
	// partition's leader is the coordinator of every share-partition.
	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.LeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	read.Topics = append(read.Topics, rt)
	coord := int32(-1)
	for attempt := 0; attempt < 100 && coord < 0; attempt++ {
		if _, err := read.RequestWith(ctx, admin); err != nil {
			t.Fatal(err)
		}
		// The leader as Metadata tells it, once the topic is there.
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("__share_group_state")
		md.Topics = append(md.Topics, mt)
		if resp, err := md.RequestWith(ctx, admin); err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 &&
			len(resp.Topics[0].Partitions) == 1 && resp.Topics[0].Partitions[0].ErrorCode == 0 {
			coord = resp.Topics[0].Partitions[0].Leader
		}
		if coord < 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if coord < 0 {
		t.Fatal("__share_group_state has no leader")
	}
	part, leader := int32(-1), int32(-1)
	for p := int32(0); p < 4; p++ {
		if l := c.Leader(topic, p); l != coord {
			part, leader = p, l
			break
		}
	}
	if part < 0 {
		t.Fatalf("broker %d leads every partition of %s: no remote state write to fail", coord, topic)
	}
	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for range 5 {
		rs = append(rs, &kgo.Record{Partition: part, Value: []byte("v")})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The member joins: its group's coordinator initializes the
	// share-partitions' state (a fetch needs it, as in Kafka).
	for attempt := 0; ; attempt++ {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "member-wfail-0001", []string{topic}
		resp, err := hb.RequestWith(ctx, admin)
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		if attempt == 100 {
			t.Fatalf("join: %v %+v", err, resp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fetchCl := c.Client(kgo.SeedBrokers(c.Broker(leader).Addr()))
	epoch := int32(0)
	fetch := func() (*kmsg.ShareFetchResponse, time.Duration) {
		t.Helper()
		sf := kmsg.NewPtrShareFetchRequest()
		sf.GroupID, sf.MemberID, sf.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr("member-wfail-0001"), epoch
		sf.MaxWaitMillis, sf.MaxBytes, sf.MaxRecords, sf.BatchSize = 100, 1<<20, 100, 100
		st := kmsg.NewShareFetchRequestTopic()
		st.TopicID = topicID
		sp := kmsg.NewShareFetchRequestTopicPartition()
		sp.Partition = part
		st.Partitions = append(st.Partitions, sp)
		sf.Topics = append(sf.Topics, st)
		start := time.Now()
		resp, err := fetchCl.Broker(int(leader)).Request(ctx, sf)
		if err != nil {
			t.Fatal(err)
		}
		fr := resp.(*kmsg.ShareFetchResponse)
		if fr.ErrorCode != 0 {
			t.Fatalf("share fetch: %v", kerr.ErrorForCode(fr.ErrorCode))
		}
		epoch++
		return fr, time.Since(start)
	}
	acquiredOf := func(fr *kmsg.ShareFetchResponse) (n int, counts []int16) {
		for _, t := range fr.Topics {
			for _, p := range t.Partitions {
				for _, a := range p.AcquiredRecords {
					n += int(a.LastOffset - a.FirstOffset + 1)
					counts = append(counts, a.DeliveryCount)
				}
			}
		}
		return n, counts
	}

	// The state is read first (that works), every write then fails.
	fail := c.Intercept(straittest.Rule{Key: kmsg.WriteShareGroupState, Broker: coord, Err: kerr.CoordinatorNotAvailable})
	fr, took := fetch()
	if n, counts := acquiredOf(fr); n != 0 {
		t.Fatalf("fetch whose state write failed answered %d records (counts %v), want none", n, counts)
	}
	if fail.Count() == 0 {
		t.Fatal("no state write reached the coordinator")
	}
	t.Logf("fetch with failing writes answered after %v, %d writes refused", took, fail.Count())
	fail.Remove()
	for attempt := 0; attempt < 20; attempt++ {
		fr, _ = fetch()
		n, counts := acquiredOf(fr)
		if n == 0 {
			continue
		}
		if n != 5 || len(counts) != 1 || counts[0] != 1 {
			t.Fatalf("after the coordinator recovered: %d records, counts %v; want 5 first deliveries", n, counts)
		}
		return
	}
	t.Fatal("the records were never delivered after the coordinator recovered")
}
