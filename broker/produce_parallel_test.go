package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLargeProduceAppendsPartitionsInParallel: a produce request large
// enough to be appended by several goroutines still answers every partition
// in request order with its own code and offsets, failures included, and
// the records land in their own partitions; a partition named twice is
// appended in request order. Run with -race, it also checks the parallel
// appends share nothing unguarded.
func TestLargeProduceAppendsPartitionsInParallel(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.MaxVersions(byNameVersions())) // raw produces by topic name
	const parts = 8
	createTopic(t, cl, "par", parts, nil)
	value := func(round, p int) []byte {
		return append([]byte(fmt.Sprintf("r%d-p%d-", round, p)), bytes.Repeat([]byte{byte('a' + p)}, 40<<10)...)
	}
	request := func(round int, corrupt int32, extra ...kmsg.ProduceRequestTopicPartition) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "par"
		for p := range parts {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(p)
			rp.Records = recordBatch(value(round, p))
			if int32(p) == corrupt {
				rp.Records[len(rp.Records)-1] ^= 0xff
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		unknown := kmsg.NewProduceRequestTopicPartition()
		unknown.Partition = 99
		unknown.Records = recordBatch([]byte("nowhere"))
		rt.Partitions = append(rt.Partitions, unknown)
		rt.Partitions = append(rt.Partitions, extra...)
		missing := kmsg.NewProduceRequestTopic()
		missing.Topic = "no-such-topic"
		mp := kmsg.NewProduceRequestTopicPartition()
		mp.Records = recordBatch([]byte("nowhere"))
		missing.Partitions = append(missing.Partitions, mp)
		req.Topics = append(req.Topics, rt, missing)
		return req
	}
	send := func(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		if len(resp.Topics) != 2 || resp.Topics[0].Topic != "par" || resp.Topics[1].Topic != "no-such-topic" {
			t.Fatalf("response topics %+v", resp.Topics)
		}
		if code := resp.Topics[1].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("missing topic: code %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
		}
		return resp
	}

	// Round 0: partition 3's batch is corrupt.
	resp := send(request(0, 3))
	got := resp.Topics[0].Partitions
	if len(got) != parts+1 {
		t.Fatalf("%d partitions answered, want %d", len(got), parts+1)
	}
	for i, sp := range got[:parts] {
		want := kerr.ErrorForCode(0)
		if i == 3 {
			want = kerr.CorruptMessage
		}
		if sp.Partition != int32(i) || kerr.ErrorForCode(sp.ErrorCode) != want {
			t.Fatalf("answer %d: partition %d code %d, want partition %d error %v", i, sp.Partition, sp.ErrorCode, i, want)
		}
		if want == nil && sp.BaseOffset != 0 {
			t.Fatalf("partition %d: base offset %d, want 0", i, sp.BaseOffset)
		}
	}
	if sp := got[parts]; sp.Partition != 99 || sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition 99: %+v", sp)
	}

	// Round 1: every batch good, and partition 0 named twice more (request
	// order: its round-1 batch, then "dup-1", then "dup-2").
	dup := func(v string) kmsg.ProduceRequestTopicPartition {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = recordBatch(append([]byte(v), bytes.Repeat([]byte{'z'}, 40<<10)...))
		return rp
	}
	resp = send(request(1, -1, dup("dup-1"), dup("dup-2")))
	got = resp.Topics[0].Partitions
	for i, sp := range got[:parts] {
		want := int64(1)
		if i == 3 {
			want = 0
		}
		if sp.ErrorCode != 0 || sp.BaseOffset != want {
			t.Fatalf("round 1, partition %d: code %d base offset %d, want 0 and %d", i, sp.ErrorCode, sp.BaseOffset, want)
		}
	}
	if a, b := got[parts+1], got[parts+2]; a.ErrorCode != 0 || b.ErrorCode != 0 || a.BaseOffset != 2 || b.BaseOffset != 3 {
		t.Fatalf("partition 0 named twice more: offsets %d and %d (codes %d, %d), want 2 and 3", a.BaseOffset, b.BaseOffset, a.ErrorCode, b.ErrorCode)
	}

	recs := consumeAll(t, srv, "par", 2*parts-1+2)
	byPart := map[int32][]string{}
	for _, r := range recs {
		// The value's name: "r<round>-p<partition>" or "dup-<n>z".
		byPart[r.Partition] = append(byPart[r.Partition], string(r.Value[:bytes.IndexByte(r.Value, '-')+3]))
		if r.Partition != 0 || r.Offset < 2 {
			if fill := r.Value[len(r.Value)-1]; fill != byte('a'+r.Partition) {
				t.Fatalf("partition %d offset %d holds another partition's record (fill %q)", r.Partition, r.Offset, fill)
			}
		}
	}
	for p := range int32(parts) {
		want := []string{fmt.Sprintf("r0-p%d", p), fmt.Sprintf("r1-p%d", p)}
		switch p {
		case 0:
			want = append(want, "dup-1z", "dup-2z")
		case 3:
			want = want[1:]
		}
		if fmt.Sprint(byPart[p]) != fmt.Sprint(want) {
			t.Fatalf("partition %d holds %v, want %v", p, byPart[p], want)
		}
	}
}
