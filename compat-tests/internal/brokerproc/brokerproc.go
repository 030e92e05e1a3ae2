// Package brokerproc owns the bin/strait processes of the multi-process
// harnesses (compat-tests/cluster, compat-tests/partition): finding the
// binary, starting a broker with its output appended to a log file, waiting
// for its ready line, signalling and stopping it, and the Metadata request
// both send to one broker alone. Those harnesses are all _test files, so
// this is the one place they can share code.
package brokerproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Binary is $STRAIT_BIN, else bin/strait at the repository root (relative to
// a test package two levels below it); the test fails when it is missing.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("STRAIT_BIN")
	if bin == "" {
		bin = "../../bin/strait"
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		tb.Fatal(err)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		tb.Fatalf("broker binary %s missing: build it with `go build -o bin/strait ./cmd/strait` (run.sh does)", abs)
	}
	return abs
}

// OverrideArgs turns props into --override key=value arguments, sorted by
// key so a broker's command line is the same from run to run.
func OverrideArgs(props map[string]string) []string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	args := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, "--override", k+"="+props[k])
	}
	return args
}

// Eventually polls f every 100 ms until it returns nil, failing the test
// with the last error after timeout. It returns the time it took.
func Eventually(tb testing.TB, timeout time.Duration, what string, f func() error) time.Duration {
	tb.Helper()
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			tb.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Proc is one broker process; it keeps its command line and log file across
// restarts.
type Proc struct {
	ID      int32
	LogPath string
	Args    []string // the command and its arguments
	// KillWait bounds how long Kill9 waits for the process to be gone after
	// SIGKILL; 0 waits until it is.
	KillWait time.Duration

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
	logFrom int64 // size of the log file when the current process started
}

// Start launches the process, appending its stdout and stderr to LogPath.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, _ := f.Stat()
	fmt.Fprintf(f, "=== test harness: starting broker %d at %s\n", p.ID, time.Now().Format(time.RFC3339Nano))
	p.logFrom = st.Size()
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.cmd, p.exited, p.paused = cmd, exited, false
	return nil
}

// WaitReady waits for this process's "strait ready" line.
func (p *Proc) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		from, exited := p.logFrom, p.exited
		p.mu.Unlock()
		b, _ := os.ReadFile(p.LogPath)
		if int64(len(b)) > from && bytes.Contains(b[from:], []byte("strait ready")) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("broker %d exited before its ready line", p.ID)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("broker %d not ready after %v", p.ID, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Running reports whether the process was started and has not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Live reports whether the process runs and is not stopped.
func (p *Proc) Live() bool {
	p.mu.Lock()
	paused := p.paused
	p.mu.Unlock()
	return !paused && p.Running()
}

// Signal sends sig, remembering whether SIGSTOP or SIGCONT left the process
// stopped.
func (p *Proc) Signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.cmd.Process.Signal(sig)
		switch sig {
		case syscall.SIGSTOP:
			p.paused = true
		case syscall.SIGCONT:
			p.paused = false
		}
	}
}

// Kill9 sends SIGKILL and waits for the process to be gone (at most
// KillWait when that is set).
func (p *Proc) Kill9() {
	p.Signal(syscall.SIGKILL)
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return
	}
	if p.KillWait <= 0 {
		<-exited
		return
	}
	select {
	case <-exited:
	case <-time.After(p.KillWait):
	}
}

// Shutdown resumes a stopped process, sends SIGTERM and waits; Kill9 after
// the timeout.
func (p *Proc) Shutdown(timeout time.Duration) {
	if !p.Running() {
		return
	}
	p.Signal(syscall.SIGCONT)
	p.Signal(syscall.SIGTERM)
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(timeout):
		p.Kill9()
	}
}

// Tail is the log file's last lines, for a failed test's output.
func (p *Proc) Tail(lines int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// StopAll shuts the processes down together (Shutdown with timeout) and,
// when the test failed, logs the last lines of each one's log.
func StopAll(tb testing.TB, procs []*Proc, timeout time.Duration) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Shutdown(timeout) }()
	}
	wg.Wait()
	if tb.Failed() {
		for _, p := range procs {
			tb.Logf("---- last lines of broker %d's log (%s):\n%s", p.ID, p.LogPath, p.Tail(60))
		}
	}
}

// StartAll starts every process, then waits for each one's ready line: the
// embedded etcd members wait for a quorum, so they must start together.
func StartAll(tb testing.TB, procs []*Proc, readyTimeout time.Duration) {
	tb.Helper()
	for _, p := range procs {
		if err := p.Start(); err != nil {
			tb.Fatal(err)
		}
	}
	for _, p := range procs {
		if err := p.WaitReady(readyTimeout); err != nil {
			tb.Fatal(err)
		}
	}
}

// Metadata asks the broker cl was seeded with, alone (no client cache in
// between), within 2 s.
func Metadata(cl *kgo.Client, topics ...string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}
