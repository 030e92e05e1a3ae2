package broker_test

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

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
