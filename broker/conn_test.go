package broker_test

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
)

// TestConnIdleThenRequestsSplitAcrossWrites: a connection that has gone
// idle (its read buffer back in the pool) is sent requests cut into pieces
// with pauses between them, inside the 4-byte size, the header and the body,
// two pipelined requests cut inside the second's size, and a Produce larger
// than the read buffer; each is answered, in order. A size above
// socket.request.max.bytes arriving the same way still closes the
// connection.
func TestConnIdleThenRequestsSplitAcrossWrites(t *testing.T) {
	const maxBytes = 1 << 20
	srv := startBroker(t, t.TempDir(), "socket.request.max.bytes", "1048576")
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "idle", 1, nil)

	rc := dialRaw(t, srv)
	apiVersions := func(corr int32) []byte {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		return encodeRequest(req, corr)
	}
	metadata := func(corr int32) []byte {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		return encodeRequest(req, corr)
	}
	expect := func(corrs ...int32) {
		t.Helper()
		for _, want := range corrs {
			corr, _, err := rc.readResponse()
			if err != nil {
				t.Fatalf("waiting for response %d: %v", want, err)
			}
			if corr != want {
				t.Fatalf("got response %d, want %d", corr, want)
			}
		}
	}
	idle := func() { time.Sleep(100 * time.Millisecond) }
	// sendCut writes b in pieces ending at cuts, pausing after each.
	sendCut := func(b []byte, cuts ...int) {
		prev := 0
		for _, c := range cuts {
			rc.send(b[prev:c])
			time.Sleep(30 * time.Millisecond)
			prev = c
		}
		rc.send(b[prev:])
	}

	rc.send(apiVersions(1))
	expect(1)
	idle()
	sendCut(metadata(2), 1, 3, 4, 9, 14)
	expect(2)
	idle()
	two := append(apiVersions(3), metadata(4)...)
	first := len(two) - len(metadata(4))
	sendCut(two, 2, first+2, first+6)
	expect(3, 4)

	// A Produce (acks=1) of a record larger than the read buffer, cut
	// inside the size and twice inside the body.
	idle()
	big := bytes.Repeat([]byte("strait"), 200<<10/6)
	req := produceRequest(t, "idle", 0, 5)
	req.Acks = 1
	req.Topics[0].Partitions[0].Records = recordBatch(big)
	p := encodeRequest(req, 5)
	sendCut(p, 2, 100, 70<<10)
	expect(5)
	got := consumeAll(t, srv, "idle", 1)
	if !bytes.Equal(got[0].Value, big) {
		t.Fatalf("record of %d bytes, want %d", len(got[0].Value), len(big))
	}

	// Over the limit, after idling, its size cut in two.
	idle()
	sendCut(binary.BigEndian.AppendUint32(nil, maxBytes+1), 2)
	rc.expectClosed()
}

// TestConnShutdownWithIdleConnections: Close with idle connections (read
// buffers in the pool, read goroutines waiting on empty sockets) and one
// connection stopped inside a frame returns promptly and closes them all.
func TestConnShutdownWithIdleConnections(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	var conns []*rawConn
	for i := range 20 {
		rc := dialRaw(t, srv)
		req := kmsg.NewPtrApiVersionsRequest()
		rc.send(encodeRequest(req, int32(i)))
		if _, _, err := rc.readResponse(); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, rc)
	}
	conns[0].send([]byte{0, 0}) // half a size
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v", took)
	}
	for _, rc := range conns {
		rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := rc.nc.Read(make([]byte, 1)); err == nil {
			t.Fatal("connection still open after Close")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("connection still open after Close")
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestConnBadFrameLogsWithConnection: a frame over the limit closes the
// connection with a warning that names the client's address and the
// listener (the connection's logger is built only then).
func TestConnBadFrameLogsWithConnection(t *testing.T) {
	cfg, _, err := config.Parse(map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                 t.TempDir(),
		"socket.request.max.bytes": "1024",
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rc := dialRaw(t, srv)
	rc.send(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 1))
	if _, _, err := rc.readResponse(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	rc.send(binary.BigEndian.AppendUint32(nil, 1025))
	rc.expectClosed()
	want := []string{"closing connection", "size = 1025 larger than 1024", "remote=" + rc.nc.LocalAddr().String(), "listener=PLAINTEXT"}
	deadline := time.Now().Add(5 * time.Second)
	for {
		line := ""
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "closing connection") {
				line = l
			}
		}
		ok := line != ""
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q in:\n%s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
