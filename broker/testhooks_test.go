package broker

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/internal/clock"
)

// Tests of the fault-injection hooks (testhooks.go); package straittest
// tests the faults end to end on clusters.

// The request hook sees each request once with who sent it; its Response
// answers in place of the handler; nil removes it, leaving no hook state.
func TestRequestHook(t *testing.T) {
	srv := startTestBroker(t)
	defer srv.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.ClientID("hooked"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var mu sync.Mutex
	var seen []RequestInfo
	srv.SetRequestHook(func(info RequestInfo) RequestAction {
		mu.Lock()
		seen = append(seen, info)
		mu.Unlock()
		if info.Key == int16(kmsg.DescribeCluster) {
			resp := kmsg.NewPtrDescribeClusterResponse()
			resp.ClusterID = "from-the-hook"
			return RequestAction{Response: resp}
		}
		return RequestAction{}
	})
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil || resp.ClusterID != "from-the-hook" {
		t.Fatalf("describe cluster: %v %+v", err, resp)
	}
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last.Key != int16(kmsg.DescribeCluster) || last.ClientID != "hooked" || last.Principal != "User:ANONYMOUS" ||
		last.Listener != "PLAINTEXT" || last.Remote == nil || last.Body.Key() != int16(kmsg.DescribeCluster) {
		t.Fatalf("hook saw %+v", last)
	}

	srv.SetRequestHook(nil)
	if srv.hooks.ptr.Load() != nil {
		t.Fatal("hooks left set after removing the only one")
	}
	resp, err = kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil || resp.ClusterID != srv.ClusterID() {
		t.Fatalf("describe cluster after removing the hook: %v %+v", err, resp)
	}
}

// Kill ends every goroutine and releases every descriptor, as Close, and
// unlocks the data directories: a broker started again on them in the same
// process finds its records.
func TestKillLeaksNothingAndRestarts(t *testing.T) {
	warm := startLifecycleBroker(t, t.TempDir())
	lifecycleTraffic(t, []string{warm.Addr()}, "warmup", 1)
	if err := warm.Kill(); err != nil {
		t.Fatal(err)
	}
	base := takeBaseline(t)
	for round := range 3 {
		dir := t.TempDir()
		srv := startLifecycleBroker(t, dir)
		topic := fmt.Sprintf("round-%d", round)
		lifecycleTraffic(t, []string{srv.Addr()}, topic, 1)
		if err := srv.Kill(); err != nil {
			t.Fatalf("round %d: Kill: %v", round, err)
		}
		again := startLifecycleBroker(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cl, err := kgo.NewClient(kgo.SeedBrokers(again.Addr()), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < 20 && ctx.Err() == nil {
			got += cl.PollFetches(ctx).NumRecords()
		}
		cl.Close()
		cancel()
		if got != 20 {
			t.Fatalf("round %d: read %d records after the restart, want 20", round, got)
		}
		if err := again.Close(); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(dir)
		base.check(t, fmt.Sprintf("after round %d", round))
	}
}

// JumpClock moves a broker's clock when it was given an adjustable one
// (config.Config.Clock), and refuses on the system clock.
func TestJumpClock(t *testing.T) {
	srv, cfg := newTestServer(t, testProps(map[string]string{"log.dirs": t.TempDir()}))
	defer srv.Close()
	if _, err := srv.JumpClock(time.Hour); err == nil {
		t.Fatal("JumpClock on the system clock succeeded")
	}
	if d := time.Since(srv.Now()); d < -time.Minute || d > time.Minute {
		t.Fatalf("system clock %v off", -d)
	}

	cfg.Clock = clock.NewOffset()
	srv2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if off, err := srv2.JumpClock(time.Hour); off != time.Hour || err != nil {
		t.Fatalf("JumpClock(1h) = %v, %v", off, err)
	}
	if off, _ := srv2.JumpClock(-90 * time.Minute); off != -30*time.Minute {
		t.Fatalf("offset %v after +1h and -90m, want -30m", off)
	}
	if d := time.Until(srv2.Now()); d < -31*time.Minute || d > -29*time.Minute {
		t.Fatalf("broker clock %v from the system's, want -30m", d)
	}
	// Its fetch sessions read it too.
	if d := time.Until(time.UnixMilli(srv2.fetchSessions.now())); d < -31*time.Minute || d > -29*time.Minute {
		t.Fatalf("fetch sessions' clock %v from the system's, want -30m", d)
	}
}
