package broker_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

// BenchmarkProduceSpread is the scaling phase's load in miniature: each
// acks=1 request carries 1,000 records of 1 KB, as batches of 1,000/n
// records over n partitions (n=1,000: one record per batch, as a
// round-robin producer over 10,000 partitions sends). ns/batch is the
// broker's cost per partition of a request (the kernel's write of each
// batch included), B/op and allocs/op its allocations per request.
//
//	go test ./broker/ -run '^$' -bench ProduceSpread -benchmem
func BenchmarkProduceSpread(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			srv := startBroker(b, b.TempDir())
			cl := newClient(b, srv)
			createTopic(b, cl, "spread", int32(n), nil)
			cl.Close()
			batch := benchBatch(1000 / n)
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks = 1
			req.TimeoutMillis = 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "spread"
			for p := range n {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition = int32(p)
				rp.Records = batch
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			frame := encodeRequest(req, 1)
			pc := dialBench(b, srv.Addr())
			for range 5 { // warm up: every partition's segment opened
				pc.send(frame)
				body := pc.read()
				resp := kmsg.NewPtrProduceResponse()
				resp.SetVersion(9)
				if err := resp.ReadFrom(body[1:]); err != nil {
					b.Fatal(err)
				}
				for _, sp := range resp.Topics[0].Partitions {
					if sp.ErrorCode != 0 {
						b.Fatalf("partition %d: error code %d", sp.Partition, sp.ErrorCode)
					}
				}
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				pc.send(frame)
				pc.read()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/batch")
		})
	}
}

// benchBatch is an uncompressed batch of k records of 1,000 bytes.
func benchBatch(k int) []byte {
	var recs []byte
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte(i % 61)
	}
	for i := range k {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Value = value
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		recs = rec.AppendTo(recs)
	}
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	now := time.Now().UnixMilli()
	rb.FirstTimestamp, rb.MaxTimestamp = now, now
	rb.NumRecords = int32(k)
	rb.LastOffsetDelta = int32(k - 1)
	rb.Records = recs
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[recordbatch.PosBatchLength:], uint32(len(raw)-recordbatch.LogOverhead))
	recordbatch.Batch(raw).SetCRC()
	return raw
}
