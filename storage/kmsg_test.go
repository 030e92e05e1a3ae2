package storage

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgBatch encodes a produce batch with franz-go's kmsg types, an encoder
// independent of this package's test helpers.
func kmsgBatch(t *testing.T, codec compress.Codec, values []string, firstTs int64) []byte {
	t.Helper()
	var records []byte
	for i, v := range values {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: []byte("key"), Value: []byte(v),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("hv")}}}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // Length 0 took one varint byte
		records = r.AppendTo(records)
	}
	payload, err := compress.Compress(codec, nil, records)
	if err != nil {
		t.Fatal(err)
	}
	rb := kmsg.RecordBatch{
		Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: firstTs, MaxTimestamp: firstTs + int64(len(values)-1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(values)), Records: payload,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[recordbatch.PosBatchLength:], uint32(len(b)-recordbatch.LogOverhead))
	recordbatch.Batch(b).SetCRC()
	return b
}

func TestKmsgEncodedBatchesRoundTrip(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), nil)
	defer l.Close()
	values := []string{"alpha", "beta", "gamma"}
	for _, codec := range allCodecs {
		mustAppend(t, l, kmsgBatch(t, codec, values, testEpoch.UnixMilli()))
	}
	res, err := l.Read(0, math.MaxInt64, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b := readSlices(t, res)
	for i, codec := range allCodecs {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		b = b[12+int(rb.Length):]
		if rb.FirstOffset != int64(3*i) || rb.PartitionLeaderEpoch != 7 || rb.NumRecords != 3 {
			t.Fatalf("%s: stored batch %+v", codec, rb)
		}
		raw, err := compress.Decompress(codec, rb.Records, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for j, want := range values {
			var r kmsg.Record
			length, n := kbin.Varint(raw)
			if n <= 0 {
				t.Fatalf("bad record length")
			}
			if err := r.ReadFrom(raw[:n+int(length)]); err != nil {
				t.Fatal(err)
			}
			raw = raw[n+int(length):]
			if string(r.Value) != want || r.OffsetDelta != int32(j) || len(r.Headers) != 1 {
				t.Fatalf("%s record %d: %+v", codec, j, r)
			}
		}
	}
}
