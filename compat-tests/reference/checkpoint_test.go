package reference

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/internal/filetree"
)

// TestCheckpointFilesReadByKafka: the per-log-directory checkpoints a
// Strait broker with two log directories leaves after a clean stop
// (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint) are read by Kafka's own
// OffsetCheckpointFile with the offsets Strait had, and are byte for byte
// what that class writes for the same entries in the same order; each
// directory's .kafka_cleanshutdown is read by Kafka's
// CleanShutdownFileHandler, and is what it writes for that broker epoch.
func TestCheckpointFilesReadByKafka(t *testing.T) {
	if os.Getenv("STRAIT_KAFKA_REFERENCE") != "1" {
		t.Skip("needs Java and Maven: run with STRAIT_KAFKA_REFERENCE=1 (make compat-reference)")
	}
	root := repoRoot(t)
	if out, err := exec.Command(filepath.Join(root, "bench/kafka/kafka.sh"), "fetch").CombinedOutput(); err != nil {
		t.Fatalf("fetching Kafka's jars: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "strait")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/strait/strait/cmd/strait").CombinedOutput(); err != nil {
		t.Fatalf("building strait: %v\n%s", err, out)
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	cmd := exec.Command(bin, "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs="+strings.Join(dirs, ","))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.Index(line, "addr="); i >= 0 && strings.Contains(line, "strait ready") {
				addr <- strings.Fields(line[i+5:])[0]
			}
		}
		exited <- cmd.Wait()
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("strait did not become ready")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(a), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil || len(meta.Brokers) != 1 {
		t.Fatalf("metadata: %+v %v", meta, err)
	}
	topics := map[string]int32{"orders": 4, "a.b_c-1": 2}
	for topic, n := range topics {
		if _, err := adm.CreateTopic(ctx, n, 1, nil, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	// Partition p of each topic gets p+2 records; orders-1 loses its
	// first 2 to DeleteRecords.
	want := map[string]map[string]int64{"recovery-point-offset-checkpoint": {}, "log-start-offset-checkpoint": {}, "replication-offset-checkpoint": {}}
	for topic, n := range topics {
		for p := range n {
			for i := range p + 2 {
				r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v%d", i)}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatalf("producing to %s-%d: %v", topic, p, err)
				}
			}
			key := fmt.Sprintf("%s %d", topic, p)
			want["recovery-point-offset-checkpoint"][key] = int64(p + 2)
			want["replication-offset-checkpoint"][key] = int64(p + 2)
			want["log-start-offset-checkpoint"][key] = 0
		}
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 2})
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
	want["log-start-offset-checkpoint"]["orders 1"] = 2
	cl.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("strait did not stop cleanly: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("strait did not stop within a minute")
	}

	// Which partition is in which directory, and what Kafka should read.
	var files []string
	expect := map[string][]string{}
	for _, d := range dirs {
		des, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, de := range des {
			i := strings.LastIndexByte(de.Name(), '-')
			if !de.IsDir() || i < 0 {
				continue
			}
			if _, ok := topics[de.Name()[:i]]; !ok {
				t.Logf("%s/%s: not a test partition", d, de.Name())
				continue
			}
			parts = append(parts, de.Name()[:i]+" "+de.Name()[i+1:])
		}
		for name, offsets := range want {
			path := filepath.Join(d, name)
			files = append(files, path)
			var lines []string
			for _, p := range parts {
				lines = append(lines, fmt.Sprintf("%s %d", p, offsets[p]))
			}
			slices.SortFunc(lines, comparePartitionLines)
			expect[path] = lines
		}
	}
	out := runKafkaClass(t, root, "KafkaCheckpoint", files)
	got := map[string][]string{}
	var cur string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f, ok := strings.CutPrefix(line, "== "); ok {
			cur = f
			got[cur] = []string{}
			continue
		}
		got[cur] = append(got[cur], line)
	}
	total := 0
	for _, path := range files {
		if !slices.Equal(got[path], expect[path]) {
			t.Errorf("%s as Kafka reads it:\n%q\nwant\n%q", path, got[path], expect[path])
		}
		total += len(got[path])
		strait, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		kafka, err := os.ReadFile(path + ".kafka")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(strait, kafka) {
			t.Errorf("%s: Strait wrote\n%q\nKafka writes\n%q", path, strait, kafka)
		}
	}
	if total != 3*6 {
		t.Fatalf("Kafka read %d entries in all, want 18 (6 partitions, 3 files)", total)
	}

	// Each log directory's clean-shutdown marker, as Kafka's
	// CleanShutdownFileHandler reads it (and the bytes that class writes
	// for the same broker epoch).
	out = runKafkaClass(t, root, "KafkaCleanShutdown", dirs)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(dirs) {
		t.Fatalf("Kafka's CleanShutdownFileHandler printed %q, want a line per log directory", lines)
	}
	for i, d := range dirs {
		rest, ok := strings.CutPrefix(lines[i], d+" exists=true epoch=")
		if !ok || rest == "none" || strings.HasPrefix(rest, "-") {
			t.Errorf("%s: Kafka reads the clean-shutdown marker as %q, want it present with a broker epoch", d, lines[i])
			continue
		}
		strait, err := os.ReadFile(filepath.Join(d, ".kafka_cleanshutdown"))
		if err != nil {
			t.Fatal(err)
		}
		kafka, err := os.ReadFile(filepath.Join(d, "kafka", ".kafka_cleanshutdown"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(strait, kafka) {
			t.Errorf("%s/.kafka_cleanshutdown: Strait wrote %q, Kafka writes %q for broker epoch %s", d, strait, kafka, rest)
		}
	}

	checkMetaPropertiesReadByKafka(t, root, bin, dirs, meta.Cluster, meta.Brokers[0].NodeID)
}

// checkMetaPropertiesReadByKafka: the meta.properties Strait wrote in each
// log directory are verified by Kafka's MetaPropertiesEnsemble for the
// cluster and node that wrote them, each with its own directory.id; a
// Strait start on those directories with a new etcd (another cluster id)
// stops with the message Kafka's verification gives, and leaves every file
// of the directories as it was (no partition moved aside as a stray).
func checkMetaPropertiesReadByKafka(t *testing.T, root, bin string, dirs []string, clusterID string, nodeID int32) {
	t.Helper()
	out := runKafkaClass(t, root, "KafkaMetaProperties", append([]string{clusterID, fmt.Sprint(nodeID)}, dirs...))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(dirs)+2 || lines[0] != "verified" {
		t.Fatalf("Kafka's MetaPropertiesEnsemble printed %q, want verified and a line per log directory", lines)
	}
	dirIDs := map[string]bool{}
	for i, d := range dirs {
		prefix := fmt.Sprintf("%s version=1 cluster.id=%s node.id=%d directory.id=", d, clusterID, nodeID)
		id, ok := strings.CutPrefix(lines[i+1], prefix)
		if !ok || len(id) != 22 || dirIDs[id] {
			t.Errorf("Kafka reads %q, want %q and a directory id of its own", lines[i+1], prefix+"...")
		}
		dirIDs[id] = true
	}
	kafkaRejects, ok := strings.CutPrefix(lines[len(lines)-1], "rejected: ")
	if !ok {
		t.Fatalf("Kafka verified the directories for another cluster id: %q", lines[len(lines)-1])
	}

	before := treeFiles(t, dirs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	otherEtcd := filepath.Join(t.TempDir(), "etcd")
	cmd := exec.CommandContext(ctx, bin, "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs="+strings.Join(dirs, ","),
		"--override", "etcd.data.dir="+otherEtcd)
	startOut, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("strait started on another cluster's log directories (err %v):\n%s", err, startOut)
	}
	// Kafka's message, as its verification gives it for the directory it
	// checks first; Strait checks log.dirs in order.
	kafkaForm := regexp.MustCompile(`^Invalid cluster\.id in: (.+)/meta\.properties\. Expected Other` + regexp.QuoteMeta(clusterID) + `, but read ` + regexp.QuoteMeta(clusterID) + `$`)
	if m := kafkaForm.FindStringSubmatch(kafkaRejects); m == nil || !slices.Contains(dirs, m[1]) {
		t.Fatalf("Kafka rejects another cluster id with %q: not the message this test knows", kafkaRejects)
	}
	straitForm := regexp.MustCompile(`Invalid cluster\.id in: ` + regexp.QuoteMeta(filepath.Join(dirs[0], "meta.properties")) +
		`\. Expected [A-Za-z0-9_-]{22}, but read ` + regexp.QuoteMeta(clusterID))
	if !straitForm.Match(startOut) {
		t.Errorf("strait on another cluster's log directories said:\n%s\nwant Kafka's message, as %q", startOut, kafkaRejects)
	}
	after := treeFiles(t, dirs)
	for path, b := range before {
		if a, ok := after[path]; !ok || !bytes.Equal(a, b) {
			t.Errorf("%s: changed or gone after the refused start (present %v)", path, ok)
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok {
			t.Errorf("%s: written by the refused start", path)
		}
	}
}

// treeFiles is every regular file under dirs, by path.
func treeFiles(t *testing.T, dirs []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range dirs {
		for rel, b := range filetree.Read(t, d) {
			out[filepath.Join(d, rel)] = b
		}
	}
	return out
}

// comparePartitionLines orders "topic partition offset" lines by topic,
// then partition number.
func comparePartitionLines(a, b string) int {
	var ta, tb string
	var pa, pb int
	fmt.Sscanf(a, "%s %d", &ta, &pa)
	fmt.Sscanf(b, "%s %d", &tb, &pb)
	if c := strings.Compare(ta, tb); c != 0 {
		return c
	}
	return pa - pb
}

// runKafkaClass runs testdata/<class>.java on Kafka's jars with args and
// returns what it printed, failing t with its stderr if it fails.
func runKafkaClass(t *testing.T, root, class string, args []string) []byte {
	t.Helper()
	java := exec.Command("java", append([]string{"-cp", filepath.Join(root, "bench/kafka/lib") + "/*",
		filepath.Join(root, "compat-tests/reference/testdata", class+".java")}, args...)...)
	out, err := java.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("Kafka's %s: %v\n%s", class, err, stderr)
	}
	return out
}
