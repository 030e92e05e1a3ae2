package broker_test

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 17, bounded cost per request: a request naming the same topic or
// partition many times costs what one naming it once does (Kafka collapses
// the duplicates), and the broker keeps serving another client meanwhile.
// The broker runs in the test process, so the bytes it allocates while
// answering are measured with runtime.MemStats.TotalAlloc (an upper bound on
// what it can have held).

// allocatedDuring is the bytes allocated in the process while f runs.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// setCorr rewrites the correlation id of an encoded request frame.
func setCorr(frame []byte, corr int32) {
	binary.BigEndian.PutUint32(frame[8:], uint32(corr))
}

// otherClientServed asserts that a kgo client on its own connection can
// produce within 10 s.
func otherClientServed(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("meanwhile")}).FirstErr(); err != nil {
		t.Fatalf("another client's produce while the hostile request ran: %v", err)
	}
}

func metadataNaming(names []string) kmsg.Request {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8) // not flexible: readResponse's header is v0
	req.Topics = make([]kmsg.MetadataRequestTopic, len(names))
	for i := range names {
		req.Topics[i].Topic = &names[i]
	}
	return req
}

func readMetadata(t *testing.T, r *rawConn) *kmsg.MetadataResponse {
	t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, body, err := r.readResponse()
	if err != nil {
		t.Fatalf("reading the Metadata response: %v", err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(8)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding the Metadata response: %v", err)
	}
	return resp
}

// TestMetadataDuplicateTopicsAnsweredOnce: the 1.07 MiB Metadata
// request naming a 1,000-partition topic 40,000 times (RSS past 9 GiB
// before) is answered with the topic once, allocating under 64 MiB; 5.2 M
// empty names in 10 MB (2 GiB before) are answered with one
// INVALID_TOPIC_EXCEPTION entry, allocating under 512 MiB (decoding the
// 5.2 M entries is most of it).
func TestMetadataDuplicateTopicsAnsweredOnce(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "auto.create.topics.enable", "false")
	defer srv.Close()
	cl := newClient(t, srv)
	// 1,000 partitions take longer than createTopic's 10 s on a loaded
	// machine (each opens its log and becomes leader).
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1000, 1, nil, "wide-topic-with-1000-parts"); err != nil || r.Err != nil {
		t.Fatalf("create the 1,000-partition topic: %v %v", err, r.Err)
	}
	createTopic(t, cl, "other", 1, nil)

	names := make([]string, 40000)
	for i := range names {
		names[i] = "wide-topic-with-1000-parts"
	}
	frame := encodeRequest(metadataNaming(names), 1)
	t.Logf("request: %d bytes", len(frame))
	r := dialRaw(t, srv)
	var resp *kmsg.MetadataResponse
	alloc := allocatedDuring(func() {
		r.send(frame)
		otherClientServed(t, cl, "other")
		resp = readMetadata(t, r)
	})
	t.Logf("40,000 x a 1,000-partition topic: %d MiB allocated", alloc>>20)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1000 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("response: %d topics (first with %d partitions); want wide once with its 1000", len(resp.Topics), len(resp.Topics[0].Partitions))
	}
	if alloc > 64<<20 {
		t.Errorf("allocated %d MiB answering it; want under 64 MiB", alloc>>20)
	}

	empty := make([]string, 5_200_000)
	frame = encodeRequest(metadataNaming(empty), 2)
	empty = nil
	t.Logf("request: %d bytes", len(frame))
	alloc = allocatedDuring(func() {
		r.send(frame)
		otherClientServed(t, cl, "other")
		resp = readMetadata(t, r)
	})
	t.Logf("5.2 M empty names: %d MiB allocated", alloc>>20)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("response: %d topics; want the empty name once, INVALID_TOPIC_EXCEPTION", len(resp.Topics))
	}
	if alloc > 512<<20 {
		t.Errorf("allocated %d MiB answering it; want under 512 MiB", alloc>>20)
	}
}

// TestListOffsetsDuplicatePartitionsInvalid: as Kafka, every occurrence of
// a partition a ListOffsets request names twice is INVALID_REQUEST, and the
// partitions named once are answered.
func TestListOffsetsDuplicatePartitionsInvalid(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "lo", 3, nil)

	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(5) // not flexible: readResponse's header is v0
	req.ReplicaID = -1
	// lo/0 twice in one entry, lo/1 once in each of two entries, lo/2 once.
	for _, parts := range [][]int32{{0, 0, 1}, {1, 2}} {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		for _, p := range parts {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	r := dialRaw(t, srv)
	r.send(encodeRequest(req, 1))
	_, body, err := r.readResponse()
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrListOffsetsResponse()
	resp.SetVersion(5)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	var got []int16
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			got = append(got, sp.ErrorCode)
		}
	}
	inv := kerr.InvalidRequest.Code
	want := []int16{inv, inv, inv, inv, 0}
	if len(got) != len(want) {
		t.Fatalf("error codes %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("error codes %v; want %v", got, want)
		}
	}
}
