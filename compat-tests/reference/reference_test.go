// Package reference runs Apache Kafka 4.x (from its Maven Central jars, via
// bench/kafka/kafka.sh) and Strait side by side, applies the same topic
// configs and the same record batches to both, and checks that retention and
// compaction leave the same records at the same offsets; with the
// StandardAuthorizer on both (acl_test.go), that every API key both serve
// is authorized with the same error codes and filtered the same way; and
// that both answer the same, field by field, to scripted requests of every
// key and version (conformance_test.go) and to client sessions recorded
// against Kafka (conformance_replay_test.go, testdata/recorded). It
// needs Java and
// Maven, so it runs only with STRAIT_KAFKA_REFERENCE=1 (`make
// compat-reference`, part of `make test`).
package reference

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Settings both brokers get, so that background work happens within the
// test's time: retention checked every 500 ms, the cleaner polling every
// 100 ms, deleted segments removed at once.
var brokerSettings = map[string]string{
	"log.retention.check.interval.ms": "500",
	"log.cleaner.backoff.ms":          "100",
	"log.segment.delete.delay.ms":     "0",
	"log.initial.task.delay.ms":       "0",
}

type broker struct {
	name string
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func startKafka(t *testing.T) *broker { return startKafkaWith(t, brokerSettings) }

// startKafkaWith starts Kafka with settings appended to its server.properties.
func startKafkaWith(t *testing.T, settings map[string]string) *broker {
	root := repoRoot(t)
	dir := t.TempDir()
	script := filepath.Join(root, "bench/kafka/kafka.sh")
	if out, err := exec.Command(script, "format", dir).CombinedOutput(); err != nil {
		t.Fatalf("formatting Kafka: %v\n%s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(dir, "server.properties"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range settings {
		fmt.Fprintf(f, "%s=%s\n", k, v)
	}
	f.Close()
	out, err := exec.Command(script, "start", dir).Output()
	if err != nil {
		t.Fatalf("starting Kafka: %v", err)
	}
	t.Cleanup(func() { exec.Command(script, "stop", dir).Run() })
	return connect(t, "kafka", strings.TrimSpace(string(out)))
}

func startStrait(t *testing.T) *broker { return startStraitWith(t, brokerSettings) }

// startStraitWith builds and starts Strait with settings as overrides.
func startStraitWith(t *testing.T, settings map[string]string) *broker {
	bin := filepath.Join(t.TempDir(), "strait")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/strait/strait/cmd/strait").CombinedOutput(); err != nil {
		t.Fatalf("building strait: %v\n%s", err, out)
	}
	args := []string{"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=" + t.TempDir()}
	for k, v := range settings {
		args = append(args, "--override", k+"="+v)
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.Index(line, "addr="); i >= 0 && strings.Contains(line, "strait ready") {
				addr <- strings.Fields(line[i+5:])[0]
			}
		}
	}()
	select {
	case a := <-addr:
		return connect(t, "strait", a)
	case <-time.After(30 * time.Second):
		t.Fatal("strait did not become ready")
	}
	return nil
}

func connect(t *testing.T, name, addr string) *broker {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &broker{name: name, addr: addr, cl: cl, adm: kadm.NewClient(cl)}
}

// rec is one record of a batch we build ourselves, so both brokers receive
// byte-identical batches and roll segments at the same places.
type rec struct {
	key, value []byte // nil value: tombstone
	ts         int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batch encodes recs as one uncompressed magic-v2 record batch.
func batch(recs []rec) []byte {
	var body []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.ts - recs[0].ts, OffsetDelta: int32(i), Key: r.key, Value: r.value}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // encoded with Length 0: a one-byte prefix
		body = kr.AppendTo(body)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: recs[0].ts, MaxTimestamp: recs[len(recs)-1].ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: body,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

func (b *broker) createTopic(t *testing.T, topic string, configs map[string]string) {
	cfg := map[string]*string{}
	for k, v := range configs {
		v := v
		cfg[k] = &v
	}
	resp, err := b.adm.CreateTopic(context.Background(), 1, 1, cfg, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("%s: create %s: %v %v", b.name, topic, err, resp.Err)
	}
}

func (b *broker) produce(t *testing.T, topic string, batches [][]byte) {
	var topics kadm.TopicDetails
	for i := 0; ; i++ { // Kafka elects the new partition's leader a moment after CreateTopics
		var err error
		topics, err = b.adm.ListTopics(context.Background(), topic)
		if err == nil && topics[topic].Err == nil && len(topics[topic].Partitions) == 1 && topics[topic].Partitions[0].Leader >= 0 {
			break
		}
		if i == 100 {
			t.Fatalf("%s: topic %s has no leader: %v %+v", b.name, topic, err, topics[topic])
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, raw := range batches {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rt.TopicID = topics[topic].ID // Produce v13 (Kafka 4.1+) names topics by id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = raw
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		for try := 0; ; try++ {
			resp, err := req.RequestWith(context.Background(), b.cl)
			if err != nil {
				t.Fatalf("%s: produce batch %d: %v", b.name, i, err)
			}
			code := resp.Topics[0].Partitions[0].ErrorCode
			if code == 0 {
				break
			}
			if !kerr.IsRetriable(kerr.ErrorForCode(code)) || try == 50 {
				t.Fatalf("%s: produce batch %d: %v", b.name, i, kerr.ErrorForCode(code))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// stored is what a consumer sees of one record.
type stored struct {
	Offset int64
	Key    string
	Value  string
	Null   bool
}

// contents reads the whole partition: log start offset and every record.
// ok is false when the partition changed under the read (retention or the
// cleaner removed what was being read); the caller reads again.
func (b *broker) contents(t *testing.T, topic string) (start0 int64, recs []stored, ok bool) {
	starts, err := b.adm.ListStartOffsets(context.Background(), topic)
	if err != nil {
		t.Fatalf("%s: list start offsets: %v", b.name, err)
	}
	ends, err := b.adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatalf("%s: list end offsets: %v", b.name, err)
	}
	start, _ := starts.Lookup(topic, 0)
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []stored
	for end.Offset > start.Offset && (len(out) == 0 || out[len(out)-1].Offset < end.Offset-1) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Logf("%s: reading %s from %d up to %d: %v; the log moved, reading again", b.name, topic, start.Offset, end.Offset, ctx.Err())
			return 0, nil, false
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, stored{r.Offset, string(r.Key), string(r.Value), r.Value == nil})
		})
	}
	return start.Offset, out, true
}

// settle polls both brokers until their contents agree or the deadline
// passes, then fails with the difference. With anyStart the log start
// offsets may differ (see the compact-delete case).
func settle(t *testing.T, topic string, brokers []*broker, d time.Duration, anyStart bool, done func(start int64, recs []stored) bool) {
	deadline := time.Now().Add(d)
	for {
		ks, kr, kok := brokers[0].contents(t, topic)
		ss, sr, sok := brokers[1].contents(t, topic)
		if kok && sok && (ks == ss || anyStart) && reflect.DeepEqual(kr, sr) && done(ks, kr) {
			t.Logf("%s: both brokers leave log start %d and %d records", topic, ks, len(kr))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Kafka leaves log start %d and %d records, Strait log start %d and %d records\nfirst difference: %s",
				topic, ks, len(kr), ss, len(sr), firstDifference(kr, sr))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func firstDifference(a, b []stored) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("record %d: Kafka %+v, Strait %+v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}

// workload builds n batches of 10 records with keys from a small set, a
// value of size bytes, and timestamps from base, one ms apart.
func workload(n, keys, size int, base int64, tombstoneEvery int) [][]byte {
	var out [][]byte
	i := 0
	for b := 0; b < n; b++ {
		var recs []rec
		for j := 0; j < 10; j++ {
			v := []byte(fmt.Sprintf("v%06d-%s", i, strings.Repeat("x", size)))
			if tombstoneEvery > 0 && i%tombstoneEvery == tombstoneEvery-1 {
				v = nil
			}
			recs = append(recs, rec{key: []byte(fmt.Sprintf("k%03d", i%keys)), value: v, ts: base + int64(i)})
			i++
		}
		out = append(out, batch(recs))
	}
	return out
}

func TestRetentionAndCompactionMatchKafka(t *testing.T) {
	if os.Getenv("STRAIT_KAFKA_REFERENCE") != "1" {
		t.Skip("needs Java and Maven: run with STRAIT_KAFKA_REFERENCE=1 (make compat-reference)")
	}
	brokers := []*broker{startKafka(t), startStrait(t)}
	now := time.Now().UnixMilli()
	type phase struct {
		batches [][]byte
		done    func(start int64, recs []stored) bool
	}
	cases := []struct {
		topic   string
		configs map[string]string
		batches [][]byte
		done    func(start int64, recs []stored) bool
		then    *phase // produced once the first phase has settled
		// anyStart: the log start offset depends on whether Kafka's
		// retention check or its cleaner runs first, so only the records
		// are compared.
		anyStart bool
	}{
		{
			// ~3.3 MB in 1 MiB segments, 2 MB kept by size.
			topic:   "retention-bytes",
			configs: map[string]string{"segment.bytes": "1048576", "retention.bytes": "2000000"},
			batches: workload(300, 1000, 1000, now, 0),
			done:    func(start int64, _ []stored) bool { return start > 0 },
		},
		{
			// 1500 records two days old, with retention.ms of one day: every
			// segment goes, the active one too (rolled first). Then 1500 new
			// records stay.
			topic:   "retention-ms",
			configs: map[string]string{"segment.bytes": "1048576", "retention.ms": "86400000"},
			batches: workload(150, 1000, 1000, now-2*86400000, 0),
			done:    func(start int64, _ []stored) bool { return start == 1500 },
			then: &phase{
				batches: workload(150, 1000, 1000, now, 0),
				done:    func(start int64, recs []stored) bool { return start == 1500 && len(recs) == 1500 },
			},
		},
		{
			// 100 keys rewritten many times, some tombstones.
			topic: "compact",
			configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576",
				"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "86400000"},
			batches: workload(300, 100, 1000, now, 37),
			done:    func(_ int64, recs []stored) bool { return len(recs) < 2000 },
		},
		{
			topic: "compact-delete",
			configs: map[string]string{"cleanup.policy": "compact,delete", "segment.bytes": "1048576",
				"min.cleanable.dirty.ratio": "0.01", "retention.bytes": "2000000"},
			batches: workload(300, 100, 1000, now, 0),
			done:    func(_ int64, recs []stored) bool { return len(recs) < 2000 },
			// Retention first deletes the first segment (log start 1020);
			// cleaning first empties it and the log falls under
			// retention.bytes (log start 0). The records left are the same.
			anyStart: true,
		},
	}
	for _, c := range cases {
		t.Run(c.topic, func(t *testing.T) {
			for _, b := range brokers {
				b.createTopic(t, c.topic, c.configs)
				b.produce(t, c.topic, c.batches)
			}
			settle(t, c.topic, brokers, 60*time.Second, c.anyStart, c.done)
			if c.then != nil {
				for _, b := range brokers {
					b.produce(t, c.topic, c.then.batches)
				}
				settle(t, c.topic, brokers, 60*time.Second, c.anyStart, c.then.done)
			}
		})
	}
}
