package broker_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/recordbatch"
)

// TestUnknownCodecLogIsRateLimited: thirty produces of a batch with codec
// id 6 are each refused, but logged at INFO and at most a line a second
// (with the count held back), never at ERROR: a client cannot flood the
// log with them.
func TestUnknownCodecLogIsRateLimited(t *testing.T) {
	cfg, _, err := config.Parse(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl := newClient(t, srv, kgo.AllowAutoTopicCreation(), kgo.MaxVersions(byNameVersions())) // raw produces by topic name
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "codec", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	bad := idempotentBatch(-1, -1, -1, "v")
	attrs := binary.BigEndian.Uint16(bad[recordbatch.PosAttributes:])
	binary.BigEndian.PutUint16(bad[recordbatch.PosAttributes:], attrs&^recordbatch.AttrCompressionMask|6)
	fixCRC(bad)
	start := time.Now()
	for range 30 {
		if sp := produceRaw(t, cl, "codec", bad); sp.ErrorCode == 0 {
			t.Fatal("a batch with codec id 6 was accepted")
		}
	}
	elapsed := time.Since(start)
	lines := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
			t.Errorf("client-caused error logged above INFO: %s", l)
		}
		if strings.Contains(l, "produce refused") {
			lines++
		}
	}
	if max := 1 + int(elapsed/time.Second) + 1; lines < 1 || lines > max {
		t.Fatalf("%d lines about refused produces over %v; want 1 to %d", lines, elapsed, max)
	}
}

// TestClientErrorFloodLogBounded is the issue's row "codec ids 5-7,
// malformed frames: an ERROR or WARN line per request": 20 produces with
// each of codec ids 5, 6 and 7, and 60 connections each sending one
// malformed frame (a negative size, a size past socket.request.max.bytes, a
// body that does not decode), sent as fast as the broker answers, give no
// ERROR line and at most a line a second per kind (three limiters: refused
// produces, refused connections, and one spare), while another client
// keeps producing and every record acknowledged before, during and after
// is read back.
func TestClientErrorFloodLogBounded(t *testing.T) {
	cfg, _, err := config.Parse(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"socket.request.max.bytes": "1048576"})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("keep"))
	createTopic(t, cl, "keep", 1, nil)
	createTopic(t, cl, "codec", 1, nil)
	produceAll(t, cl, testRecords("keep", 5))

	mark := len(logs.String())
	start := time.Now()
	for _, codec := range []uint16{5, 6, 7} {
		bad := idempotentBatch(-1, -1, -1, "v")
		attrs := binary.BigEndian.Uint16(bad[recordbatch.PosAttributes:])
		binary.BigEndian.PutUint16(bad[recordbatch.PosAttributes:], attrs&^recordbatch.AttrCompressionMask|codec)
		fixCRC(bad)
		for range 20 {
			if sp := produceRaw(t, cl, "codec", bad); sp.ErrorCode == 0 {
				t.Fatalf("a batch with codec id %d was accepted", codec)
			}
		}
	}
	undecodable := []byte{0, 0, 0, 14, 0, 3, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff} // Metadata v8 claiming 2^31-1 topics
	frames := [][]byte{{0xff, 0xff, 0xff, 0xff, 0, 0}, {0x7f, 0xff, 0xff, 0xff, 0, 0}, undecodable}
	for i := range 60 {
		r := dialRaw(t, srv)
		r.send(frames[i%len(frames)])
		r.expectClosed()
		r.nc.Close()
		if i%20 == 0 {
			otherClientServed(t, cl, "keep")
		}
	}
	elapsed := time.Since(start)
	produceAll(t, cl, testRecords("keep", 5))

	flood := logs.String()[mark:]
	lines := strings.Split(strings.TrimSpace(flood), "\n")
	for _, l := range lines {
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("client-caused error logged at ERROR: %s", l)
		}
	}
	if max := 3 * (int(elapsed/time.Second) + 2); len(lines) > max {
		t.Fatalf("%d log lines for 60 refused produces and 60 malformed frames over %v; want at most %d:\n%s", len(lines), elapsed, max, flood)
	}
	t.Logf("%d log lines over %v for 120 client errors:\n%s", len(lines), elapsed, flood)
	consumeAll(t, srv, "keep", 5+3+5) // before, the three "meanwhile" records, after
}
