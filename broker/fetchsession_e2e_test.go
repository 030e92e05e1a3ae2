package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func startSessionBroker(t *testing.T) *Server {
	t.Helper()
	srv := startTestBroker(t)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// sessionFetch is one raw Fetch on a session.
type sessionFetch struct {
	t       *testing.T
	v12     *kgo.Broker // a client whose Fetch stops at v12 (topic names)
	latest  *kgo.Broker // one at the latest version (topic ids)
	topic   string
	topicID [16]byte
}

// fetch sends a Fetch at v12 or the latest version (13 asks for it) with
// the given session id and epoch, listing parts (partition -> fetch
// offset) and forgetting forget.
func (sf *sessionFetch) fetch(version int16, id, epoch int32, parts map[int32]int64, forget []int32) *kmsg.FetchResponse {
	sf.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 20, 1, 1<<20
	req.SessionID, req.SessionEpoch = id, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = sf.topic, sf.topicID
		keys := make([]int32, 0, len(parts))
		for p := range parts {
			keys = append(keys, p)
		}
		slices.Sort(keys)
		for _, p := range keys {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, parts[p], 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = sf.topic, sf.topicID, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	b := sf.latest
	if version <= 12 {
		b = sf.v12
	}
	resp, err := b.Request(context.Background(), req)
	if err != nil {
		sf.t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if (version <= 12) != (fr.Version <= 12) {
		sf.t.Fatalf("asked for v%d, got v%d", version, fr.Version)
	}
	return fr
}

// listed is the response's partitions in order, with their record bytes.
func listed(resp *kmsg.FetchResponse) (parts []int32, withRecords []int32) {
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			parts = append(parts, rp.Partition)
			if len(rp.RecordBatches) > 0 {
				withRecords = append(withRecords, rp.Partition)
			}
		}
	}
	return parts, withRecords
}

// TestFetchSessionProtocol walks a session through Kafka's rules: creation
// on a full fetch, incremental fetches that list only what changed, the
// session's order, forgotten partitions, epoch and id errors, closing.
func TestFetchSessionProtocol(t *testing.T) {
	srv := startSessionBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.DefaultProduceTopic("sess"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "sess"); err != nil {
		t.Fatal(err)
	}
	produce := func(ps ...int32) {
		t.Helper()
		for _, p := range ps {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 1, 2)
	td, err := kadm.NewClient(cl).ListTopics(ctx, "sess")
	if err != nil {
		t.Fatal(err)
	}
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	old12, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.MaxVersions(versions))
	if err != nil {
		t.Fatal(err)
	}
	defer old12.Close()
	sf := &sessionFetch{t: t, v12: old12.Broker(int(srv.NodeID())), latest: cl.Broker(int(srv.NodeID())), topic: "sess", topicID: td["sess"].ID}
	const v = 12

	full := sf.fetch(v, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}, nil)
	id := full.SessionID
	if got, data := listed(full); id == 0 || full.ErrorCode != 0 || !slices.Equal(got, []int32{0, 1, 2}) || len(data) != 3 {
		t.Fatalf("full fetch: session %d, error %d, partitions %v with records %v", id, full.ErrorCode, got, data)
	}
	// Nothing changed: an empty response (after max wait).
	r := sf.fetch(v, id, 1, map[int32]int64{0: 1, 1: 1, 2: 1}, nil)
	if got, _ := listed(r); r.ErrorCode != 0 || r.SessionID != id || len(got) != 0 {
		t.Fatalf("epoch 1: session %d, error %d, partitions %v", r.SessionID, r.ErrorCode, got)
	}
	// A record in partition 1: only it is listed, and it moves to the end.
	produce(1)
	r = sf.fetch(v, id, 2, nil, nil)
	if got, data := listed(r); !slices.Equal(got, []int32{1}) || !slices.Equal(data, []int32{1}) {
		t.Fatalf("epoch 2: partitions %v with records %v, want [1]", got, data)
	}
	// The same epoch again, an unknown id.
	if r := sf.fetch(v, id, 2, nil, nil); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || r.SessionID != 0 {
		t.Fatalf("repeated epoch: error %d session %d", r.ErrorCode, r.SessionID)
	}
	if r := sf.fetch(v, id^0x5a5a, 1, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: error %d", r.ErrorCode)
	}
	// The session reads 0, 2, then 1.
	produce(0, 1, 2)
	r = sf.fetch(v, id, 3, map[int32]int64{1: 2}, nil)
	if got, data := listed(r); !slices.Equal(got, []int32{0, 2, 1}) || len(data) != 3 {
		t.Fatalf("epoch 3: partitions %v with records %v, want [0 2 1]", got, data)
	}
	// Forget partition 0: its records are no longer fetched.
	r = sf.fetch(v, id, 4, map[int32]int64{0: 2, 1: 3, 2: 2}, []int32{0})
	if got, _ := listed(r); len(got) != 0 {
		t.Fatalf("epoch 4: partitions %v", got)
	}
	produce(0)
	if r := sf.fetch(v, id, 5, nil, nil); len(r.Topics) != 0 {
		t.Fatalf("forgotten partition fetched: %+v", r.Topics)
	}
	// A session made with names cannot go on with topic ids.
	if r := sf.fetch(13, id, 6, nil, nil); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v13 on a v12 session: error %d", r.ErrorCode)
	}
	// Forgetting every partition closes the session.
	if r := sf.fetch(v, id, 6, nil, []int32{1, 2}); r.SessionID != 0 || r.ErrorCode != 0 {
		t.Fatalf("empty session: id %d error %d", r.SessionID, r.ErrorCode)
	}
	if r := sf.fetch(v, id, 7, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d", r.ErrorCode)
	}
	// FINAL_EPOCH: no session; a full fetch naming a session closes it.
	before := srv.fetchSessions.sessionCount()
	if r := sf.fetch(v, 0, -1, map[int32]int64{0: 0}, nil); r.SessionID != 0 || len(r.Topics) != 1 {
		t.Fatalf("sessionless fetch: session %d, %d topics", r.SessionID, len(r.Topics))
	}
	if n := srv.fetchSessions.sessionCount(); n != before {
		t.Fatalf("sessionless fetch changed the session count %d -> %d", before, n)
	}
	old := sf.fetch(13, 0, 0, map[int32]int64{0: 0, 1: 0}, nil).SessionID
	renewed := sf.fetch(13, old, 0, map[int32]int64{0: 0}, nil).SessionID
	if old == 0 || renewed == 0 || renewed == old {
		t.Fatalf("sessions %d then %d", old, renewed)
	}
	if r := sf.fetch(13, old, 1, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("session replaced by a full fetch still answers: error %d", r.ErrorCode)
	}
	if r := sf.fetch(13, renewed, 1, nil, nil); r.ErrorCode != 0 || r.SessionID != renewed {
		t.Fatalf("v13 session: error %d session %d", r.ErrorCode, r.SessionID)
	}
}

// TestFetchSessionKgoConsumer: franz-go's consumer, which uses sessions,
// reads a 100-partition topic while it is being written, every record once
// and in order.
func TestFetchSessionKgoConsumer(t *testing.T) {
	srv := startSessionBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.DefaultProduceTopic("many"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 100, 1, nil, "many"); err != nil {
		t.Fatal(err)
	}
	const total = 6000
	produced := make(chan error, 1)
	go func() {
		for i := range total {
			r := &kgo.Record{Key: []byte(fmt.Sprint(i % 300)), Value: []byte(fmt.Sprint(i))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				produced <- err
				return
			}
			if i%1000 == 0 {
				time.Sleep(50 * time.Millisecond) // let the consumer catch up: incremental fetches that wait
			}
		}
		produced <- nil
	}()
	cons, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.ConsumeTopics("many"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	last := map[string]int{} // per key: records of one key go to one partition, in order
	n := 0
	for n < total {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", n, total, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			var v int
			fmt.Sscan(string(r.Value), &v)
			if prev, ok := last[string(r.Key)]; ok && v <= prev {
				t.Fatalf("key %s: %d after %d", r.Key, v, prev)
			}
			last[string(r.Key)] = v
			n++
		})
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Fatalf("consumed %d records, want %d", n, total)
	}
	if srv.fetchSessions.sessionCount() == 0 || srv.fetchSessions.incrementalFetches.Load() == 0 {
		t.Fatalf("sessions %d, incremental fetches %d: the consumer did not use a session",
			srv.fetchSessions.sessionCount(), srv.fetchSessions.incrementalFetches.Load())
	}
}
