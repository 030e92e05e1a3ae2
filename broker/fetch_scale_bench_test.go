package broker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFetchSessionVisit is what a consumer's incremental fetch over a
// session of 10,000 caught-up partitions costs the broker: every session
// partition is visited (its leadership checked, its offsets read) at each
// fetch, as Kafka's do, and none has records to return. A catching-up
// consumer pays the same visit for every partition its response has no room
// for. ns/partition is the broker's cost per session partition per fetch
// (the request and its empty answer included).
//
//	go test ./broker/ -run '^$' -bench FetchSessionVisit -benchmem
func BenchmarkFetchSessionVisit(b *testing.B) {
	const topics, perTopic = 10, 1000
	srv := startBroker(b, b.TempDir())
	cl := newClient(b, srv)
	batch := benchBatch(1)
	// The session's full fetch, built as each topic is created and
	// written: every partition caught up at its one record.
	full := kmsg.NewPtrFetchRequest()
	full.SetVersion(13)
	full.ReplicaID = -1
	full.MaxBytes = 50 << 20
	full.SessionEpoch = 0
	for t := range topics {
		name := fmt.Sprintf("visit%d", t)
		createTopic(b, cl, name, perTopic, nil)
		details, err := kadm.NewClient(cl).ListTopics(context.Background(), name)
		if err != nil {
			b.Fatal(err)
		}
		id := details[name].ID
		req := kmsg.NewPtrProduceRequest()
		req.Acks = 1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = name, id // Produce v13+ names topics by id
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = id
		for p := range perTopic {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(p)
			rp.Records = batch
			rt.Partitions = append(rt.Partitions, rp)
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition = int32(p)
			fp.FetchOffset = 1
			fp.CurrentLeaderEpoch = -1
			fp.LastFetchedEpoch = -1
			fp.PartitionMaxBytes = 1 << 20
			ft.Partitions = append(ft.Partitions, fp)
		}
		req.Topics = append(req.Topics, rt)
		full.Topics = append(full.Topics, ft)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			b.Fatal(err)
		}
		for _, sp := range resp.Topics[0].Partitions {
			if sp.ErrorCode != 0 {
				b.Fatalf("produce %s/%d: error code %d", name, sp.Partition, sp.ErrorCode)
			}
		}
	}
	cl.Close()

	pc := dialBench(b, srv.Addr())
	pc.send(encodeRequest(full, 1))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(13)
	if err := resp.ReadFrom(pc.read()[1:]); err != nil { // after the header's tags
		b.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		b.Fatalf("full fetch: error code %d, session %d", resp.ErrorCode, resp.SessionID)
	}
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.HighWatermark != 1 {
				b.Fatalf("full fetch: partition %d: error code %d, high watermark %d", p.Partition, p.ErrorCode, p.HighWatermark)
			}
			n++
		}
	}
	if n != topics*perTopic {
		b.Fatalf("full fetch answered %d partitions, want %d", n, topics*perTopic)
	}

	incr := kmsg.NewPtrFetchRequest()
	incr.SetVersion(13)
	incr.ReplicaID = -1
	incr.MaxBytes = 50 << 20
	incr.SessionID = resp.SessionID
	epoch := int32(1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		incr.SessionEpoch = epoch
		epoch++
		pc.send(encodeRequest(incr, epoch))
		body := pc.read()
		// Error code (int16) after the header's tags and the throttle
		// time (int32): a session
		// error would make every round cheap, and the figure wrong.
		if code := int16(body[5])<<8 | int16(body[6]); code != 0 {
			b.Fatalf("incremental fetch %d: error code %d", epoch, code)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*topics*perTopic), "ns/partition")
}
