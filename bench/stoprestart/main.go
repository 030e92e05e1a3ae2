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
// hold the clean-shutdown marker (.kafka_cleanshutdown: those need no
// recovery) and whether each log directory holds one. The broker's log
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
		idleWait   = flag.Duration("idle-wait", 0, "wait after the writes before the stop (80s: past the one-minute idle release)")
		restarts   = flag.Int("restarts", 1, "restarts on the same data, each stopped again")
		work       = flag.String("dir", "", "working directory (default: a new one under $TMPDIR)")
		keep       = flag.Bool("keep", false, "keep the working directory")
		port       = flag.Int("port", 19793, "listener port on 127.0.0.1")
		perfOut    = flag.String("perf", "", "record the first stop with perf record -g into this file")
	)
	flag.Parse()
	if err := run(*bin, *topics, *partitions, *idleWait, *restarts, *work, *keep, *port, *perfOut); err != nil {
		fmt.Fprintln(os.Stderr, "stoprestart:", err)
		os.Exit(1)
	}
}

type broker struct {
	cmd    *exec.Cmd
	exited chan error
	log    string
}

func start(bin, work string, port, n int) (*broker, time.Duration, error) {
	ready := filepath.Join(work, "ready")
	os.Remove(ready)
	logPath := filepath.Join(work, fmt.Sprintf("broker-%d.log", n))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(bin, "--ready-file", ready,
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port),
		"--override", "log.dirs="+filepath.Join(work, "data"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, 0, err
	}
	b := &broker{cmd: cmd, exited: make(chan error, 1), log: logPath}
	go func() { b.exited <- cmd.Wait(); logf.Close() }()
	for deadline := time.Now().Add(10 * time.Minute); ; {
		if _, err := os.Stat(ready); err == nil {
			return b, time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			b.stop()
			return nil, 0, errors.New("broker not ready in 10 minutes")
		}
		select {
		case err := <-b.exited:
			return nil, 0, fmt.Errorf("broker exited at start: %v (see %s)", err, logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for the exit, SIGKILL after 15 minutes.
func (b *broker) stop() (time.Duration, error) {
	t0 := time.Now()
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-b.exited:
		return time.Since(t0), err
	case <-time.After(15 * time.Minute):
		_ = b.cmd.Process.Kill()
		<-b.exited
		return time.Since(t0), errors.New("killed after 15 minutes")
	}
}

// stopLines prints the broker's log lines about the stop.
func (b *broker) stopLines() {
	f, err := os.Open(b.log)
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

func run(bin string, topics, partitions int, idleWait time.Duration, restarts int, work string, keep bool, port int, perfOut string) (err error) {
	if work == "" {
		d, err := os.MkdirTemp("", "strait-stop-")
		if err != nil {
			return err
		}
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	defer func() {
		if err == nil && !keep {
			os.RemoveAll(work)
		} else {
			fmt.Println("kept", work)
		}
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var b *broker
	var took time.Duration
	b, took, err = start(bin, work, port, 0)
	if err != nil {
		return err
	}
	fmt.Printf("fresh broker ready in %.2f s\n", took.Seconds())
	if err := populate(addr, topics, partitions); err != nil {
		b.stop()
		return err
	}
	if idleWait > 0 {
		fmt.Printf("waiting %s\n", idleWait)
		time.Sleep(idleWait)
	}
	for i := 0; ; i++ {
		var perf *exec.Cmd
		if i == 0 && perfOut != "" {
			perf = exec.Command("perf", "record", "-F", "499", "-g", "-o", perfOut, "-p", fmt.Sprint(b.cmd.Process.Pid))
			perf.Stdout, perf.Stderr = os.Stderr, os.Stderr
			if err := perf.Start(); err != nil {
				return err
			}
			time.Sleep(time.Second) // perf attaches
		}
		took, err := b.stop()
		if perf != nil {
			_ = perf.Wait() // it ends with the process
		}
		fmt.Printf("stop %d: %.2f s (exit: %v)\n", i, took.Seconds(), err)
		b.stopLines()
		countMarkers(filepath.Join(work, "data"))
		if i == restarts {
			return nil
		}
		b, took, err = start(bin, work, port, i+1)
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.MaxBufferedRecords(topics*partitions+1), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32((5 * time.Minute).Milliseconds()))
	t0 := time.Now()
	for i := range topics {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		res, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topicName(i))
		cancel()
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return fmt.Errorf("creating %s: %w", topicName(i), err)
		}
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

func topicName(i int) string { return fmt.Sprintf("stop-%03d", i) }

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
