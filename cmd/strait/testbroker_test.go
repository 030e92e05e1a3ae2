package main

// The binary as a test broker, run for real (TestMain's STRAIT_RUN_AS_MAIN):
// --ephemeral, --ready-file, --test-defaults, the data-dir lock, a signal
// during start-up, strait cluster, and the environment testcontainers'
// Kafka module gives the container.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/internal/freeport"
)

// proc is strait running as a child process.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{} // closed once it exited; then err is set
	err    error
}

// startStrait runs the test binary as strait with args (split at spaces)
// and env added to this process's environment. The process is killed when
// the test ends if it still runs.
func startStrait(t *testing.T, args string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{"STRAIT_RUN_AS_MAIN=1", "STRAIT_ARGS=" + args}, env...)...)
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// exitCode waits up to d for the process to exit and returns its code.
func (p *proc) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("strait did not exit within %v:\n%s", d, p.stderr.String())
	}
	if p.err == nil {
		return 0
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) && exit.ExitCode() >= 0 {
		return exit.ExitCode()
	}
	t.Fatalf("strait ended by %v:\n%s", p.err, p.stderr.String())
	return -1
}

// waitUntil polls cond every 10 ms for up to d; the test fails if the
// process exits first or d passes.
func (p *proc) waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		select {
		case <-p.done:
			t.Fatalf("strait exited (%v) before %s:\n%s", p.err, what, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v:\n%s", what, d, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyLines waits for the ready file and returns its lines.
func (p *proc) readyLines(t *testing.T, path string, d time.Duration) []string {
	t.Helper()
	var content []byte
	p.waitUntil(t, d, "ready file", func() bool {
		var err error
		content, err = os.ReadFile(path)
		return err == nil
	})
	return strings.Split(strings.TrimSuffix(string(content), "\n"), "\n")
}

var readyLine = regexp.MustCompile(`^([A-Z_]+)://(127\.0\.0\.1:[0-9]+)$`)

// addrsOf returns the host:port of the ready file lines of listener name.
func addrsOf(t *testing.T, lines []string, name string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		m := readyLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("ready file line %q is not LISTENER://127.0.0.1:port", l)
		}
		if m[1] == name {
			out = append(out, m[2])
		}
	}
	return out
}

// produceAndRead produces n records to topic through seeds with acks=all
// and reads them back from the start.
func produceAndRead(t *testing.T, seeds []string, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(seen), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}

// TestBinaryEphemeralReadyFile: with --ephemeral the data lives in a new
// directory under $TMPDIR, removed at exit; --ready-file appears once the
// broker serves, naming each listener's bound address, and goes at exit.
func TestBinaryEphemeralReadyFile(t *testing.T) {
	tmp := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	p := startStrait(t, "--ephemeral --test-defaults --ready-file "+ready+
		" --override listeners=PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0"+
		" --override listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT", "TMPDIR="+tmp)
	lines := p.readyLines(t, ready, 30*time.Second)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "PLAINTEXT://") || !strings.HasPrefix(lines[1], "EXTERNAL://") {
		t.Fatalf("ready file: %q", lines)
	}
	if !strings.Contains(p.stderr.String(), "strait ready") {
		t.Fatalf("the ready file came before the ready line:\n%s", p.stderr.String())
	}
	entries, err := os.ReadDir(tmp)
	if err != nil || len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "strait-") {
		t.Fatalf("the ephemeral directory under TMPDIR: %v %v", entries, err)
	}
	data := filepath.Join(tmp, entries[0].Name())
	for _, sub := range []string{"logs/.lock", "etcd/.lock"} {
		if _, err := os.Stat(filepath.Join(data, sub)); err != nil {
			t.Errorf("the broker does not use %s: %v", sub, err)
		}
	}
	produceAndRead(t, addrsOf(t, lines, "EXTERNAL"), "ephemeral", 10)

	p.cmd.Process.Signal(syscall.SIGTERM)
	if c := p.exitCode(t, 30*time.Second); c != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", c, p.stderr.String())
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ephemeral directory is still there: %v", err)
	}
	if _, err := os.Stat(ready); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ready file is still there: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Dir(ready)); len(left) != 0 {
		t.Errorf("files left beside the ready file: %v", left)
	}
}

// TestBinarySecondBrokerOnALockedDir: a second strait on a running one's
// log dir exits 1 at once with Kafka's message, and the first one goes on.
func TestBinarySecondBrokerOnALockedDir(t *testing.T) {
	logs := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	first := startStrait(t, "--override listeners=PLAINTEXT://127.0.0.1:0 --override log.dirs="+logs+" --ready-file "+ready)
	lines := first.readyLines(t, ready, 30*time.Second)

	start := time.Now()
	second := startStrait(t, "--override listeners=PLAINTEXT://127.0.0.1:0 --override log.dirs="+logs)
	if c := second.exitCode(t, 20*time.Second); c != 1 {
		t.Fatalf("second broker: exit code %d, want 1:\n%s", c, second.stderr.String())
	}
	t.Logf("the second broker failed after %v", time.Since(start))
	want := "Failed to acquire lock on file .lock in " + logs + ". A Kafka instance in another process or thread is using this directory."
	if !strings.Contains(second.stderr.String(), want) {
		t.Fatalf("second broker's stderr lacks %q:\n%s", want, second.stderr.String())
	}
	produceAndRead(t, addrsOf(t, lines, "PLAINTEXT"), "still-serving", 1)
	first.cmd.Process.Signal(syscall.SIGTERM)
	if c := first.exitCode(t, 30*time.Second); c != 0 {
		t.Fatalf("first broker: exit code %d:\n%s", c, first.stderr.String())
	}
}

// TestBinarySignalDuringStartup: SIGTERM before the broker is ready stops
// the process with exit 0 in bounded time: right after it takes signals,
// and while start-up waits for an etcd peer that never comes (without the
// signal it would wait a minute).
func TestBinarySignalDuringStartup(t *testing.T) {
	t.Run("right after exec", func(t *testing.T) {
		p := startStrait(t, "--log-level debug --ephemeral --override listeners=PLAINTEXT://127.0.0.1:0", "TMPDIR="+t.TempDir())
		p.waitUntil(t, 20*time.Second, "start line", func() bool { return strings.Contains(p.stderr.String(), "strait starting") })
		p.cmd.Process.Signal(syscall.SIGTERM)
		if c := p.exitCode(t, 20*time.Second); c != 0 {
			t.Fatalf("exit code %d:\n%s", c, p.stderr.String())
		}
	})
	t.Run("waiting for an etcd peer", func(t *testing.T) {
		ports, err := freeport.Ports(2)
		if err != nil {
			t.Fatal(err)
		}
		logs := t.TempDir()
		p := startStrait(t, fmt.Sprintf("--override listeners=PLAINTEXT://127.0.0.1:0 --override log.dirs=%s"+
			" --override etcd.name=b1 --override etcd.listen.peer.urls=http://127.0.0.1:%d"+
			" --override etcd.initial.cluster=b1=http://127.0.0.1:%d,b2=http://127.0.0.1:%d", logs, ports[0], ports[0], ports[1]))
		// The lock is the first thing Start takes: start-up is under way.
		p.waitUntil(t, 20*time.Second, "lock file", func() bool {
			_, err := os.Stat(filepath.Join(logs, "etcd", ".lock"))
			return err == nil
		})
		sent := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		if c := p.exitCode(t, startupStopGrace+15*time.Second); c != 0 {
			t.Fatalf("exit code %d:\n%s", c, p.stderr.String())
		}
		t.Logf("exited %v after the signal", time.Since(sent))
		if out := p.stderr.String(); !strings.Contains(out, "signal during start-up, stopping") || strings.Contains(out, "strait ready") {
			t.Fatalf("stderr:\n%s", out)
		}
	})
}

// TestBinaryCluster: strait cluster -n 3 starts three brokers whose etcd
// members form one cluster; a client creates an RF=3 topic on them,
// produces with acks=all and reads back; SIGTERM stops all three, exit 0,
// their temporary directories removed.
func TestBinaryCluster(t *testing.T) {
	tmp := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	p := startStrait(t, "cluster -n 3 --test-defaults --ready-file "+ready, "TMPDIR="+tmp)
	lines := p.readyLines(t, ready, 60*time.Second)
	seeds := addrsOf(t, lines, "PLAINTEXT")
	if len(seeds) != 3 || len(lines) != 3 {
		t.Fatalf("ready file: %q", lines)
	}
	if want := `msg="strait cluster ready" brokers=3 bootstrap.servers=` + strings.Join(seeds, ","); !strings.Contains(p.stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, p.stderr.String())
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) != 3 {
		t.Fatalf("brokers: %v %v", brokers, err)
	}
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "rf3"); err != nil {
		t.Fatal(err)
	}
	produceAndRead(t, seeds, "rf3", 100)
	topics, err := adm.ListTopics(ctx, "rf3")
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range topics["rf3"].Partitions {
		if len(part.Replicas) != 3 || len(part.ISR) != 3 {
			t.Errorf("partition %d: replicas %v, ISR %v", part.Partition, part.Replicas, part.ISR)
		}
	}
	cl.Close()

	p.cmd.Process.Signal(syscall.SIGTERM)
	if c := p.exitCode(t, 60*time.Second); c != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", c, p.stderr.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	if n := strings.Count(p.stderr.String(), `msg="broker stopped"`); n != 3 {
		t.Errorf("%d brokers stopped, want 3:\n%s", n, p.stderr.String())
	}
}

// TestBinaryTestcontainersEnvironment: the environment testcontainers'
// KafkaContainer (apache/kafka) gives the container, its ports moved to
// free loopback ones: strait starts on it without an error or a warning,
// logs the line the module waits for, and serves on PLAINTEXT and BROKER.
// Accepted: listeners, advertised.listeners, listener.security.protocol.map,
// inter.broker.listener.name, node.id, the internal topics' settings, the
// rebalance delay, log.flush.interval.messages. Accepted and without effect
// (no KRaft): process.roles, controller.listener.names (that listener is not
// bound), controller.quorum.voters; CLUSTER_ID is not a KAFKA_ variable and
// is not read (the cluster id is etcd's).
func TestBinaryTestcontainersEnvironment(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	p := startStrait(t, "--ready-file "+ready,
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
		"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:0,BROKER://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:0,BROKER://127.0.0.1:0",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME=BROKER",
		"KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@localhost:9094",
		"KAFKA_NODE_ID=1",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
		"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS=1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
		"KAFKA_LOG_FLUSH_INTERVAL_MESSAGES=9223372036854775807",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"KAFKA_LOG_DIRS="+t.TempDir(),
	)
	lines := p.readyLines(t, ready, 30*time.Second)
	if len(addrsOf(t, lines, "PLAINTEXT")) != 1 || len(addrsOf(t, lines, "BROKER")) != 1 || len(lines) != 2 {
		t.Fatalf("ready file: %q", lines)
	}
	out := p.stderr.String()
	if !regexp.MustCompile(`.*Transitioning from RECOVERY to RUNNING.*`).MatchString(out) {
		t.Fatalf("no line for testcontainers' wait strategy:\n%s", out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "level=WARN") || strings.Contains(sc.Text(), "level=ERROR") {
			t.Errorf("%s", sc.Text())
		}
	}
	produceAndRead(t, addrsOf(t, lines, "PLAINTEXT"), "from-env", 5)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if c := p.exitCode(t, 30*time.Second); c != 0 {
		t.Fatalf("exit code %d:\n%s", c, p.stderr.String())
	}
}
