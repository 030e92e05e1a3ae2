package recorder

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A franz-go client through the proxy to an in-process fake cluster:
// produce and consume work (so Metadata's broker address was rewritten to
// the proxy's: the client connects nowhere else), and the recording holds
// the requests with their decodable bodies and responses, round-tripping
// through the file format.
func TestProxyRecordsAClientSession(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	p, err := Listen(fake.ListenAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("rec-test"),
		kgo.ConsumeTopics("t"), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for got == 0 && ctx.Err() == nil {
		got += cl.PollFetches(ctx).NumRecords()
	}
	if got != 1 {
		t.Fatalf("consumed %d records through the proxy: %v", got, ctx.Err())
	}
	cl.Close()
	frames := p.Close()

	rec := &Recording{Header: Header{Format: Format, Session: "test", RecordedAt: time.Now()}, Frames: frames}
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := rec.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Frames) != len(frames) || len(frames) == 0 {
		t.Fatalf("read %d frames back, wrote %d", len(back.Frames), len(frames))
	}
	seen := map[int16]bool{}
	for i, fr := range back.Frames {
		if fr.Seq != i+1 || fr.ClientID == nil || *fr.ClientID != "rec-test" {
			t.Errorf("frame %d: seq %d client id %v", i, fr.Seq, fr.ClientID)
		}
		req := kmsg.RequestForKey(fr.Key)
		req.SetVersion(fr.Version)
		if err := req.ReadFrom(fr.Request); err != nil {
			t.Errorf("frame %d (%s v%d): request body does not decode: %v", i, kmsg.NameForKey(fr.Key), fr.Version, err)
		}
		if fr.Response == nil {
			continue
		}
		resp := req.ResponseKind()
		resp.SetVersion(fr.Version)
		if err := resp.ReadFrom(fr.Response); err != nil {
			t.Errorf("frame %d (%s v%d): response body does not decode: %v", i, kmsg.NameForKey(fr.Key), fr.Version, err)
		}
		seen[fr.Key] = true
	}
	for _, k := range []kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.Produce, kmsg.Fetch} {
		if !seen[int16(k)] {
			t.Errorf("no %s request with its response recorded", kmsg.NameForKey(int16(k)))
		}
	}
}

// Tag sections are skipped whatever their contents; a truncated one is
// refused.
func TestSkipTags(t *testing.T) {
	b, ok := skipTags([]byte{2, 0, 1, 9, 5, 2, 7, 7, 42})
	if !ok || len(b) != 1 || b[0] != 42 {
		t.Fatalf("skipTags: %v %v", b, ok)
	}
	if _, ok := skipTags([]byte{1, 0, 5, 1}); ok {
		t.Fatal("a truncated tag section was accepted")
	}
}

// Produce with acks=0 has no answer, so the proxy does not wait for one
// (it would pair the next answer with the wrong request otherwise).
func TestExpectsResponse(t *testing.T) {
	for _, acks := range []int16{0, 1, -1} {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks = 13, acks
		fr := Frame{Key: req.Key(), Version: req.Version, Request: req.AppendTo(nil)}
		if got := expectsResponse(fr); got != (acks != 0) {
			t.Errorf("acks=%d: expectsResponse %v", acks, got)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	if !expectsResponse(Frame{Key: meta.Key(), Version: 13, Request: meta.AppendTo(nil)}) {
		t.Error("Metadata: no answer expected")
	}
}
