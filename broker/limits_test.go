package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestQueuedMaxRequestBytesBackPressure: with queued.max.request.bytes set
// to 1 MiB, six pipelined 1.1 MB Fetch requests that each wait their
// max_wait are read one at a time (each frame waits until the broker holds
// under 1 MiB), so the bytes held never pass the bound plus one frame, and
// every byte is given back once the responses are written.
func TestQueuedMaxRequestBytesBackPressure(t *testing.T) {
	const limit, pipelined, maxWait = 1 << 20, 6, 300
	srv := startTestBroker(t, map[string]string{"queued.max.request.bytes": "1048576", "queued.max.requests": "16"})
	defer srv.Close()
	if got := srv.inFlightLimit(); got != 16 {
		t.Fatalf("in-flight limit %d; want queued.max.requests 16", got)
	}
	r := dialRawAddr(t, srv.Addr())

	// Auto-created by Metadata, waited for until it has a leader.
	deadline := time.Now().Add(10 * time.Second)
	for {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(8)
		name := "bp"
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
		md.AllowAutoTopicCreation = true
		resp := r.roundTrip(md).(*kmsg.MetadataResponse)
		if len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 && len(resp.Topics[0].Partitions) > 0 && resp.Topics[0].Partitions[0].ErrorCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic bp not ready: %+v", resp.Topics)
		}
		time.Sleep(20 * time.Millisecond)
	}

	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, maxWait, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "bp"
	rt.Partitions = make([]kmsg.FetchRequestTopicPartition, 40000) // 1.1 MB
	for i := range rt.Partitions {
		p := &rt.Partitions[i]
		p.CurrentLeaderEpoch, p.LogStartOffset, p.PartitionMaxBytes = -1, -1, 1<<20
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	frameSize := int64(len(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, 0)))

	start := time.Now()
	for range pipelined {
		r.send(req)
	}
	for i := range pipelined {
		r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := r.readFrame()
		if err != nil {
			t.Fatalf("fetch response %d: %v", i, err)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(11)
		if err := resp.ReadFrom(b[4:]); err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch response %d: %d topics; want bp/0 once", i, len(resp.Topics))
		}
	}
	elapsed := time.Since(start)
	// Each request waits its max_wait; admitted one at a time, they cannot
	// overlap (unbounded, the six wait together: about 300 ms).
	if min := time.Duration(pipelined-1) * maxWait * time.Millisecond; elapsed < min {
		t.Errorf("six fetches answered in %v; want at least %v (read one at a time)", elapsed, min)
	}
	srv.reqBytes.mu.Lock()
	peak := srv.reqBytes.peak
	srv.reqBytes.mu.Unlock()
	t.Logf("frame %d bytes, peak held %d bytes, %v for the six", frameSize, peak, elapsed)
	if peak > limit+frameSize {
		t.Errorf("peak held %d bytes; want at most the limit plus one frame (%d)", peak, limit+frameSize)
	}
	// The bytes are given back once the responses are written.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		srv.reqBytes.mu.Lock()
		used := srv.reqBytes.used
		srv.reqBytes.mu.Unlock()
		if used == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after every response", used)
		}
	}
	// Another connection is served.
	other := dialRawAddr(t, srv.Addr())
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(2)
	if resp := other.roundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions on another connection: error %d", resp.ErrorCode)
	}
}
