package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseRequestClientIDCache(t *testing.T) {
	var cache ClientIDCache
	parse := func(id *string) *Request {
		t.Helper()
		req, err := ParseRequest(requestFrame(3, 4, 1, id, 1, nil, metadataBody(4)), KafkaVersions, &cache)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	a, b := parse(strPtr("cli")), parse(strPtr("cli"))
	if *a.ClientID != "cli" || a.ClientID != b.ClientID {
		t.Fatalf("same client id not shared: %p %p", a.ClientID, b.ClientID)
	}
	if n := parse(nil); n.ClientID != nil {
		t.Fatalf("null client id read as %q", *n.ClientID)
	}
	c := parse(strPtr("other"))
	if *c.ClientID != "other" || *a.ClientID != "cli" {
		t.Fatalf("client ids %q %q", *a.ClientID, *c.ClientID)
	}
	if d := parse(strPtr("other")); d.ClientID != c.ClientID {
		t.Fatal("changed client id not cached")
	}
}

// BenchmarkParseProduce decodes a Produce request of 6 partitions, as a
// connection's read loop does.
func BenchmarkParseProduce(b *testing.B) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "bench"
	for p := int32(0); p < 6; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, make([]byte, 16<<10)
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	frame := requestFrame(0, 9, 1, strPtr("bench-producer"), 2, nil, req.AppendTo(nil))
	var cache ClientIDCache
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseRequest(frame, KafkaVersions, &cache); err != nil {
			b.Fatal(err)
		}
	}
}
