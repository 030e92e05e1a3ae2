//go:build linux

package broker_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
)

// Issue 17, the row "1,200 connections with about 1,040 partitions open,
// 2,048 descriptors allowed: accept fails; 26 s later the embedded etcd's
// WAL purge hits EMFILE and the whole process exits". The broker runs in a
// child process (this test binary again, fdChildEnv naming its log dir)
// whose RLIMIT_NOFILE is 256, soft and hard, with strait.fd.reserve=64; the
// test opens 1,200 connections to it.

const (
	fdChildEnv     = "STRAIT_FD_RESERVE_CHILD_DIR"
	fdChildLimit   = 256
	fdChildReserve = 64
	fdFlood        = 1200
)

// fdReserveChild runs the broker of TestFDReserveKeepsBrokerUp: it prints
// "addr <host:port>", answers each "stats" line on stdin with "stats
// <refused> <accept errors> <open descriptors>", and once stdin closes shuts
// the broker down and exits 0 (1: the broker failed).
func fdReserveChild(dir string) int {
	rl := unix.Rlimit{Cur: fdChildLimit, Max: fdChildLimit}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 2
	}
	cfg, _, err := config.Parse(map[string]string{
		"listeners":         "PLAINTEXT://127.0.0.1:0",
		"log.dirs":          dir,
		"strait.fd.reserve": strconv.Itoa(fdChildReserve),
		"replica.high.watermark.checkpoint.interval.ms": "100",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "config:", err)
		return 2
	}
	srv, err := broker.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new:", err)
		return 2
	}
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	fmt.Printf("addr %s\n", srv.Addr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "stats" {
			ents, _ := os.ReadDir("/proc/self/fd")
			fmt.Printf("stats %d %d %d\n", srv.FDReserveRefused(), srv.AcceptErrors(), len(ents)-1)
		}
	}
	select {
	case err := <-srv.Err():
		fmt.Fprintln(os.Stderr, "broker failed:", err)
		srv.Close()
		return 1
	default:
	}
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		return 1
	}
	return 0
}

// lockedBuffer collects the child's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	return s[max(0, len(s)-n):]
}

type fdChild struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
}

func (c *fdChild) line(prefix string) string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the broker process ended its output (want %q); its log ends:\n%s", prefix, c.stderr.tail(4000))
		}
		if !strings.HasPrefix(l, prefix) {
			c.t.Fatalf("broker process said %q; want %q", l, prefix)
		}
		return strings.TrimPrefix(l, prefix)
	case <-time.After(60 * time.Second):
		c.t.Fatalf("no %q from the broker process in 60 s; its log ends:\n%s", prefix, c.stderr.tail(4000))
	}
	return ""
}

// stats asks the child for its counters; it failing to answer fails the
// test (the process is gone or stuck).
func (c *fdChild) stats() (refused, acceptErrors, open int64) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, "stats\n"); err != nil {
		c.t.Fatalf("the broker process does not take input: %v; its log ends:\n%s", err, c.stderr.tail(4000))
	}
	if _, err := fmt.Sscan(c.line("stats "), &refused, &acceptErrors, &open); err != nil {
		c.t.Fatal(err)
	}
	return
}

// TestFDReserveKeepsBrokerUp: with 1,200 connections against a limit of
// 256 descriptors, the broker refuses what passes the reserve (counted)
// and keeps the reserve for itself: a client connected before the flood
// keeps producing and consuming, a segment rolls, the high watermark
// checkpoint is written, a topic is created through the embedded etcd,
// the process stays alive with a peak RSS under 512 MiB; once the flood
// closes a new client connects, and the broker shuts down cleanly.
func TestFDReserveKeepsBrokerUp(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fdChildEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child := &fdChild{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 16), stderr: &lockedBuffer{}}
	cmd.Stderr = child.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once exitErr is set
	var exitErr error
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			child.lines <- sc.Text()
		}
		close(child.lines)
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	addr := child.line("addr ")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// kgo reaps connections idle for 20 s by default; the existing
	// client must keep the ones it opened before the flood.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConnIdleTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	segMs := "100"
	for topic, configs := range map[string]map[string]*string{"existing": nil, "roll": {"segment.ms": &segMs}} {
		if r, err := adm.CreateTopic(ctx, 1, 1, configs, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	produce := func(c *kgo.Client, topic, v string) error {
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		return c.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConnIdleTimeout(10*time.Minute),
		kgo.ConsumeTopics("existing"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	consume := func(want string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		for {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				t.Fatalf("the existing consumer did not read %q in 15 s", want)
			}
			for _, r := range fs.Records() {
				if string(r.Value) == want {
					return
				}
			}
		}
	}
	for _, topic := range []string{"existing", "roll"} {
		if err := produce(cl, topic, "before"); err != nil {
			t.Fatalf("produce to %s before the flood: %v", topic, err)
		}
	}
	consume("before")
	_, _, openBefore := child.stats()

	// The flood: 1,200 connections, held open from this process.
	flood := make([]net.Conn, 0, fdFlood)
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range fdFlood {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d of the flood: %v", len(flood)+1, err)
		}
		flood = append(flood, c)
	}
	var refused, acceptErrs, open int64
	for i := 0; ; i++ {
		if refused, acceptErrs, open = child.stats(); refused >= fdFlood-fdChildLimit {
			break
		}
		if i == 200 {
			t.Fatalf("after 20 s: %d connections refused for the reserve; want at least %d of the %d", refused, fdFlood-fdChildLimit, fdFlood)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("flood: %d connections refused for the reserve, %d accept errors, %d descriptors open (%d before; limit %d, reserve %d)",
		refused, acceptErrs, open, openBefore, fdChildLimit, fdChildReserve)
	if open > fdChildLimit-fdChildReserve+8 {
		t.Errorf("%d descriptors open during the flood; want at most about %d (the limit minus the reserve)", open, fdChildLimit-fdChildReserve)
	}

	// The existing client is served.
	if err := produce(cl, "existing", "during"); err != nil {
		t.Fatalf("existing client's produce during the flood: %v", err)
	}
	consume("during")

	// A segment rolls (segment.ms=100: the next append after 100 ms).
	logs := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "roll-0", "*.log"))
		return len(m)
	}
	produced := int64(1)
	for i := 0; logs() < 2; i++ {
		if i == 20 {
			t.Fatalf("no segment roll after %d appends 150 ms apart: %d segment files", i, logs())
		}
		time.Sleep(150 * time.Millisecond) // segment.ms must pass before the append rolls
		if err := produce(cl, "roll", "roll-"+strconv.Itoa(i)); err != nil {
			t.Fatalf("produce to roll during the flood: %v", err)
		}
		produced++
	}

	// The log directory's high watermark checkpoint (every 100 ms) reaches
	// the last append.
	hwFile := filepath.Join(dir, "replication-offset-checkpoint")
	want := "\nroll 0 " + strconv.FormatInt(produced, 10) + "\n"
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(hwFile); strings.Contains(string(b), want) {
			break
		}
		if i == 150 {
			b, _ := os.ReadFile(hwFile)
			t.Fatalf("replication-offset-checkpoint holds %q after 15 s; want a line %q", b, want[1:])
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The embedded etcd takes a write.
	if r, err := adm.CreateTopic(ctx, 3, 1, nil, "during-flood"); err != nil || r.Err != nil {
		t.Fatalf("create a topic during the flood: %v %v", err, r.Err)
	}
	if err := produce(cl, "during-flood", "x"); err != nil {
		t.Fatalf("produce to the new topic during the flood: %v", err)
	}
	child.stats() // alive and answering

	// The flood ends; a new client connects.
	for _, c := range flood {
		c.Close()
	}
	flood = flood[:0]
	fresh, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := produce(fresh, "existing", "after"); err != nil {
		t.Fatalf("a new client after the flood: %v", err)
	}
	consume("after")

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var hwmKiB int64
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			hwmKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	t.Logf("broker process peak RSS: %d MiB", hwmKiB>>10)
	if hwmKiB == 0 || hwmKiB > 512<<10 {
		t.Errorf("broker process peak RSS %d KiB; want above 0 and under 512 MiB", hwmKiB)
	}

	stdin.Close()
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("broker process: %v; its log ends:\n%s", exitErr, child.stderr.tail(4000))
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the broker process did not shut down in 60 s; its log ends:\n%s", child.stderr.tail(4000))
	}
	if log := child.stderr.tail(1 << 20); strings.Count(log, "file descriptor reserve reached") > 30 {
		t.Errorf("%d log lines about the reserve; want them rate limited", strings.Count(log, "file descriptor reserve reached"))
	}
}

// TestMain runs the broker of TestFDReserveKeepsBrokerUp instead of the
// tests when the environment names its log dir.
func TestMain(m *testing.M) {
	if dir := os.Getenv(fdChildEnv); dir != "" {
		os.Exit(fdReserveChild(dir))
	}
	os.Exit(m.Run())
}
