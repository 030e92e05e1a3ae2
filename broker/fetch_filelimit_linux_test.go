//go:build linux

package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const fetchFileLimitChild = "STRAIT_TEST_FETCH_FILE_LIMIT_CHILD"

// TestFetchUnderLowFileLimit: under an RLIMIT_NOFILE of 256 (set in a
// child process: the limit is the whole process's, embedded etcd
// included), fetches naming all 400 partitions read one record from each.
// Pinning a file per partition would pass the limit (EMFILE: a storage
// error, or etcd stopping the process), so a fetch's read declines to open
// a file once the files held by reads reach the segment file cache's total
// bound, and the rest come in later fetches.
func TestFetchUnderLowFileLimit(t *testing.T) {
	if os.Getenv(fetchFileLimitChild) == "1" {
		fetchUnderLowFileLimit(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFetchUnderLowFileLimit$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fetchFileLimitChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("fetch under low file limit: done")) {
		t.Fatalf("child: %v\n%s", err, lastLines(out, 60))
	}
}

func fetchUnderLowFileLimit(t *testing.T) {
	const limit, partitions = 256, 400
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	// strait.fd.reserve lowered: its default (256, held to half of this
	// limit) would refuse clients while the segment file cache is full.
	srv := startTestBroker(t, map[string]string{"strait.fd.reserve": "32", "log.segment.bytes": "1048576", "log.index.size.max.bytes": "65536"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.DefaultProduceTopic("wide"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, partitions, 1, nil, "wide"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		prod.Produce(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d", p)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce to %d: %v", p, err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil || t.Failed() {
		t.Fatalf("produce: %v", err)
	}
	// Sessionless fetches naming every partition from its next offset:
	// each must answer every partition without an error (a storage error
	// is retriable, so a consumer would hide it), and together they must
	// bring every record. Partitions read already return nothing and pin
	// nothing, so each round gets further.
	topics, err := kadm.NewClient(prod).ListTopics(ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int64, partitions)
	read := 0
	for round := 0; read < partitions; round++ {
		if round == 20 {
			t.Fatalf("read %d of %d partitions in %d fetches", read, partitions, round)
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 10, 1, 50<<20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = topics["wide"].ID
		for p := range int32(partitions) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, next[p], 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, prod)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("fetch %d: partition %d: %v", round, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
				if len(rp.RecordBatches) == 0 {
					continue
				}
				if next[rp.Partition] != 0 {
					t.Fatalf("partition %d answered again from offset %d", rp.Partition, next[rp.Partition])
				}
				next[rp.Partition] = 1
				read++
			}
		}
	}
	_, total := srv.replicas.FileCache().Bounds()
	fmt.Printf("fetch under low file limit: done: %d partitions, total bound %d, %d files open\n",
		partitions, total, srv.replicas.FileCache().Open())
}

// lastLines is the end of a child's output, at most n lines.
func lastLines(out []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], []byte("\n"))
}
