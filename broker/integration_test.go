package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"

	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/recordbatch"
)

// startBroker runs a broker on 127.0.0.1:0 with its logs and etcd in dir.
func startBroker(t testing.TB, dir string, props ...string) *broker.Server {
	t.Helper()
	kv := map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0",
		"log.dirs":  dir + "/logs",
	}
	for i := 0; i+1 < len(props); i += 2 {
		kv[props[i]] = props[i+1]
	}
	cfg, _, err := config.Parse(kv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	// Closed at the latest when the test ends, before its temporary
	// directory goes (registered after it, so run before it): an embedded
	// etcd whose data dir vanishes ends the test process. Close is
	// idempotent, so tests that close earlier are unaffected.
	t.Cleanup(func() { srv.Close() })
	<-srv.Ready()
	return srv
}

func newClient(t testing.TB, srv *broker.Server, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(srv.Addr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
}

// testRecords builds n records with keys, values, headers and timestamps.
func testRecords(topic string, n int) []*kgo.Record {
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic:     topic,
			Key:       []byte(fmt.Sprintf("key-%d", i%1000)),
			Value:     []byte(fmt.Sprintf("value-%d-%s", i, bytes.Repeat([]byte{'x'}, i%50))),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}},
			Timestamp: base.Add(time.Duration(i) * time.Microsecond).Truncate(time.Millisecond),
		}
	}
	return recs
}

func produceAll(t testing.TB, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeAll reads n records from the start of topic, directly (no group).
func consumeAll(t testing.TB, srv *broker.Server, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, srv, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	if len(out) != n {
		t.Fatalf("consumed %d records, want %d", len(out), n)
	}
	return out
}

// checkRecords verifies that got holds exactly want, in produce order within
// each partition, with consecutive offsets from 0.
func checkRecords(t testing.TB, want, got []*kgo.Record) {
	t.Helper()
	byPart := map[int32][]*kgo.Record{}
	for _, r := range want {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	gotPart := map[int32][]*kgo.Record{}
	for _, r := range got {
		gotPart[r.Partition] = append(gotPart[r.Partition], r)
	}
	for p, ws := range byPart {
		gs := gotPart[p]
		if len(gs) != len(ws) {
			t.Fatalf("partition %d: got %d records, want %d", p, len(gs), len(ws))
		}
		for i := range ws {
			w, g := ws[i], gs[i]
			if g.Offset != int64(i) || w.Offset != int64(i) {
				t.Fatalf("partition %d record %d: offset got %d, produced at %d", p, i, g.Offset, w.Offset)
			}
			if !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Value, g.Value) {
				t.Fatalf("partition %d offset %d: key/value mismatch: %q/%q vs %q/%q", p, i, g.Key, g.Value, w.Key, w.Value)
			}
			if !g.Timestamp.Equal(w.Timestamp) {
				t.Fatalf("partition %d offset %d: timestamp %v, want %v", p, i, g.Timestamp, w.Timestamp)
			}
			if len(g.Headers) != 1 || g.Headers[0].Key != "h" || !bytes.Equal(g.Headers[0].Value, w.Headers[0].Value) {
				t.Fatalf("partition %d offset %d: headers %v, want %v", p, i, g.Headers, w.Headers)
			}
		}
	}
}

// TestProduceConsumeEveryCodec writes 100k records to a 3-partition topic with
// each codec, reads them back, restarts the broker and reads them again.
func TestProduceConsumeEveryCodec(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir)
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	want := map[string][]*kgo.Record{}
	for _, c := range codecs {
		topic := "codec-" + c.name
		cl := newClient(t, srv, kgo.ProducerBatchCompression(c.codec), kgo.DefaultProduceTopic(topic))
		createTopic(t, cl, topic, 3, nil)
		recs := testRecords(topic, n)
		produceAll(t, cl, recs)
		checkRecords(t, recs, consumeAll(t, srv, topic, n))
		want[topic] = recs
		cl.Close()
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	srv = startBroker(t, dir)
	defer srv.Close()
	for topic, recs := range want {
		checkRecords(t, recs, consumeAll(t, srv, topic, n))
	}
}

// rawConn speaks the wire protocol directly, for what clients never send.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, srv *broker.Server) *rawConn {
	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc}
}

// request encodes req (header v1 or v2 as its version needs) with corr.
func encodeRequest(req kmsg.Request, corr int32) []byte {
	body := []byte{0, 0, 0, 0}
	body = binary.BigEndian.AppendUint16(body, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	id := "raw"
	body = binary.BigEndian.AppendUint16(body, uint16(len(id)))
	body = append(body, id...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	binary.BigEndian.PutUint32(body, uint32(len(body)-4))
	return body
}

func (r *rawConn) send(b []byte) {
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// readResponse returns the correlation id and the body after a v0 header.
func (r *rawConn) readResponse() (int32, []byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r.nc, size[:]); err != nil {
		return 0, nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.nc, buf); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := r.readResponse(); err == nil {
		r.t.Fatal("expected the broker to close the connection, got a response")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatal("expected the broker to close the connection; it stayed open")
	}
}

// TestBadFramesCloseOnlyThatConnection: a negative size, an oversized frame,
// an unknown API key and garbage in a body each close their connection, while
// a client on another connection keeps producing and consuming.
func TestBadFramesCloseOnlyThatConnection(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "socket.request.max.bytes", "1048576")
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("healthy"))
	createTopic(t, cl, "healthy", 1, nil)

	cases := map[string][]byte{
		"negative size":   {0xff, 0xff, 0xff, 0xf0},
		"oversized frame": binary.BigEndian.AppendUint32(nil, 1<<30),
		"unknown api key": func() []byte {
			b := encodeRequest(kmsg.NewPtrApiVersionsRequest(), 1)
			binary.BigEndian.PutUint16(b[4:], 9999)
			return b
		}(),
		"truncated body": func() []byte {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(9)
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("abc")}}
			b := encodeRequest(req, 1)
			b = b[:len(b)-6]
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}(),
		"huge array length": func() []byte {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(4)
			b := encodeRequest(req, 1)
			// The topic array count follows the header: claim 2^31-1 topics.
			hdr := 4 + 2 + 2 + 4 + 2 + 3
			binary.BigEndian.PutUint32(b[hdr:], 0x7fffffff)
			return b
		}(),
	}
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			rc := dialRaw(t, srv)
			rc.send(frame)
			rc.expectClosed()
			// Other clients are unaffected.
			produceAll(t, cl, []*kgo.Record{{Value: []byte(name)}})
		})
	}
	got := consumeAll(t, srv, "healthy", len(cases))
	if len(got) != len(cases) {
		t.Fatalf("got %d records", len(got))
	}
}

// TestPipelinedRequestsAnsweredInOrder sends many requests without waiting;
// the responses come back in request order, and an acks=0 produce among them
// gets no response.
func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "pipe", 1, nil)

	rc := dialRaw(t, srv)
	var batch []byte
	want := []int32{}
	for i := int32(1); i <= 30; i++ {
		switch i % 3 {
		case 0:
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(12)
			batch = append(batch, encodeRequest(req, i)...)
			want = append(want, i)
		case 1:
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(3)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
			batch = append(batch, encodeRequest(req, i)...)
			want = append(want, i)
		case 2:
			batch = append(batch, encodeRequest(produceRequest(t, "pipe", 0, i), i)...)
		}
	}
	rc.send(batch)
	for _, w := range want {
		corr, _, err := rc.readResponse()
		if err != nil {
			t.Fatalf("waiting for response %d: %v", w, err)
		}
		if corr != w {
			t.Fatalf("got response %d, want %d (acks=0 produce must not be answered)", corr, w)
		}
	}
	// Every acks=0 produce was appended, in order.
	got := consumeAll(t, srv, "pipe", 10)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprint(3*i+2) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
}

// produceRequest builds an acks=0 Produce v9 carrying one uncompressed record
// whose value is corr.
func produceRequest(t testing.TB, topic string, partition int32, corr int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 0
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = recordBatch([]byte(fmt.Sprint(corr)))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// recordBatch builds a valid one-record magic-v2 batch holding value.
func recordBatch(value []byte) []byte {
	rec := kmsg.NewRecord()
	rec.Value = value
	rec.Key = nil
	// The length prefix counts the bytes after itself (one varint byte here).
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	recBytes := rec.AppendTo(nil)
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	now := time.Now().UnixMilli()
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.NumRecords = 1
	b.Records = recBytes
	raw := b.AppendTo(nil)
	// batchLength covers everything after itself; CRC covers attributes onward.
	binary.BigEndian.PutUint32(raw[recordbatch.PosBatchLength:], uint32(len(raw)-recordbatch.LogOverhead))
	recordbatch.Batch(raw).SetCRC()
	return raw
}

// TestCorruptBatchRejected: a CRC mismatch is CORRUPT_MESSAGE and nothing is
// appended; the partition keeps working.
func TestCorruptBatchRejected(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("crc"), kgo.MaxVersions(byNameVersions())) // a raw produce by topic name
	createTopic(t, cl, "crc", 1, nil)
	req := produceRequest(t, "crc", 0, 7)
	req.Acks = -1
	req.Topics[0].Partitions[0].Records[len(req.Topics[0].Partitions[0].Records)-1] ^= 0xff
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
		t.Fatalf("error code %d, want CORRUPT_MESSAGE", code)
	}
	produceAll(t, cl, []*kgo.Record{{Value: []byte("ok")}})
	got := consumeAll(t, srv, "crc", 1)
	if got[0].Offset != 0 || string(got[0].Value) != "ok" {
		t.Fatalf("got %+v", got[0])
	}
}
