package controller

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{NodeID: 1}); err == nil {
		t.Fatal("New accepted an embedded etcd without a data directory")
	}
	if _, err := New(Config{NodeID: -1, DataDir: t.TempDir()}); err == nil {
		t.Fatal("New accepted a negative node id")
	}
}

// goroutinesSettle waits for the goroutine count to fall back to at most n.
func goroutinesSettle(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, want <= %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartFailsCleanlyWhenEtcdCannotStart(t *testing.T) {
	before := runtime.NumGoroutine()
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, 1)
	cfg.DataDir = file
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctxT(t)); err == nil {
		t.Fatal("Start succeeded with a file as data directory")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close after a failed Start: %v", err)
	}
	goroutinesSettle(t, before)
	if _, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "x", NumPartitions: 1, ReplicationFactor: 1}); err != ErrNotStarted {
		t.Fatalf("CreateTopic on a failed controller: %v", err)
	}
}

func TestStartFailsWhenExternalEtcdUnreachable(t *testing.T) {
	cfg := testConfig(t, 1)
	cfg.EtcdEndpoints = []string{"http://127.0.0.1:1"}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := c.Start(ctx); err == nil {
		t.Fatal("Start succeeded without etcd")
	}
}

func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	c := runController(t, ctxT(t), testConfig(t, 1))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	goroutinesSettle(t, before)
	if err := c.DeleteTopic(ctxT(t), "x"); err != ErrNotStarted {
		t.Fatalf("DeleteTopic after Close: %v", err)
	}
}

// TestStartToReady logs how long a controller with a fresh embedded etcd takes
// to be ready, and how long a restart on the same data takes.
func TestStartToReady(t *testing.T) {
	cfg := testConfig(t, 1)
	for _, run := range []string{"fresh", "restart"} {
		began := time.Now()
		c := runController(t, ctxT(t), cfg)
		t.Logf("%s start-to-ready: %v", run, time.Since(began))
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkStartToReady(b *testing.B) {
	for b.Loop() {
		c, err := New(Config{NodeID: 1, DataDir: b.TempDir(), Logger: testLogger()})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c.Close()
		b.StartTimer()
	}
}

// TestErrReportsEmbeddedEtcdStopping: the embedded member stopping while
// the controller runs is reported on Err (the broker stops on it); a
// controller closed normally reports nothing.
func TestErrReportsEmbeddedEtcdStopping(t *testing.T) {
	before := runtime.NumGoroutine()
	c := runController(t, ctxT(t), testConfig(t, 1))
	select {
	case err := <-c.Err():
		t.Fatalf("Err before any failure: %v", err)
	default:
	}
	c.etcdQuiet.Store(true)
	c.etcd.Server.HardStop()
	select {
	case err := <-c.Err():
		if err == nil {
			t.Fatal("Err delivered nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Err did not report the embedded etcd stopping")
	}
	c.Close()
	goroutinesSettle(t, before)

	c2 := runController(t, ctxT(t), testConfig(t, 1))
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c2.Err():
		t.Fatalf("Err after a normal Close: %v", err)
	default:
	}
	goroutinesSettle(t, before)
}
