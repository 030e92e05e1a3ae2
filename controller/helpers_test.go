package controller

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// testLogger logs warnings and errors only, to stderr: etcd goroutines may
// still log a moment after a test ends, when t.Log would panic.
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func testConfig(t *testing.T, nodeID int32) Config {
	return Config{
		NodeID:    nodeID,
		Rack:      "rack-a",
		Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}},
		DataDir:   t.TempDir(),
		Logger:    testLogger(),
	}
}

// runController starts a controller with cfg within ctx; closing it is
// the caller's.
func runController(t *testing.T, ctx context.Context, cfg Config) *Controller {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return c
}

// startController starts a controller with cfg (within 30 s) and closes it
// when the test ends.
func startController(t *testing.T, cfg Config) *Controller {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := runController(t, ctx, cfg)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// eventually polls cond until it holds, failing the test after 10s. Only for
// state another controller's watch applies asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requireCode asserts err is a controller *Error with the Kafka code and, if
// msg is not empty, that message.
func requireCode(t *testing.T, err error, code *kerr.Error, msg string) {
	t.Helper()
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != code {
		t.Fatalf("error = %v, want %s", err, code.Message)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *controller.Error", err)
	}
	if msg != "" && ErrorMessage(err) != msg {
		t.Fatalf("message = %q\nwant      %q", ErrorMessage(err), msg)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
