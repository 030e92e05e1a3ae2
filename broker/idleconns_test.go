package broker

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConnectionsMaxIdle: with connections.max.idle.ms=300 a connection
// that sends nothing more is closed, while one sending a request every
// 50 ms stays open and served.
func TestConnectionsMaxIdle(t *testing.T) {
	srv := startTestBroker(t, map[string]string{"connections.max.idle.ms": "300"})
	defer srv.Close()
	idle, busy := dialRawAddr(t, srv.Addr()), dialRawAddr(t, srv.Addr())
	idle.roundTrip(apiVersions())
	busy.roundTrip(apiVersions())
	for range 16 { // 800 ms: past the idle time more than twice
		busy.roundTrip(apiVersions())
		time.Sleep(50 * time.Millisecond)
	}
	idle.expectClosed("a connection idle past connections.max.idle.ms")
	busy.roundTrip(apiVersions())
	if got := srv.IdleConnectionsClosed(); got != 1 {
		t.Fatalf("IdleConnectionsClosed %d; want 1", got)
	}
}

// TestNonReadingClientReleased: a client that pipelines requests with
// large responses and never reads them blocks the broker's writes; after
// connections.max.idle.ms without progress the broker closes it and lets
// go of the connection (its goroutines and held responses), while another
// client is served throughout.
func TestNonReadingClientReleased(t *testing.T) {
	srv := startTestBroker(t, map[string]string{"connections.max.idle.ms": "500", "queued.max.request.bytes": "104857600"})
	defer srv.Close()
	other := dialRawAddr(t, srv.Addr())
	other.roundTrip(apiVersions())

	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.(*net.TCPConn).SetReadBuffer(4096)
	// A Fetch of 40,000 partitions of an unknown topic: a 1.1 MB request
	// answered with some 1.5 MB of per-partition errors.
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "nobody-reads"
	rt.Partitions = make([]kmsg.FetchRequestTopicPartition, 40000)
	for i := range rt.Partitions {
		p := &rt.Partitions[i]
		p.Partition, p.CurrentLeaderEpoch, p.LogStartOffset, p.PartitionMaxBytes = int32(i), -1, -1, 1<<20
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	frame := f.AppendRequest(nil, req, 1)
	flooded := make(chan struct{})
	go func() { // meanwhile the other client keeps busy, below
		defer close(flooded)
		for range 24 {
			nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := nc.Write(frame); err != nil {
				return // the broker stopped reading (in-flight bound) or closed it
			}
		}
	}()
	defer func() { <-flooded }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		srv.connsMu.Lock()
		n := len(srv.conns)
		srv.connsMu.Unlock()
		srv.reqBytes.mu.Lock()
		held := srv.reqBytes.used
		srv.reqBytes.mu.Unlock()
		select {
		case <-flooded:
		default:
			n = -1 // still sending
		}
		if n == 1 && held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a client stopped reading: %d connections, %d request bytes held; want 1 (the other) and 0", n, held)
		}
		other.roundTrip(apiVersions())
		time.Sleep(50 * time.Millisecond)
	}
	if srv.IdleConnectionsClosed() < 1 {
		t.Fatal("the non-reading client was not closed by idle expiry")
	}
}
