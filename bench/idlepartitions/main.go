//go:build linux

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
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strait/strait/bench/brokerproc"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	bf := brokerproc.Flags{Port: 19792}
	bf.Register(flag.CommandLine)
	flag.Lookup("dir").Usage += "; removed at the end"
	idleWait := flag.Duration("idle-wait", 80*time.Second, "wait after the last produce before measuring (past the one-minute idle release)")
	cpuWindow := flag.Duration("cpu-window", 60*time.Second, "how long idle CPU is measured")
	busyFDs := flag.Int("max-busy-fds", 10000, "write the next topic only while the broker holds fewer descriptors")
	flag.Parse()
	if err := run(&bf, *idleWait, *cpuWindow, *busyFDs); err != nil {
		fmt.Fprintln(os.Stderr, "idlepartitions:", err)
		os.Exit(1)
	}
}

// run measures; the working directory (-dir too) is removed at the end.
func run(bf *brokerproc.Flags, idleWait, cpuWindow time.Duration, busyFDs int) error {
	topics, partitions := bf.Topics, bf.Partitions
	work, err := bf.WorkDir("strait-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	b, _, err := brokerproc.Start(brokerproc.Launch{Flags: bf, Dir: work, Log: filepath.Join(work, "broker.log"),
		Args: []string{"--ephemeral"}, Env: []string{"TMPDIR=" + work}, // --ephemeral's data dir goes there
		ReadyWithin: time.Minute})
	if err != nil {
		return err
	}
	// Interrupted: stop the broker and remove the data before exiting.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		stop(b)
		os.RemoveAll(work)
		os.Exit(1)
	}()
	pid := b.Pid()
	defer stop(b)
	base := sample(pid)
	fmt.Printf("fresh broker: %d descriptors, %d mappings, RSS %.1f MiB\n", base.fds, base.maps, float64(base.rss)/(1<<20))

	cl, adm, err := brokerproc.Clients(bf.Addr(), kgo.MaxBufferedRecords(partitions+1))
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	var peakFDs, peakMaps int
	note := func() procSample {
		s := sample(pid)
		peakFDs, peakMaps = max(peakFDs, s.fds), max(peakMaps, s.maps)
		return s
	}
	name := func(i int) string { return brokerproc.TopicName("idle", i) }
	err = brokerproc.CreateTopics(adm, "idle", topics, partitions, func(i int) {
		s := note()
		if (i+1)%10 == 0 || i+1 == topics {
			fmt.Printf("%d partitions created in %.0f s: %d descriptors, %d mappings, RSS %.0f MiB\n",
				(i+1)*partitions, time.Since(start).Seconds(), s.fds, s.maps, float64(s.rss)/(1<<20))
		}
	})
	if err != nil {
		return err
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

// stop ends the broker with SIGTERM (a clean close of every log), SIGKILL
// after 10 minutes.
func stop(b *brokerproc.Broker) {
	took, err := b.Stop(10 * time.Minute)
	fmt.Printf("broker stopped in %.1f s (exit: %v)\n", took.Seconds(), err)
}
