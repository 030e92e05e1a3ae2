package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strait/strait/config"
)

// fakeServer stands in for *broker.Server.
type fakeServer struct {
	cfg      config.Config
	startErr error
	// startGate, if set, holds Start until it is closed.
	startGate chan struct{}
	ready     chan struct{}
	errc      chan error
	mu        sync.Mutex
	closed    int
	closeErr  error
}

func (f *fakeServer) Start() error {
	if f.startGate != nil {
		<-f.startGate
	}
	if f.startErr == nil {
		close(f.ready)
	}
	return f.startErr
}
func (f *fakeServer) Ready() <-chan struct{} { return f.ready }
func (f *fakeServer) Err() <-chan error      { return f.errc }
func (f *fakeServer) Addrs() []net.Addr {
	return []net.Addr{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9093}}
}
func (f *fakeServer) ClusterID() string { return "MkU3OEVBNTcwNTJENDM2Qk" }
func (f *fakeServer) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return f.closeErr
}
func (f *fakeServer) closeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// useFake makes run build srv instead of a real broker.
func useFake(t *testing.T, srv *fakeServer) {
	t.Helper()
	old := newServer
	newServer = func(cfg config.Config) (server, error) {
		srv.cfg = cfg
		return srv, nil
	}
	t.Cleanup(func() { newServer = old })
}

func newFake() *fakeServer {
	return &fakeServer{ready: make(chan struct{}), errc: make(chan error, 1)}
}

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runAsync runs run in the background and returns its exit code channel.
func runAsync(args, env []string, stderr *syncBuffer, signals chan os.Signal) <-chan int {
	code := make(chan int, 1)
	go func() { code <- run(args, env, stderr, signals) }()
	return code
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunReadyThenSignal(t *testing.T) {
	srv := newFake()
	useFake(t, srv)
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte("node.id=4\nnum.partitions=2\nno.such.thing=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	signals := make(chan os.Signal, 1)
	code := runAsync([]string{file, "--override", "num.partitions=5", "--override=log.dirs=/tmp/x"},
		[]string{"KAFKA_NUM_PARTITIONS=3", "KAFKA_BROKER_RACK=rack-a"}, &stderr, signals)

	waitFor(t, "ready line", func() bool { return strings.Contains(stderr.String(), "strait ready") })
	out := stderr.String()
	if n := strings.Count(out, "strait ready"); n != 1 {
		t.Fatalf("%d ready lines:\n%s", n, out)
	}
	if !strings.Contains(out, `level=INFO msg="strait ready" addr=127.0.0.1:9092,127.0.0.1:9093 node.id=4 cluster.id=MkU3OEVBNTcwNTJENDM2Qk`) {
		t.Fatalf("ready line not as expected:\n%s", out)
	}
	if !strings.Contains(out, `level=WARN msg="The configuration 'no.such.thing' was supplied but isn't a known config."`) {
		t.Fatalf("unknown key not warned:\n%s", out)
	}
	// file < env < override.
	if srv.cfg.Topics.NumPartitions != 5 || srv.cfg.Rack != "rack-a" || srv.cfg.NodeID != 4 ||
		!reflect.DeepEqual(srv.cfg.Log.Dirs, []string{"/tmp/x"}) || srv.cfg.Logger == nil {
		t.Fatalf("config given to the broker: %+v", srv.cfg)
	}
	if srv.closeCount() != 0 {
		t.Fatal("closed before the signal")
	}

	signals <- syscall.SIGTERM
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code %d after SIGTERM:\n%s", c, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after SIGTERM")
	}
	if srv.closeCount() != 1 {
		t.Fatalf("Close called %d times", srv.closeCount())
	}
}

func TestRunBrokerError(t *testing.T) {
	srv := newFake()
	useFake(t, srv)
	var stderr syncBuffer
	code := runAsync(nil, nil, &stderr, make(chan os.Signal))
	waitFor(t, "ready line", func() bool { return strings.Contains(stderr.String(), "strait ready") })
	srv.errc <- errors.New("disk on fire")
	if c := <-code; c != 1 {
		t.Fatalf("exit code %d, want 1", c)
	}
	if !strings.Contains(stderr.String(), "disk on fire") {
		t.Fatalf("error not logged:\n%s", stderr.String())
	}
	if srv.closeCount() != 1 {
		t.Fatalf("Close called %d times", srv.closeCount())
	}
}

func TestRunStartError(t *testing.T) {
	srv := newFake()
	srv.startErr = errors.New("address already in use")
	useFake(t, srv)
	var stderr syncBuffer
	if c := run(nil, nil, &stderr, make(chan os.Signal)); c != 1 {
		t.Fatalf("exit code %d, want 1", c)
	}
	if !strings.Contains(stderr.String(), "address already in use") || strings.Contains(stderr.String(), "strait ready") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}

func TestRunInvalidConfig(t *testing.T) {
	srv := newFake()
	useFake(t, srv)
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--override", "num.partitions=abc"}, nil,
			`key=num.partitions err="Invalid value abc for configuration num.partitions: Not a number of type INT"`},
		{nil, []string{"KAFKA_NUM_PARTITIONS=0"},
			`key=num.partitions err="Invalid value 0 for configuration num.partitions: Value must be at least 1"`},
		{[]string{"--override", "listeners=nonsense"}, nil, "key=listeners"},
		{[]string{"--config", "/nonexistent/server.properties"}, nil, "no such file or directory"},
	} {
		var stderr syncBuffer
		if c := run(tc.args, tc.env, &stderr, make(chan os.Signal)); c != 1 {
			t.Errorf("%v %v: exit code %d, want 1", tc.args, tc.env, c)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v %v: stderr lacks %q:\n%s", tc.args, tc.env, tc.want, stderr.String())
		}
	}
	if srv.closeCount() != 0 || srv.cfg.Network.Listeners != nil {
		t.Fatal("a broker was built from an invalid configuration")
	}
}

func TestRunLogLevel(t *testing.T) {
	srv := newFake()
	useFake(t, srv)
	// warn level hides the INFO ready line but not the warning.
	var stderr syncBuffer
	signals := make(chan os.Signal, 1)
	code := runAsync([]string{"--override", "unknown.key=1"}, []string{"STRAIT_LOG_LEVEL=warn"}, &stderr, signals)
	waitFor(t, "ready", func() bool {
		select {
		case <-srv.ready:
			return true
		default:
			return false
		}
	})
	signals <- os.Interrupt
	if c := <-code; c != 0 {
		t.Fatalf("exit code %d", c)
	}
	if out := stderr.String(); strings.Contains(out, "strait ready") || !strings.Contains(out, "unknown.key") {
		t.Fatalf("STRAIT_LOG_LEVEL=warn:\n%s", out)
	}
	var bad syncBuffer
	if c := run([]string{"--log-level", "loud"}, nil, &bad, nil); c != 1 || !strings.Contains(bad.String(), "invalid log level") {
		t.Fatalf("bad level: code %d:\n%s", c, bad.String())
	}
}

// TestRunLogFormatJSON: --log-format json writes one JSON object per line,
// the broker is given the level it may change (BROKER_LOGGER), and an
// unknown format stops strait before anything starts.
func TestRunLogFormatJSON(t *testing.T) {
	srv := newFake()
	useFake(t, srv)
	var stderr syncBuffer
	signals := make(chan os.Signal, 1)
	code := runAsync([]string{"--log-format", "json"}, nil, &stderr, signals)
	waitFor(t, "ready", func() bool {
		select {
		case <-srv.ready:
			return true
		default:
			return false
		}
	})
	signals <- os.Interrupt
	if c := <-code; c != 0 {
		t.Fatalf("exit code %d", c)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["msg"] == nil || m["level"] == nil {
			t.Fatalf("not a JSON log line: %q (%v)", l, err)
		}
	}
	if !strings.Contains(stderr.String(), `"msg":"strait ready"`) {
		t.Fatalf("no ready line:\n%s", stderr.String())
	}
	if srv.cfg.LogLevel == nil || srv.cfg.LogLevel.Level() != slog.LevelInfo {
		t.Fatalf("the broker was not given the log level to change: %v", srv.cfg.LogLevel)
	}
	var bad syncBuffer
	if c := run([]string{"--log-format", "xml"}, nil, &bad, nil); c != 1 || !strings.Contains(bad.String(), `invalid log format "xml"`) {
		t.Fatalf("bad format: code %d:\n%s", c, bad.String())
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want options
		err  string
	}{
		{nil, options{}, ""},
		{[]string{"server.properties"}, options{configFile: "server.properties"}, ""},
		{[]string{"server.properties", "--override", "a=1", "--override", "b=2"},
			options{configFile: "server.properties", overrides: []string{"a=1", "b=2"}}, ""},
		{[]string{"--config", "s.props", "--override=a=1", "--log-level=debug"},
			options{configFile: "s.props", overrides: []string{"a=1"}, logLevel: "debug"}, ""},
		{[]string{"--config=s.props"}, options{configFile: "s.props"}, ""},
		{[]string{"a.properties", "b.properties"}, options{}, "Found non argument parameters: b.properties"},
		{[]string{"--config", "a", "b"}, options{}, "Found non argument parameters: b"},
		{[]string{"--override"}, options{}, "option --override requires an argument"},
		{[]string{"--bogus"}, options{}, "unknown option --bogus"},
	} {
		got, err := parseArgs(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseArgs(%q) err = %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseArgs(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	var stderr syncBuffer
	if c := run([]string{"--help"}, nil, &stderr, nil); c != 0 || !strings.Contains(stderr.String(), "USAGE") {
		t.Fatalf("--help: code %d:\n%s", c, stderr.String())
	}
	if c := run([]string{"--nope"}, nil, &stderr, nil); c != 1 {
		t.Fatalf("bad option: code %d", c)
	}
}

// TestRunExitsWhenEveryLogDirIsGone runs a real broker and removes its only
// log dir: the broker reports it on Err and strait exits 1 with it logged.
func TestRunExitsWhenEveryLogDirIsGone(t *testing.T) {
	logs := t.TempDir()
	var stderr syncBuffer
	code := runAsync([]string{"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=" + logs,
		"--override", "etcd.data.dir=" + t.TempDir()}, nil, &stderr, make(chan os.Signal))
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "strait ready") {
		select {
		case c := <-code:
			t.Fatalf("exited %d before ready:\n%s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.RemoveAll(logs); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 1 {
			t.Fatalf("exit code %d, want 1:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("strait did not exit with every log dir gone:\n%s", stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, `msg="broker failed"`) || !strings.Contains(out, "all log dirs in "+logs+" have failed") {
		t.Fatalf("the failure is not logged:\n%s", out)
	}
}
