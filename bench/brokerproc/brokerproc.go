//go:build linux

// Package brokerproc runs bin/strait as a child process for the bench
// tools that measure a whole broker process (bench/idlepartitions,
// bench/stoprestart): the flags they share, the start to the broker's ready
// file, the stop by SIGTERM timed to the exit (strait-bench stops its
// brokers with it too), and the creation of their numbered topics, one
// CreateTopics request each.
package brokerproc

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Flags are the command-line flags the tools share. Set Port (and any other
// default) before Register.
type Flags struct {
	Bin        string   // -strait: the broker binary
	Topics     int      // -topics
	Partitions int      // -partitions: per topic
	Dir        string   // -dir: the working directory, a new one under $TMPDIR when empty
	Port       int      // -port: the PLAINTEXT listener's, on 127.0.0.1
	Overrides  []string // -override key=value, repeatable
}

// Register defines the flags on fs, with f's values as defaults (bin/strait,
// 100 topics and 1,000 partitions where unset).
func (f *Flags) Register(fs *flag.FlagSet) {
	if f.Bin == "" {
		f.Bin = "bin/strait"
	}
	if f.Topics == 0 {
		f.Topics = 100
	}
	if f.Partitions == 0 {
		f.Partitions = 1000
	}
	fs.StringVar(&f.Bin, "strait", f.Bin, "broker binary")
	fs.IntVar(&f.Topics, "topics", f.Topics, "topics to create")
	fs.IntVar(&f.Partitions, "partitions", f.Partitions, "partitions per topic")
	fs.StringVar(&f.Dir, "dir", f.Dir, "working directory (default: a new one under $TMPDIR)")
	fs.IntVar(&f.Port, "port", f.Port, "listener port on 127.0.0.1")
	fs.Var((*overrides)(&f.Overrides), "override", "broker property key=value (repeatable)")
}

type overrides []string

func (o *overrides) String() string     { return strings.Join(*o, ",") }
func (o *overrides) Set(v string) error { *o = append(*o, v); return nil }

// Addr is the broker's listener address.
func (f *Flags) Addr() string { return fmt.Sprintf("127.0.0.1:%d", f.Port) }

// WorkDir makes f.Dir (or a new directory under $TMPDIR named from
// pattern, as os.MkdirTemp) and returns its path.
func (f *Flags) WorkDir(pattern string) (string, error) {
	if f.Dir == "" {
		return os.MkdirTemp("", pattern)
	}
	return f.Dir, os.MkdirAll(f.Dir, 0o755)
}

// Launch says how to start one broker process.
type Launch struct {
	Flags       *Flags        // binary, listener port and overrides
	Dir         string        // the working directory: the ready file goes there
	Log         string        // the file of the broker's stdout and stderr
	Args        []string      // before the overrides: --ephemeral, say
	Env         []string      // added to this process's environment
	ReadyWithin time.Duration // how long the start may take to the ready file
}

// Broker is a running broker process.
type Broker struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed at the exit
	waitErr error         // the exit's, once done is closed
	stop    sync.Once
	Log     string // its log file
}

// Start starts the broker and returns once it has written its ready file,
// with the time from the start to that; the broker dies with this process
// (Pdeathsig). An exit before ready, or no ready file within
// l.ReadyWithin, is an error (the broker is stopped then).
func Start(l Launch) (*Broker, time.Duration, error) {
	ready := filepath.Join(l.Dir, "ready")
	_ = os.Remove(ready) // a previous run's
	logf, err := os.Create(l.Log)
	if err != nil {
		return nil, 0, err
	}
	args := append([]string{"--ready-file", ready}, l.Args...)
	args = append(args, "--override", "listeners=PLAINTEXT://"+l.Flags.Addr())
	for _, o := range l.Flags.Overrides {
		args = append(args, "--override", o)
	}
	cmd := exec.Command(l.Flags.Bin, args...)
	if len(l.Env) > 0 {
		cmd.Env = append(os.Environ(), l.Env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, 0, err
	}
	b := &Broker{cmd: cmd, done: make(chan struct{}), Log: l.Log}
	go func() {
		b.waitErr = cmd.Wait()
		logf.Close()
		close(b.done)
	}()
	for deadline := t0.Add(l.ReadyWithin); ; {
		if _, err := os.Stat(ready); err == nil {
			return b, time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			b.Stop(time.Minute)
			return nil, 0, fmt.Errorf("broker not ready in %s (see %s)", l.ReadyWithin, l.Log)
		}
		select {
		case <-b.done:
			return nil, 0, fmt.Errorf("broker exited at start: %v (see %s)", b.waitErr, l.Log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Pid is the broker's process id.
func (b *Broker) Pid() int { return b.cmd.Process.Pid }

// Stop sends SIGTERM (a clean close of every log) and waits for the exit,
// SIGKILL after limit. It returns the time to the exit and the exit's
// error, or that it was killed. Later calls wait for the same exit and
// return no time.
func (b *Broker) Stop(limit time.Duration) (took time.Duration, err error) {
	killed := false
	b.stop.Do(func() { took, killed = StopProcess(b.cmd.Process, b.done, limit) })
	<-b.done
	if killed {
		return took, fmt.Errorf("killed after %s of SIGTERM", limit)
	}
	return took, b.waitErr
}

// StopProcess sends proc SIGTERM and waits for exited to be closed (at
// its exit), SIGKILL after grace; it returns the time to the exit and
// whether the process had to be killed.
func StopProcess(proc *os.Process, exited <-chan struct{}, grace time.Duration) (took time.Duration, killed bool) {
	start := time.Now()
	_ = proc.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = proc.Kill()
		<-exited
		killed = true
	}
	return time.Since(start), killed
}

// Clients are a producer client for addr with the manual partitioner,
// linger 5 ms and room for 5-minute requests (a CreateTopics of 1,000
// partitions, a produce to every partition of a busy broker), plus opts,
// and an admin client on it whose requests may take 5 minutes.
func Clients(addr string, opts ...kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RequestTimeoutOverhead(5 * time.Minute)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32((5 * time.Minute).Milliseconds()))
	return cl, adm, nil
}

// TopicName is the i-th topic of a tool's topics named from prefix.
func TopicName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// CreateTopics creates topics topics of partitions partitions each (one
// replica), named TopicName(prefix, i), one CreateTopics request after
// another (each given 6 minutes), and calls created(i) after each when not
// nil.
func CreateTopics(adm *kadm.Client, prefix string, topics, partitions int, created func(i int)) error {
	for i := range topics {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		res, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, TopicName(prefix, i))
		cancel()
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return fmt.Errorf("creating %s: %w", TopicName(prefix, i), err)
		}
		if created != nil {
			created(i)
		}
	}
	return nil
}
