package broker

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHandlerPanicClosesOnlyItsConnection: a handler that panics (a bug,
// here planted in DescribeCluster) costs the connection that sent the
// request, not the broker: another client keeps being served.
func TestHandlerPanicClosesOnlyItsConnection(t *testing.T) {
	props := testProps()
	props["log.dirs"] = t.TempDir()
	srv, _ := newTestServer(t, props)
	// Set before Start, so no connection goroutine reads the table yet.
	table := maps.Clone(srv.handlers)
	h := table[int16(kmsg.DescribeCluster)]
	h.fn = func(*conn, *exchange) { panic("planted") }
	table[int16(kmsg.DescribeCluster)] = h
	srv.handlers = table
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	<-srv.Ready()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	victim, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	if _, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, victim); err == nil {
		t.Fatal("DescribeCluster answered; want the connection closed by the planted panic")
	}
	other, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i := range 3 {
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, other); err != nil {
			t.Fatalf("metadata %d after the panic: %v", i, err)
		}
	}
	select {
	case err := <-srv.Err():
		t.Fatalf("broker reported %v after a handler panic", err)
	default:
	}
}
