package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompressionTypeActs: a producer sending uncompressed batches to a
// topic with compression.type=zstd leaves zstd batches on disk (the
// segment file read as it is), and franz-go reads the records back; the
// broker's compression.type (lz4 here) applies to topics without their
// own, and "producer" keeps the producer's codec.
func TestCompressionTypeActs(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir, "compression.type", "lz4")
	defer srv.Close()
	cl := newClient(t, srv, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	createTopic(t, cl, "to-zstd", 1, map[string]*string{"compression.type": kgoStr("zstd"), "compression.zstd.level": kgoStr("9")})
	createTopic(t, cl, "to-default", 1, nil)
	createTopic(t, cl, "as-produced", 1, map[string]*string{"compression.type": kgoStr("producer")})

	for topic, want := range map[string]int16{"to-zstd": 4, "to-default": 3, "as-produced": 0} {
		var recs []*kgo.Record
		for i := 0; i < 200; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)),
				Value:   []byte(fmt.Sprintf("value %d of a topic stored as codec %d", i, want)),
				Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}})
		}
		for _, batch := range [][]*kgo.Record{recs[:50], recs[50:120], recs[120:]} {
			if err := cl.ProduceSync(context.Background(), batch...).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", topic, err)
			}
		}

		seg, err := os.ReadFile(filepath.Join(dir, "logs", topic+"-0", "00000000000000000000.log"))
		if err != nil {
			t.Fatal(err)
		}
		batches, next := 0, int64(0)
		for len(seg) > 0 {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(seg); err != nil {
				t.Fatalf("%s: segment: %v", topic, err)
			}
			seg = seg[12+int(rb.Length):]
			if codec := rb.Attributes & 7; codec != want {
				t.Fatalf("%s: batch at %d stored with codec %d, want %d", topic, rb.FirstOffset, codec, want)
			}
			if rb.FirstOffset != next {
				t.Fatalf("%s: batch at %d, want %d", topic, rb.FirstOffset, next)
			}
			next += int64(rb.NumRecords)
			batches++
		}
		if next != 200 || batches < 3 {
			t.Fatalf("%s: %d records in %d batches on disk", topic, next, batches)
		}

		got := readAllRecords(t, srv, topic)
		if len(got) != len(recs) {
			t.Fatalf("%s: read %d records, want %d", topic, len(got), len(recs))
		}
		for i, r := range got {
			if r.Offset != int64(i) || string(r.Key) != string(recs[i].Key) || string(r.Value) != string(recs[i].Value) ||
				len(r.Headers) != 1 || string(r.Headers[0].Value) != fmt.Sprint(i) {
				t.Fatalf("%s: record %d read back as offset %d key %q value %q", topic, i, r.Offset, r.Key, r.Value)
			}
		}
	}
}
