package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/recordbatch"
)

// The API versions Kafka 4.1-4.4 added, each exercised at that version with
// kmsg requests pinned to it (kgo would pick the newest version itself), the
// error paths included.

// v44Setup starts a broker with topic (one partition) holding the records
// values, and returns the broker, a client and the topic's id.
func v44Setup(t *testing.T, topic string, values ...string) (*broker.Server, *kgo.Client, [16]byte) {
	t.Helper()
	srv := startBroker(t, t.TempDir())
	t.Cleanup(func() { srv.Close() })
	cl := newClient(t, srv)
	createTopic(t, cl, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil || md.Topics[topic].Err != nil {
		t.Fatal(err, md.Topics[topic].Err)
	}
	return srv, cl, md.Topics[topic].ID
}

// pinned sends req at version v and fails the test on a transport error.
func pinned[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request, v int16) R {
	t.Helper()
	req.SetVersion(v)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%T v%d: %v", req, v, err)
	}
	if resp.GetVersion() != v {
		t.Fatalf("%T answered at v%d, sent v%d", resp, resp.GetVersion(), v)
	}
	return resp.(R)
}

// countRecords counts the records of the batches in b.
func countRecords(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		if len(b) < recordbatch.HeaderSize {
			t.Fatalf("a batch of %d bytes", len(b))
		}
		h := recordbatch.ParseHeader(b)
		if h.Size() > int64(len(b)) {
			t.Fatalf("batch of %d bytes, %d left", h.Size(), len(b))
		}
		n += int(h.RecordCount)
		b = b[h.Size():]
	}
	return n
}

var unknownTopicID = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

// TestFetchV18: records by topic id, UNKNOWN_TOPIC_ID for an id no topic
// has.
func TestFetchV18(t *testing.T) {
	_, cl, id := v44Setup(t, "f18", "a", "b")
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	for _, tid := range [][16]byte{id, unknownTopicID} {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := pinned[*kmsg.FetchResponse](t, cl, req, 18)
	if resp.ErrorCode != 0 || len(resp.Topics) != 2 {
		t.Fatalf("%v, %d topics; want NONE and 2", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		p := rt.Partitions[0]
		switch rt.TopicID {
		case id:
			if p.ErrorCode != 0 || p.HighWatermark != 2 {
				t.Fatalf("known topic: %v, high watermark %d; want NONE, 2", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
			}
			if n := countRecords(t, p.RecordBatches); n != 2 {
				t.Fatalf("known topic: %d records, want 2", n)
			}
		case unknownTopicID:
			if p.ErrorCode != kerr.UnknownTopicID.Code {
				t.Fatalf("unknown topic id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(p.ErrorCode))
			}
		default:
			t.Fatalf("answer for topic id %x, asked for neither", rt.TopicID)
		}
	}
}
