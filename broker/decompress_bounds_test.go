package broker_test

import (
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// compressedBatch is a magic-v2 batch of count records whose records
// section is payload, already compressed with codec.
func compressedBatch(codec compress.Codec, count int32, payload []byte) []byte {
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.Attributes = int16(codec)
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	now := time.Now().UnixMilli()
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.NumRecords = count
	b.LastOffsetDelta = count - 1
	b.Records = payload
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[recordbatch.PosBatchLength:], uint32(len(raw)-recordbatch.LogOverhead))
	recordbatch.Batch(raw).SetCRC()
	return raw
}

// zstdBombPayload is ~3.3 MiB of concatenated zstd frames decoding to 30
// records of a 1 GiB value each (30 GiB).
func zstdBombPayload(t *testing.T) []byte {
	zeros, err := compress.Compress(compress.Zstd, nil, make([]byte, 32<<20))
	if err != nil {
		t.Fatal(err)
	}
	var payload []byte
	const value = 1 << 30
	for i := 0; i < 30; i++ {
		body := []byte{0}
		body = binary.AppendVarint(body, 0)
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, value)
		head := append(binary.AppendVarint(nil, int64(len(body)+value+1)), body...)
		payload, _ = compress.Compress(compress.Zstd, payload, head)
		for j := 0; j < value/(32<<20); j++ {
			payload = append(payload, zeros...)
		}
		payload, _ = compress.Compress(compress.Zstd, payload, []byte{0})
	}
	return payload
}

// Issue 17, row 3: raw snappy blocks claiming 64 MiB each, 16 partitions a
// request, from several connections at once, and a zstd bomb expanding to
// 30 GiB, are refused with CORRUPT_MESSAGE costing the broker little
// memory, while another producer keeps being served.
func TestDecompressionBombsRefusedCheaply(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"strait.max.decompressed.batch.bytes", "67108864",
		"message.max.bytes", "8388608")
	defer srv.Close()
	good := newClient(t, srv, kgo.DefaultProduceTopic("good"))
	createTopic(t, good, "bomb", 16, nil)
	createTopic(t, good, "good", 1, nil)

	forged := binary.AppendUvarint(nil, compress.MaxSnappyBlock) // claims 64 MiB
	forged = append(forged, 3<<2, 't', 'i', 'n', 'y')            // holds 4 bytes
	snappyBatch := compressedBatch(compress.Snappy, 1, forged)
	bombBatch := compressedBatch(compress.Zstd, 30, zstdBombPayload(t))

	request := func(batch []byte, parts int) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bomb"
		for p := 0; p < parts; p++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(p)
			rp.Records = batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
	const conns, perConn = 4, 4
	clients := make([]*kgo.Client, conns)
	for i := range clients {
		clients[i] = newClient(t, srv, kgo.MaxVersions(byNameVersions())) // raw produces by topic name
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make(chan string, conns*perConn*16+conns)
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perConn; i++ {
				resp, err := request(snappyBatch, 16).RequestWith(ctx, cl)
				if err != nil {
					errs <- err.Error()
					return
				}
				for _, p := range resp.Topics[0].Partitions {
					if p.ErrorCode != kerr.CorruptMessage.Code {
						errs <- "forged snappy: code " + kerr.ErrorForCode(p.ErrorCode).Error()
					}
				}
			}
		}()
	}
	// Meanwhile another producer is served.
	for i := 0; i < 10; i++ {
		if err := good.ProduceSync(ctx, &kgo.Record{Value: []byte("still here")}).FirstErr(); err != nil {
			t.Fatalf("good producer during the barrage: %v", err)
		}
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// 256 forged batches each claiming 64 MiB were 16 GiB of allocation
	// before snappy decoded by what it produces.
	snappyAlloc := after.TotalAlloc - before.TotalAlloc
	if snappyAlloc > 64<<20 {
		t.Fatalf("%d forged 64 MiB claims cost the process %d bytes", conns*perConn*16, snappyAlloc)
	}
	t.Logf("%d forged 64 MiB snappy claims: %d bytes allocated in the process", conns*perConn*16, snappyAlloc)

	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := request(bombBatch, 1).RequestWith(ctx, clients[0])
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("zstd bomb: %v", err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
		t.Fatalf("zstd bomb: code %d, want CORRUPT_MESSAGE", code)
	}
	// The cap is 64 MiB decompressed; the records walk streams through a
	// 64 KiB window, so allocation stays near the decoder's own buffers.
	bombAlloc := after.TotalAlloc - before.TotalAlloc
	if bombAlloc > 64<<20 {
		t.Fatalf("zstd bomb cost the process %d bytes", bombAlloc)
	}
	t.Logf("30 GiB zstd bomb (%d bytes) refused: %d bytes allocated in the process", len(bombBatch), bombAlloc)
	if err := good.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("good producer after the bombs: %v", err)
	}
}
