package straittest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// A share group of three franz-go share consumers keeps its progress when
// the broker coordinating it is killed -9 while they consume: the
// share-partitions' state is in __share_group_state (replicated, acks=all),
// so the brokers that lead the partitions afterwards read it back. Records
// acknowledged before the kill (below the start offset the group described
// just before it) are not delivered again; records a member had acquired
// and never acknowledged come back with a raised delivery count; every
// record is delivered.
func TestShareGroupSurvivesCoordinatorKill(t *testing.T) {
	const topic, group, partitions, perPartition = "sq-in", "sq-kill", 6, 100
	c := straittest.StartCluster(t, 3, straittest.WithTopic(topic, partitions, 3),
		straittest.WithConfigs(map[string]string{
			"broker.session.timeout.ms":                              "3000",
			"offsets.topic.num.partitions":                           "3",
			"offsets.topic.replication.factor":                       "3",
			"share.coordinator.state.topic.num.partitions":           "3",
			"share.coordinator.state.topic.replication.factor":       "3",
			"group.share.heartbeat.interval.ms":                      "500",
			"group.share.session.timeout.ms":                         "6000",
			"group.share.min.record.lock.duration.ms":                "1000",
			"group.share.record.lock.duration.ms":                    "4000",
			"share.coordinator.snapshot.update.records.per.snapshot": "20",
			// Kafka's default delivery limit (5): a kill must not cost
			// deliveries, as an acquisition whose state write fails or
			// ends too late for its answer is given back uncounted.
		}))
	for p := int32(0); p < partitions; p++ {
		c.WaitISR(topic, p, 3, 30*time.Second)
	}
	admin := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The group starts at the earliest offset, on every broker before
	// anything is fetched.
	setShareEarliest(t, ctx, c, group)
	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < partitions; p++ {
		var rs []*kgo.Record
		for i := range perPartition {
			rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The group's coordinator (once it answers for the group), and a
	// partition it leads if it leads one.
	const holder = "holder-member-000001"
	var victim int32
	for attempt := 0; ; attempt++ {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{group}
		fresp, err := fc.RequestWith(ctx, admin)
		if err != nil || len(fresp.Coordinators) != 1 {
			t.Fatalf("find coordinator: %v %+v", err, fresp)
		}
		victim = fresp.Coordinators[0].NodeID
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, holder, 0, []string{topic}
		resp, err := admin.Broker(int(victim)).RetriableRequest(ctx, hb)
		if err == nil && fresp.Coordinators[0].ErrorCode == 0 && resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode == 0 {
			break
		}
		if attempt == 100 {
			t.Fatalf("holder heartbeat: %v %+v", err, resp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	held := int32(0)
	for p := int32(0); p < partitions; p++ {
		if c.Leader(topic, p) == victim {
			held = p
			break
		}
	}
	topicID := topicIDByName(t, ctx, admin, topic)

	// The holder acquires records of that partition and never
	// acknowledges them.
	var heldOffsets []int64
	var lastErr int16
	var epoch int32
	leaderCl := c.Client(kgo.SeedBrokers(c.Broker(c.Leader(topic, held)).Addr()))
	for attempt := 0; attempt < 50 && len(heldOffsets) == 0; attempt++ {
		sf := kmsg.NewPtrShareFetchRequest()
		sf.GroupID, sf.MemberID, sf.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(holder), epoch
		sf.MaxWaitMillis, sf.MaxBytes, sf.MaxRecords, sf.BatchSize = 500, 1<<20, 10, 10
		st := kmsg.NewShareFetchRequestTopic()
		st.TopicID = topicID
		sp := kmsg.NewShareFetchRequestTopicPartition()
		sp.Partition = held
		st.Partitions = append(st.Partitions, sp)
		sf.Topics = append(sf.Topics, st)
		resp, err := leaderCl.Broker(int(c.Leader(topic, held))).RetriableRequest(ctx, sf)
		if err != nil {
			t.Fatal(err)
		}
		if fr := resp.(*kmsg.ShareFetchResponse); fr.ErrorCode != 0 {
			lastErr, epoch = fr.ErrorCode, 0
		} else {
			epoch++
		}
		for _, rt := range resp.(*kmsg.ShareFetchResponse).Topics {
			for _, rp := range rt.Partitions {
				lastErr = rp.ErrorCode
				for _, a := range rp.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						heldOffsets = append(heldOffsets, o)
					}
				}
			}
		}
		if len(heldOffsets) == 0 {
			time.Sleep(100 * time.Millisecond) // the state topic may still be getting its leaders
		}
	}
	if len(heldOffsets) == 0 {
		t.Fatalf("the holder acquired nothing (partition error %d)", lastErr)
	}

	// Three share consumers that accept what they poll.
	var (
		mu         sync.Mutex
		deliveries = map[[2]int64][]int32{} // (partition, offset) -> delivery counts seen
		killed     bool
	)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 3 {
		cl := c.Client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(10),
			kgo.FetchMaxWait(300*time.Millisecond), kgo.ClientID(fmt.Sprintf("share-%d", i)))
		wg.Go(func() {
			for n := 0; n < 100_000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollRecords(pctx, 10)
				pcancel()
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				for _, r := range fs.Records() {
					k := [2]int64{int64(r.Partition), r.Offset}
					deliveries[k] = append(deliveries[k], r.DeliveryCount())
				}
				before := !killed
				mu.Unlock()
				if before {
					time.Sleep(20 * time.Millisecond) // keep some records for after the kill
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(deliveries)
	}
	deadline := time.Now().Add(60 * time.Second)
	for count() < partitions*perPartition/3 {
		if time.Now().After(deadline) {
			t.Fatalf("before the kill: %d records delivered", count())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The start offsets just before the kill: everything below them was
	// acknowledged (or archived) and persisted.
	spso := shareStartOffsets(t, ctx, admin, group, topic, partitions)
	t.Logf("killing broker %d (group coordinator); holder's partition %d led by %d; %d delivered; start offsets %v",
		victim, held, c.Leader(topic, held), count(), spso)
	mu.Lock()
	killed = true
	mu.Unlock()
	c.Kill(victim)

	// Every record delivered, the held ones again with a raised count.
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(deliveries) < partitions*perPartition {
			return false
		}
		for _, o := range heldOffsets {
			ds := deliveries[[2]int64{int64(held), o}]
			if len(ds) == 0 || ds[len(ds)-1] < 2 {
				return false
			}
		}
		return true
	}
	deadline = time.Now().Add(120 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			mu.Lock()
			var missingHeld []int64
			for _, o := range heldOffsets {
				if ds := deliveries[[2]int64{int64(held), o}]; len(ds) == 0 || ds[len(ds)-1] < 2 {
					missingHeld = append(missingHeld, o)
				}
			}
			n := len(deliveries)
			missing := map[int64][]int64{}
			for p := int64(0); p < partitions; p++ {
				for o := int64(0); o < perPartition; o++ {
					if len(deliveries[[2]int64{p, o}]) == 0 {
						missing[p] = append(missing[p], o)
					}
				}
			}
			mu.Unlock()
			var after any
			if dresp, err := describeShareOffsets(ctx, c.Client(), group, topic, partitions); err == nil && len(dresp.Groups) == 1 {
				after = dresp.Groups[0]
			}
			t.Fatalf("after the kill: %d of %d records delivered (missing %v); held offsets not redelivered with a raised count: %v; offsets now %+v",
				n, partitions*perPartition, missing, missingHeld, after)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if dresp, err := describeShareOffsets(ctx, c.Client(), group, topic, partitions); err == nil && len(dresp.Groups) == 1 {
		t.Logf("after: %+v", dresp.Groups[0])
	}
	mu.Lock()
	defer mu.Unlock()
	ackedOnce(t, deliveries, spso)
	for _, o := range heldOffsets {
		ds := deliveries[[2]int64{int64(held), o}]
		if ds[0] < 2 {
			t.Errorf("held record %d@%d delivered with count %v", held, o, ds)
		}
	}
}
