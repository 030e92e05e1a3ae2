// Command idlepartitions measures what idle partitions cost a running
// broker (issue 22): it starts bin/strait (embedded etcd, data in a
// temporary directory it removes at the end), creates TOPICS topics of
// PARTITIONS partitions, produces one record to every partition (each then
// has a segment and a producer), waits past the idle release of the active
// segments (a minute), and reports the process's descriptors, memory
// mappings, RSS per partition and CPU while idle.
//
//	go build -o bin/strait ./cmd/strait && go run ./bench/idlepartitions -topics 100 -partitions 1000
//
// (make bench-idle-partitions). The topics are created first (a new,
// empty partition holds no descriptor once the maintenance saw it), then
// written topic by topic, waiting while the broker holds more than
// -max-busy-fds descriptors: a partition written to keeps its active
// segment's descriptor and two index mappings for the minute before it
// counts as idle, and writing to all 100,000 within a minute would take
// 100,000 descriptors (this machine's RLIMIT_NOFILE is 20,000) and
// 200,000 mappings (vm.max_map_count's default is 65,530), as it would in
// Kafka, which holds them for good.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	var (
		bin        = flag.String("strait", "bin/strait", "broker binary")
		topics     = flag.Int("topics", 100, "topics to create")
		partitions = flag.Int("partitions", 1000, "partitions per topic")
		idleWait   = flag.Duration("idle-wait", 80*time.Second, "wait after the last produce before measuring (past the one-minute idle release)")
		cpuWindow  = flag.Duration("cpu-window", 60*time.Second, "how long idle CPU is measured")
		work       = flag.String("dir", "", "working directory (default: a new one under $TMPDIR); removed at the end")
		port       = flag.Int("port", 19792, "listener port on 127.0.0.1")
		busyFDs    = flag.Int("max-busy-fds", 10000, "write the next topic only while the broker holds fewer descriptors")
	)
	var overrides multi
	flag.Var(&overrides, "override", "broker property key=value (repeatable)")
	flag.Parse()
	if err := run(*bin, *topics, *partitions, *idleWait, *cpuWindow, *work, *port, *busyFDs, overrides); err != nil {
		fmt.Fprintln(os.Stderr, "idlepartitions:", err)
		os.Exit(1)
	}
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func run(bin string, topics, partitions int, idleWait, cpuWindow time.Duration, work string, port, busyFDs int, overrides []string) error {
	if work == "" {
		d, err := os.MkdirTemp("", "strait-idle-")
		if err != nil {
			return err
		}
		work = d
	}
	defer os.RemoveAll(work)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ready := filepath.Join(work, "ready")
	args := []string{"--ephemeral", "--ready-file", ready, "--override", "listeners=PLAINTEXT://" + addr}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+work) // --ephemeral's data dir goes there
	logf, err := os.Create(filepath.Join(work, "broker.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Interrupted: stop the broker and remove the data before exiting.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		stop(cmd, exited)
		os.RemoveAll(work)
		os.Exit(1)
	}()
	pid := cmd.Process.Pid
	defer stop(cmd, exited)
	if err := waitFile(ready, exited, time.Minute); err != nil {
		return err
	}
	base := sample(pid)
	fmt.Printf("fresh broker: %d descriptors, %d mappings, RSS %.1f MiB\n", base.fds, base.maps, float64(base.rss)/(1<<20))

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(partitions+1), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32((5 * time.Minute).Milliseconds()))
	start := time.Now()
	var peakFDs, peakMaps int
	note := func() procSample {
		s := sample(pid)
		peakFDs, peakMaps = max(peakFDs, s.fds), max(peakMaps, s.maps)
		return s
	}
	name := func(i int) string { return fmt.Sprintf("idle-%03d", i) }
	for i := range topics {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		res, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, name(i))
		cancel()
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return fmt.Errorf("creating %s: %w", name(i), err)
		}
		s := note()
		if (i+1)%10 == 0 || i+1 == topics {
			fmt.Printf("%d partitions created in %.0f s: %d descriptors, %d mappings, RSS %.0f MiB\n",
				(i+1)*partitions, time.Since(start).Seconds(), s.fds, s.maps, float64(s.rss)/(1<<20))
		}
	}
	created := time.Since(start)
	start = time.Now()
	for i := range topics {
		for waited := 0; sample(pid).fds > busyFDs && waited < 300; waited++ {
			time.Sleep(time.Second)
		}
		recs := make([]*kgo.Record, partitions)
		for p := range recs {
			recs[p] = &kgo.Record{Topic: name(i), Partition: int32(p), Value: []byte("idle")}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("producing to %s: %w", name(i), err)
		}
		s := note()
		if (i+1)%10 == 0 || i+1 == topics {
			fmt.Printf("%d partitions written in %.0f s: %d descriptors, %d mappings, RSS %.0f MiB\n",
				(i+1)*partitions, time.Since(start).Seconds(), s.fds, s.maps, float64(s.rss)/(1<<20))
		}
	}
	fmt.Printf("created %d partitions in %.0f s, wrote them in %.0f s (paced)\n", topics*partitions, created.Seconds(), time.Since(start).Seconds())
	cl.Close()
	total := topics * partitions
	fmt.Printf("waiting %s for the idle release\n", idleWait)
	time.Sleep(idleWait)
	s := sample(pid)
	t0 := cpuTicks(pid)
	time.Sleep(cpuWindow)
	t1 := cpuTicks(pid)
	after := sample(pid)
	du := diskUsage(work)
	fmt.Printf("\n| partitions | descriptors (idle; peak while creating) | mappings (idle; peak) | RSS MiB (fresh -> idle) | RSS per idle partition | idle CPU (%s) | disk |\n|---:|---:|---:|---:|---:|---:|---:|\n",
		cpuWindow)
	fmt.Printf("| %d | %d; %d | %d; %d | %.0f -> %.0f | %.0f B | %.2f%% of a core (%d ticks) | %.2f GB |\n",
		total, s.fds, peakFDs, s.maps, peakMaps, float64(base.rss)/(1<<20), float64(after.rss)/(1<<20),
		float64(after.rss-base.rss)/float64(total), float64(t1-t0)/cpuWindow.Seconds(), t1-t0, float64(du)/1e9)
	return nil
}

type procSample struct {
	fds, maps int
	rss       int64
}

func sample(pid int) procSample {
	var s procSample
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = len(ents)
	}
	if f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			s.maps++
		}
		f.Close()
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				s.rss = kb << 10
			}
		}
	}
	return s
}

// cpuTicks is utime+stime of pid, in clock ticks (100 a second).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}

func waitFile(path string, exited <-chan error, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("broker exited at start: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("broker not ready in time")
}

// stop ends the broker with SIGTERM (a clean close of every log), SIGKILL
// after 10 minutes.
func stop(cmd *exec.Cmd, exited <-chan error) {
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		fmt.Printf("broker stopped in %.1f s\n", time.Since(start).Seconds())
	case <-time.After(10 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		fmt.Println("broker killed after 10 minutes of SIGTERM")
	}
}
