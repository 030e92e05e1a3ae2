package broker

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func apiVersions() kmsg.Request {
	r := kmsg.NewPtrApiVersionsRequest()
	r.SetVersion(2)
	return r
}

// TestMaxConnectionsPerIP: with max.connections.per.ip=2, a third
// connection from 127.0.0.1 is closed right after accept and counted, the
// first two are still served, and once one closes a new one is taken.
func TestMaxConnectionsPerIP(t *testing.T) {
	srv := startTestBroker(t, map[string]string{"max.connections.per.ip": "2"})
	defer srv.Close()
	a, b := dialRawAddr(t, srv.Addr()), dialRawAddr(t, srv.Addr())
	a.roundTrip(apiVersions())
	b.roundTrip(apiVersions())
	c := dialRawAddr(t, srv.Addr())
	c.expectClosed("a third connection from one IP")
	if got := srv.ConnectionsRefused(); got != 1 {
		t.Fatalf("ConnectionsRefused %d; want 1", got)
	}
	a.roundTrip(apiVersions())
	b.nc.Close()
	// The broker counts b's close when it sees it: retry a bounded number
	// of times until a new connection is served.
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := dialRawAddr(t, srv.Addr())
		d.send(apiVersions())
		if _, err := d.readFrame(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection taken after one of two closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMaxConnectionsPerIPOverride: an override of 127.0.0.1 wins over a
// default of 0.
func TestMaxConnectionsPerIPOverride(t *testing.T) {
	srv := startTestBroker(t, map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:1"})
	defer srv.Close()
	a := dialRawAddr(t, srv.Addr())
	a.roundTrip(apiVersions())
	dialRawAddr(t, srv.Addr()).expectClosed("a second connection with an override of 1")
	a.roundTrip(apiVersions())
}

// TestMaxConnectionsBlocksAccept: with max.connections=2, a third
// connection waits (it is not served) until one of the two closes, then is
// served; the two keep being served meanwhile.
func TestMaxConnectionsBlocksAccept(t *testing.T) {
	srv := startTestBroker(t, map[string]string{"max.connections": "2"})
	defer srv.Close()
	a, b := dialRawAddr(t, srv.Addr()), dialRawAddr(t, srv.Addr())
	a.roundTrip(apiVersions())
	b.roundTrip(apiVersions())
	c := dialRawAddr(t, srv.Addr()) // completes in the listen backlog
	c.send(apiVersions())
	c.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if _, err := c.nc.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("third connection over max.connections=2: read %v; want no answer yet", err)
	}
	a.roundTrip(apiVersions())
	b.nc.Close()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Read(one[:]); err != nil {
		t.Fatalf("third connection after one closed: %v", err)
	}
	if got := srv.ConnectionsRefused(); got != 0 {
		t.Fatalf("ConnectionsRefused %d; want 0 (max.connections waits, it does not refuse)", got)
	}
}
