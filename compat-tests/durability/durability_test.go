// Package durability runs the built strait binary as a separate process and
// kills it with SIGKILL while a producer waits for acks=all: every record the
// broker acknowledged must be there after a restart, in order.
package durability

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/internal/freeport"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strait-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "strait")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/strait/strait/cmd/strait").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building strait: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort is a port of 127.0.0.1 free a moment ago, from below the
// ephemeral range (internal/freeport), so that no :0 listener or client
// connection is handed it before the test binds it.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

type process struct {
	cmd  *exec.Cmd
	addr string
}

// startProcess runs strait on port with its logs in dir and waits for the
// ready line.
func startProcess(t *testing.T, dir string, port int) *process {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(binary, "--override", "listeners=PLAINTEXT://"+addr, "--override", "log.dirs="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "strait ready") {
				once.Do(func() { close(ready) })
			}
			if testing.Verbose() || strings.Contains(line, "level=ERROR") {
				t.Log(line)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("broker did not print its ready line")
	}
	return &process{cmd: cmd, addr: addr}
}

func (p *process) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

func (p *process) term(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("broker exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("broker did not stop after SIGTERM")
	}
}

// TestKill9KeepsAcknowledgedRecords produces with acks=all in the background,
// kills the broker with SIGKILL mid-stream, restarts it and reads back every
// acknowledged record.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("durable"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "durable"); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	acked := map[int32][]string{} // partition -> values in offset order
	offsets := map[int32][]int64{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("v%07d", i)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					return
				}
				mu.Lock()
				acked[r.Partition] = append(acked[r.Partition], string(r.Value))
				offsets[r.Partition] = append(offsets[r.Partition], r.Offset)
				mu.Unlock()
			})
			if i%1000 == 999 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	// Let a good number of records be acknowledged, then kill the broker.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked[0]) + len(acked[1]) + len(acked[2])
		mu.Unlock()
		if n > 50_000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.kill9()
	close(stop)
	cl.Close() // fails whatever is still in flight
	wg.Wait()

	total := 0
	for part, offs := range offsets {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d: ack %d has offset %d", part, i, o)
			}
		}
		total += len(offs)
	}
	if total == 0 {
		t.Fatal("nothing was acknowledged before the kill")
	}
	t.Logf("acknowledged %d records before SIGKILL", total)

	p = startProcess(t, dir, port)
	defer p.term(t)
	for part, want := range acked {
		got := readPartition(t, p.addr, "durable", part, len(want))
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("partition %d offset %d: got %q, acknowledged %q", part, i, got[i], want[i])
			}
		}
	}
}

// readPartition reads at least n records from the start of one partition.
func readPartition(t *testing.T, addr, topic string, part int32, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {part: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("partition %d: read %d of %d acknowledged records", part, len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}
