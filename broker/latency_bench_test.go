package broker_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/recordbatch"
)

// The produce path and the produce -> parked fetch round trip, measured on
// a broker in this process over loopback with raw frames, so that allocs/op
// is the broker's (the client side reuses its buffers): what a produce costs
// in steady state, and what a consumer waiting in a long poll adds.
//
//	go test ./broker/ -run '^$' -bench 'ProduceAcks1|ProduceToParkedFetch' -benchmem
//
// -trace shows the goroutine hand-offs of the round trip (BENCHMARKS.md,
// "Tail latency").

// benchBatch16K is an uncompressed batch of 16 records of 1,000 bytes, the
// producer batch BENCHMARKS.md's scenarios send.
func benchBatch16K() []byte {
	var recs []byte
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte(i % 61)
	}
	for i := range 16 {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Value = value
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // encoded with Length 0: one varint byte
		recs = rec.AppendTo(recs)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	now := time.Now().UnixMilli()
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.NumRecords = 16
	b.LastOffsetDelta = 15
	b.Records = recs
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[recordbatch.PosBatchLength:], uint32(len(raw)-recordbatch.LogOverhead))
	recordbatch.Batch(raw).SetCRC()
	return raw
}

// benchConn is a raw connection whose responses are read into one buffer.
type benchConn struct {
	b   *testing.B
	nc  net.Conn
	buf []byte
}

func dialBench(b *testing.B, addr string) *benchConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return &benchConn{b: b, nc: nc, buf: make([]byte, 1<<20)}
}

func (c *benchConn) send(frame []byte) {
	if _, err := c.nc.Write(frame); err != nil {
		c.b.Fatal(err)
	}
}

// read returns the next response's body after its correlation id.
func (c *benchConn) read() []byte {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c.nc, c.buf[:4]); err != nil {
		c.b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(c.buf))
	if n > len(c.buf) {
		c.buf = make([]byte, n)
	}
	if _, err := io.ReadFull(c.nc, c.buf[:n]); err != nil {
		c.b.Fatal(err)
	}
	return c.buf[4:n]
}

func benchProduceFrame(topic string, acks int16, batch []byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return encodeRequest(req, 1)
}

// benchFetchFrame is a full Fetch v12 of partition 0 from offset, parking up
// to 5 s for one byte; offset sits at the returned position.
func benchFetchFrame(topic string) (frame []byte, offsetAt int) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxWaitMillis = 5000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = 0x0102030405060708 // a marker to find
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame = encodeRequest(req, 2)
	for i := 0; i+8 <= len(frame); i++ {
		if binary.BigEndian.Uint64(frame[i:]) == 0x0102030405060708 {
			return frame, i
		}
	}
	panic("fetch offset not found in the frame")
}

// checkProduced fails b unless a Produce v9 response body accepted its
// one partition.
func checkProduced(b *testing.B, body []byte) {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	if err := resp.ReadFrom(body[1:]); err != nil { // past the header's tags
		b.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		b.Fatalf("produce: error code %d", code)
	}
}

func benchTopic(b *testing.B) *broker.Server {
	srv := startBroker(b, b.TempDir())
	cl := newClient(b, srv)
	createTopic(b, cl, "lat", 1, nil)
	cl.Close()
	return srv
}

// BenchmarkProduceAcks1 is one producer sending 16 KB batches to one
// partition with acks=1 and waiting for each answer.
func BenchmarkProduceAcks1(b *testing.B) {
	pc := dialBench(b, benchTopic(b).Addr())
	frame := benchProduceFrame("lat", 1, benchBatch16K())
	for range 100 { // warm up: pools, the first segment's pages
		pc.send(frame)
		checkProduced(b, pc.read())
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pc.send(frame)
		pc.read()
	}
}

// BenchmarkProduceToParkedFetch is the end-to-end path: a consumer's fetch
// parks at the log end, a producer appends one 16 KB batch (acks=1), and
// the iteration ends once both the produce answer and the fetch answer
// carrying the batch have arrived.
func BenchmarkProduceToParkedFetch(b *testing.B) {
	srv := benchTopic(b)
	pc, fc := dialBench(b, srv.Addr()), dialBench(b, srv.Addr())
	batch := benchBatch16K()
	frame := benchProduceFrame("lat", 1, batch)
	fetch, at := benchFetchFrame("lat")
	offset := int64(0)
	// The answers are decoded during the warm-up only: the timed rounds
	// count the broker's allocations, not the client's.
	round := func(check bool) {
		binary.BigEndian.PutUint64(fetch[at:], uint64(offset))
		fc.send(fetch)
		// Let the fetch park: an append racing its first read would be
		// answered without parking, and not measure the wake-up. A sleep
		// would not do (this machine's timers fire 1 ms late), nor would
		// Gosched (the spinning goroutine, back on the global queue, is
		// found before the poller's ready connections): it spins.
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; broker.ParkedFetches(srv) == 0; i++ {
			if i%4096 == 0 && time.Now().After(deadline) {
				b.Fatal("the fetch never parked")
			}
		}
		pc.send(frame)
		if check {
			checkProduced(b, pc.read())
		} else {
			pc.read()
		}
		if got := fc.read(); len(got) < len(batch) {
			b.Fatalf("fetch answered with %d bytes, want the %d-byte batch", len(got), len(batch))
		}
		offset += 16
	}
	for range 100 {
		round(true)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		round(false)
	}
}
