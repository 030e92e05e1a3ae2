package broker

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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

// noAnswerYet asserts that c, which sent a request, gets no answer within
// 300 ms: its connection waits in the listen backlog.
func noAnswerYet(t *testing.T, c *rawClient, what string) {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if _, err := c.nc.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %v; want no answer yet", what, err)
	}
}

// answered asserts that c, which sent a request, gets its answer within
// 10 s.
func answered(t *testing.T, c *rawClient, what string) {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.readFrame(); err != nil {
		t.Fatalf("%s: %v; want the answer", what, err)
	}
}

// TestListenerMaxConnections: listener.name.client.max.connections=1 holds
// the CLIENT listener to one connection while another listener is served,
// max.connections=2 still bounds the broker on top of it, and raising both
// at runtime (the cluster default, as kafka-configs sets it) lets the
// waiting connection in. The inter-broker listener (PLAINTEXT) carries the
// admin client: it is exempt from max.connections, as in Kafka.
func TestListenerMaxConnections(t *testing.T) {
	srv := startTestBroker(t, map[string]string{
		"listeners":                            "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0,OTHER://127.0.0.1:0",
		"listener.security.protocol.map":       "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT,OTHER:PLAINTEXT",
		"inter.broker.listener.name":           "PLAINTEXT",
		"max.connections":                      "2",
		"listener.name.client.max.connections": "1",
	})
	defer srv.Close()
	addrs := srv.Addrs()
	client, other := addrs[1].String(), addrs[2].String()

	a := dialRawAddr(t, client)
	a.roundTrip(apiVersions())
	b := dialRawAddr(t, client)
	b.send(apiVersions())
	noAnswerYet(t, b, "second CLIENT connection over its listener's limit of 1")
	o1 := dialRawAddr(t, other)
	o1.roundTrip(apiVersions()) // OTHER has room while CLIENT waits

	a.nc.Close() // CLIENT has room again, and so has the broker
	answered(t, b, "second CLIENT connection once the first closed")
	// Only now does a second OTHER connection wait for the broker-wide
	// limit: had it waited while a closed, it could as well have taken the
	// slot before b (the accept loops race for it, as in Kafka).
	o2 := dialRawAddr(t, other)
	o2.send(apiVersions())
	noAnswerYet(t, o2, "second OTHER connection over max.connections=2 (b and o1 held)")
	o1.nc.Close()
	answered(t, o2, "second OTHER connection once the first closed")

	c := dialRawAddr(t, client)
	c.send(apiVersions())
	noAnswerYet(t, c, "third CLIENT connection")
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v} }
	resps, err := kadm.NewClient(cl).AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		set("max.connections", "10"), set("listener.name.client.max.connections", "3")})
	for _, r := range resps {
		if err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("raising the limits: %v", err)
	}
	answered(t, c, "third CLIENT connection once the limits were raised")
	if got := srv.ConnectionsRefused(); got != 0 {
		t.Fatalf("ConnectionsRefused %d; want 0 (connection limits wait, they do not refuse)", got)
	}
}
