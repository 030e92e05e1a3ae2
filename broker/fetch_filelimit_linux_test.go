//go:build linux

package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const fetchFileLimitChild = "STRAIT_TEST_FETCH_FILE_LIMIT_CHILD"

// lowFileLimit is the RLIMIT_NOFILE of the tests below: the segment file
// cache's total bound is then 128 files (storage.OpenFilesBound).
const lowFileLimit = 256

// underLowFileLimit runs child in a child process of the test binary under
// an RLIMIT_NOFILE of lowFileLimit: the limit is the whole process's,
// embedded etcd included. The parent fails with the child's output unless
// the child passed.
func underLowFileLimit(t *testing.T, child func(t *testing.T)) {
	if os.Getenv(fetchFileLimitChild) == t.Name() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: lowFileLimit, Max: lowFileLimit}); err != nil {
			t.Fatal(err)
		}
		child(t)
		if !t.Failed() {
			fmt.Printf("%s under a low file limit: passed\n", t.Name())
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fetchFileLimitChild+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(t.Name()+" under a low file limit: passed")) {
		t.Fatalf("child: %v\n%s", err, lastLines(out, 60))
	}
}

// startLowFileLimitBroker starts the broker of the tests under
// lowFileLimit: strait.fd.reserve lowered, as its default (256, held to
// half of this limit) would refuse clients while the segment file cache is
// full, and small segments and indexes.
func startLowFileLimitBroker(t *testing.T) *Server {
	t.Helper()
	return startTestBroker(t, map[string]string{"strait.fd.reserve": "32", "log.segment.bytes": "1048576", "log.index.size.max.bytes": "65536"})
}

// TestFetchUnderLowFileLimit: under an RLIMIT_NOFILE of 256, fetches
// naming all 400 partitions read one record from each. Pinning a file per
// partition would pass the limit (EMFILE: a storage error, or etcd stopping
// the process), so a fetch's read declines to open a file once the files
// held by reads reach the segment file cache's total bound, and the rest
// come in later fetches.
func TestFetchUnderLowFileLimit(t *testing.T) {
	underLowFileLimit(t, fetchUnderLowFileLimit)
}

func fetchUnderLowFileLimit(t *testing.T) {
	const partitions = 400
	srv := startLowFileLimitBroker(t)
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
	t.Logf("%d partitions, total bound %d, %d files open", partitions, total, srv.replicas.FileCache().Open())
}

// lastLines is the end of a child's output, at most n lines.
func lastLines(out []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], []byte("\n"))
}

// TestDeclinedFetchWaitsForFiles: a client that stops reading its response
// keeps the files of the response's reads held (they are sent from them)
// up to the segment file cache's total bound, so another consumer's reads
// are declined. Its fetches then wait for a held file's release (or their
// max_wait) rather than answering empty at once, which a client takes as
// "nothing yet" and re-sends at once: a loop at network speed for as long
// as the files stay held. Once the stalled client goes, the waiting fetch
// is woken and reads the records, well before its max_wait.
func TestDeclinedFetchWaitsForFiles(t *testing.T) {
	underLowFileLimit(t, declinedFetchWaitsForFiles)
}

func declinedFetchWaitsForFiles(t *testing.T) {
	srv := startLowFileLimitBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stalled := holdFilesAtBound(ctx, t, srv)
	defer stalled.Close()
	files := srv.replicas.FileCache()
	_, bound := files.Bounds()

	var fetches atomic.Int64
	got, polled := consumeOther(ctx, t, srv, &fetches)
	time.Sleep(2 * time.Second)
	if n := got.Load(); n != 0 {
		t.Fatalf("the consumer read %d records with the files held at the bound; its reads should be declined", n)
	}
	if n := fetches.Load(); n > 5 {
		t.Fatalf("the consumer sent %d fetches in 2 s while its reads were declined; want each to wait", n)
	}
	if files.Held() < bound {
		t.Fatalf("%d files held; the stalled client's %d should still be", files.Held(), bound)
	}
	t.Logf("%d fetches in 2 s with its reads declined", fetches.Load())

	stalled.Close() // its response's files are released
	released := time.Now()
	select {
	case <-polled:
	case <-time.After(20 * time.Second):
	}
	if got.Load() < 3 {
		t.Fatalf("the consumer read %d of 3 records in 20 s after the files were released", got.Load())
	}
	// Sooner than its 30 s max_wait: woken by the release.
	t.Logf("records read %v after the release, %d fetches in all", time.Since(released).Round(time.Millisecond), fetches.Load())
	if n := srv.StalledConnectionsClosed(); n != 0 {
		t.Fatalf("%d connections closed as stalled; none stalled for %v", n, stalledWriteLimit)
	}
}

// TestStalledClientClosedAtFileBound: a client that stops reading its
// response while the files it holds are at the bound is closed once its
// write has made no progress for the stall limit, so the consumer whose
// reads were declined reads its records, long before its max_wait and
// the stalled client's idle expiry. The consumer's own fetch, parked for
// longer than the limit meanwhile, is not a stalled write and stays open.
func TestStalledClientClosedAtFileBound(t *testing.T) {
	underLowFileLimit(t, stalledClientClosedAtFileBound)
}

func stalledClientClosedAtFileBound(t *testing.T) {
	srv := startLowFileLimitBroker(t)
	const stallLimit = 2 * time.Second
	srv.stallLimit.Store(int64(stallLimit))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stalled := holdFilesAtBound(ctx, t, srv)
	defer stalled.Close()
	held := time.Now()

	var fetches atomic.Int64
	got, polled := consumeOther(ctx, t, srv, &fetches)
	select {
	case <-polled:
	case <-time.After(20 * time.Second):
	}
	if got.Load() < 3 {
		t.Fatalf("the consumer read %d of 3 records in 20 s with the files held by a stalled client; it should have been closed after %v", got.Load(), stallLimit)
	}
	t.Logf("records read %v after the files reached the bound, %d fetches", time.Since(held).Round(time.Millisecond), fetches.Load())
	if n := srv.StalledConnectionsClosed(); n != 1 {
		t.Fatalf("%d connections closed as stalled; want 1, the client that stopped reading", n)
	}
	// The stalled client finds its connection closed once it reads what
	// the socket buffers held.
	stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, stalled); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the stalled client read %d bytes, then %v; want its connection closed", n, err)
	}
}

// holdFilesAtBound writes 150 partitions of 200 KB to a topic "wide" and 3
// records to a topic "other", then sends a fetch of every partition of
// "wide" on a raw connection that never reads its response: the response's
// reads hold 128 files (the bound), 25 MB, far more than loopback's socket
// buffers take. It returns that connection once the files held reach the
// bound.
func holdFilesAtBound(ctx context.Context, t *testing.T, srv *Server) net.Conn {
	t.Helper()
	const partitions, recordBytes = 150, 200 << 10
	files := srv.replicas.FileCache()
	_, bound := files.Bounds()
	prod, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, "wide"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "other"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := range int32(partitions) {
		value := make([]byte, recordBytes) // random: the producer compresses
		rand.Read(value)
		recs = append(recs, &kgo.Record{Topic: "wide", Partition: p, Value: value})
	}
	for i := range 3 {
		recs = append(recs, &kgo.Record{Topic: "other", Value: fmt.Appendf(nil, "other-%d", i)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	topics, err := adm.ListTopics(ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}

	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(13)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 1, 100<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = topics["wide"].ID
	for p := range int32(partitions) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	stalled, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stalled.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		stalled.Close()
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); files.Held() < bound; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			stalled.Close()
			t.Fatalf("%d files held after the stalled fetch; want the bound, %d", files.Held(), bound)
		}
	}
	return stalled
}

// consumeOther starts a consumer of the topic "other" with a max_wait
// longer than the tests wait, counting its fetches in fetches. got counts
// the records it read; polled closes once it has read the 3 records.
func consumeOther(ctx context.Context, t *testing.T, srv *Server, fetches *atomic.Int64) (got *atomic.Int64, polled <-chan struct{}) {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.ConsumeTopics("other"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(30*time.Second),
		kgo.WithHooks(fetchCounter{fetches}))
	if err != nil {
		t.Fatal(err)
	}
	got = new(atomic.Int64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for got.Load() < 3 && ctx.Err() == nil {
			got.Add(int64(cons.PollFetches(ctx).NumRecords()))
		}
	}()
	t.Cleanup(func() { // after the test's context is cancelled
		cons.Close()
		<-done
	})
	return got, done
}

// fetchCounter counts the Fetch requests a client writes.
type fetchCounter struct{ n *atomic.Int64 }

func (c fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == int16(kmsg.Fetch) {
		c.n.Add(1)
	}
}
