//go:build linux

// Command stoprestart times a clean stop of a broker holding many
// partitions and the restart of the same data (issue 22): it starts
// bin/strait on a data directory, creates TOPICS topics of PARTITIONS
// partitions (one CreateTopics request each), writes one record to every
// partition (acks=1, as strait-bench's scaling steps), optionally waits
// for the partitions to go idle, then stops the broker with SIGTERM and
// times it to its exit; then starts it again on the same data, times it
// to ready (the --ready-file, then a Metadata answer listing every
// partition with a leader) and stops it again.
//
//	go build -o bin/strait ./cmd/strait && go run ./bench/stoprestart -topics 100 -partitions 1000
//
// Before each restart it counts the partition directories and how many
// hold their own clean-shutdown marker (.kafka_cleanshutdown, as versions
// before the log directory's marker wrote) and whether the log directory
// holds its marker (then no log needs recovery). The broker's log
// lines about the stop ("partition logs closed", "broker stopped") are
// printed with the times. The data directory is removed at the end unless
// -keep.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/strait/strait/bench/brokerproc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	bf := brokerproc.Flags{Port: 19793}
	bf.Register(flag.CommandLine)
	idleWait := flag.Duration("idle-wait", 0, "wait after the writes before the stop (80s: past the one-minute idle release)")
	restarts := flag.Int("restarts", 1, "restarts on the same data, each stopped again")
	keep := flag.Bool("keep", false, "keep the working directory")
	perfOut := flag.String("perf", "", "record the first stop with perf record -g into this file")
	flag.Parse()
	if err := run(&bf, *idleWait, *restarts, *keep, *perfOut); err != nil {
		fmt.Fprintln(os.Stderr, "stoprestart:", err)
		os.Exit(1)
	}
}

// start starts the n-th run of the broker on work/data, logging to
// work/broker-n.log, and returns once it wrote its ready file, with the
// time that took.
func start(bf *brokerproc.Flags, work string, n int) (*brokerproc.Broker, time.Duration, error) {
	return brokerproc.Start(brokerproc.Launch{Flags: bf, Dir: work,
		Log:  filepath.Join(work, fmt.Sprintf("broker-%d.log", n)),
		Args: []string{"--override", "log.dirs=" + filepath.Join(work, "data")}, ReadyWithin: 10 * time.Minute})
}

// stopLimit is how long a stop may take before SIGKILL.
const stopLimit = 15 * time.Minute

// stopLines prints the lines about the stop of the broker's log at logPath.
func stopLines(logPath string) {
	f, err := os.Open(logPath)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		for _, s := range []string{"partition logs closed", "broker stopped", "shutdown", "level=ERROR"} {
			if strings.Contains(l, s) {
				fmt.Println("  broker:", l)
				break
			}
		}
	}
}

func run(bf *brokerproc.Flags, idleWait time.Duration, restarts int, keep bool, perfOut string) (err error) {
	topics, partitions := bf.Topics, bf.Partitions
	work, err := bf.WorkDir("strait-stop-")
	if err != nil {
		return err
	}
	defer func() {
		if err == nil && !keep {
			os.RemoveAll(work)
		} else {
			fmt.Println("kept", work)
		}
	}()
	addr := bf.Addr()
	b, took, err := start(bf, work, 0)
	if err != nil {
		return err
	}
	fmt.Printf("fresh broker ready in %.2f s\n", took.Seconds())
	if err := populate(addr, topics, partitions); err != nil {
		b.Stop(stopLimit)
		return err
	}
	if idleWait > 0 {
		fmt.Printf("waiting %s\n", idleWait)
		time.Sleep(idleWait)
	}
	for i := 0; ; i++ {
		var perf *exec.Cmd
		if i == 0 && perfOut != "" {
			perf = exec.Command("perf", "record", "-F", "499", "-g", "-o", perfOut, "-p", fmt.Sprint(b.Pid()))
			perf.Stdout, perf.Stderr = os.Stderr, os.Stderr
			if err := perf.Start(); err != nil {
				return err
			}
			time.Sleep(time.Second) // perf attaches
		}
		took, err := b.Stop(stopLimit)
		if perf != nil {
			_ = perf.Wait() // it ends with the process
		}
		fmt.Printf("stop %d: %.2f s (exit: %v)\n", i, took.Seconds(), err)
		stopLines(b.Log)
		countMarkers(filepath.Join(work, "data"))
		if i == restarts {
			return nil
		}
		b, took, err = start(bf, work, i+1)
		if err != nil {
			return err
		}
		fmt.Printf("restart %d: ready file in %.2f s", i+1, took.Seconds())
		t0 := time.Now()
		n, err := waitLeaders(addr, topics*partitions)
		fmt.Printf(", every partition led %.2f s later (%d partitions, %v)\n", time.Since(t0).Seconds(), n, err)
	}
}

func populate(addr string, topics, partitions int) error {
	cl, adm, err := brokerproc.Clients(addr, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.MaxBufferedRecords(topics*partitions+1))
	if err != nil {
		return err
	}
	defer cl.Close()
	t0 := time.Now()
	if err := brokerproc.CreateTopics(adm, "stop", topics, partitions, nil); err != nil {
		return err
	}
	fmt.Printf("created %d partitions in %.1f s\n", topics*partitions, time.Since(t0).Seconds())
	t0 = time.Now()
	recs := make([]*kgo.Record, 0, topics*partitions)
	for i := range topics {
		for p := range partitions {
			recs = append(recs, &kgo.Record{Topic: topicName(i), Partition: int32(p), Value: make([]byte, 1024)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	fmt.Printf("wrote one record to each in %.1f s\n", time.Since(t0).Seconds())
	return nil
}

func topicName(i int) string { return brokerproc.TopicName("stop", i) }

// waitLeaders polls Metadata until want partitions have a leader (at most
// 10 minutes) and returns how many had one at the end.
func waitLeaders(addr string, want int) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	n := 0
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		md, err := adm.Metadata(ctx)
		cancel()
		if err != nil {
			continue
		}
		n = 0
		for _, t := range md.Topics {
			for _, p := range t.Partitions {
				if p.Leader >= 0 && p.Err == nil {
					n++
				}
			}
		}
		if n >= want {
			return n, nil
		}
	}
	return n, errors.New("not every partition had a leader in 10 minutes")
}

// countMarkers prints how many partition directories hold the
// clean-shutdown marker, and whether the log directory does.
func countMarkers(dataDir string) {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		fmt.Println("  ", err)
		return
	}
	dirs, marked := 0, 0
	for _, e := range ents {
		if !e.IsDir() || !strings.Contains(e.Name(), "-") {
			continue
		}
		dirs++
		if _, err := os.Stat(filepath.Join(dataDir, e.Name(), ".kafka_cleanshutdown")); err == nil {
			marked++
		}
	}
	_, err = os.Stat(filepath.Join(dataDir, ".kafka_cleanshutdown"))
	fmt.Printf("  %d partition directories, %d with a clean-shutdown marker; log dir marker: %v\n", dirs, marked, err == nil)
}
