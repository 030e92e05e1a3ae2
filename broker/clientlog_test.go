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
	cl := newClient(t, srv, kgo.AllowAutoTopicCreation())
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
