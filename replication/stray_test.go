package replication

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/internal/filetree"
	"github.com/strait/strait/storage"
)

// logRecords keeps the records logged at warn level and above.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// withMessage is the attributes of each record logged with msg.
func (l *logRecords) withMessage(msg string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		out = append(out, attrs)
	}
	return out
}

// restartLogged is restart with the manager's warnings kept.
func (e *testEnv) restartLogged(t *testing.T, cfg Config) *logRecords {
	t.Helper()
	logs := &logRecords{}
	e.restartWith(t, cfg, slog.New(logs))
	return logs
}

var strayName = regexp.MustCompile(`^(.+)-([0-9]+)\.([0-9a-f]{32})-stray$`)

// strayDirs lists logDir's stray directories of topic-partition name.
func strayDirs(t *testing.T, logDir, name string) []string {
	t.Helper()
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if m := strayName.FindStringSubmatch(e.Name()); m != nil && m[1]+"-"+m[2] == name {
			out = append(out, e.Name())
		}
	}
	return out
}

// forgetTopic takes topic name out of the metadata without telling the
// listeners (deleted while this broker was down).
func (f *fakeMeta) forgetTopic(name string) {
	f.mu.Lock()
	delete(f.topics, name)
	f.mu.Unlock()
}

// replaceTopic changes topic t in the metadata without telling the
// listeners (changed while this broker was down).
func (f *fakeMeta) replaceTopic(t controller.TopicInfo) {
	f.mu.Lock()
	f.topics[t.Name] = t
	f.mu.Unlock()
}

// strayEnv is a manager on node 1 that wrote 3 records to topic name's
// partition 0 and closed cleanly; it returns the configuration to restart
// with and the partition directory's files.
func strayEnv(t *testing.T, name string, replicas []int32) (*testEnv, Config, map[string][]byte) {
	t.Helper()
	var cfg Config
	e := newEnv(t, func(c *Config) { cfg = *c }, nil)
	e.topic(name, replicas)
	produce(t, e.m.Partition(name, 0), 3)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	return e, cfg, filetree.Read(t, filepath.Join(e.dir, name+"-0"))
}

// checkMovedAside checks that partition directory name of e's log dir was
// renamed stray with every byte kept, with one warning naming both, and
// returns the new name. The name must be free unless hostedAgain.
func checkMovedAside(t *testing.T, e *testEnv, logs *logRecords, name string, files map[string][]byte, hostedAgain bool) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(e.dir, name)); !hostedAgain && !os.IsNotExist(err) {
		t.Errorf("%s still in the log dir: %v", name, err)
	}
	strays := strayDirs(t, e.dir, name)
	if len(strays) != 1 {
		t.Fatalf("stray directories of %s: %v, want 1", name, strays)
	}
	got := filetree.Read(t, filepath.Join(e.dir, strays[0]))
	if len(got) != len(files) {
		t.Errorf("stray directory holds %d files, the log held %d", len(got), len(files))
	}
	for f, b := range files {
		if !bytes.Equal(got[f], b) {
			t.Errorf("%s: %d bytes in the stray directory differ from the %d of the log", f, len(got[f]), len(b))
		}
	}
	lines := logs.withMessage("partition log marked stray and renamed")
	if len(lines) != 1 || lines[0]["dir"] != filepath.Join(e.dir, name) || lines[0]["renamed_to"] != filepath.Join(e.dir, strays[0]) || lines[0]["reason"] == "" {
		t.Errorf("warnings for the rename: %v", lines)
	}
	return strays[0]
}

// TestStrayTopicDeletedWhileDown: a partition directory whose topic was
// deleted while the broker was down is renamed <topic>-<p>.<id>-stray at
// the start, its bytes kept, and its offsets leave the log dir's
// checkpoints.
func TestStrayTopicDeletedWhileDown(t *testing.T) {
	e, cfg, files := strayEnv(t, "gone", []int32{1})
	e.meta.forgetTopic("gone")
	logs := e.restartLogged(t, cfg)
	checkMovedAside(t, e, logs, "gone-0", files, false)
	if e.m.Partition("gone", 0) != nil {
		t.Error("gone-0 hosted")
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"recovery-point-offset-checkpoint", "log-start-offset-checkpoint", storage.ReplicationOffsetFile} {
		b, err := os.ReadFile(filepath.Join(e.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("gone 0 ")) {
			t.Errorf("%s still holds the stray partition: %q", f, b)
		}
	}
}

// TestStrayTopicRecreatedWhileDown: a topic deleted and re-created under
// the same name while the broker was down (another topic id, still
// assigned here): the old directory is renamed stray, the new topic's
// partition starts empty.
func TestStrayTopicRecreatedWhileDown(t *testing.T) {
	e, cfg, files := strayEnv(t, "again", []int32{1})
	t0, _ := e.meta.Topic("again")
	t0.ID = [16]byte{0xee, 1}
	e.meta.replaceTopic(t0)
	logs := e.restartLogged(t, cfg)
	checkMovedAside(t, e, logs, "again-0", files, true)
	p := e.m.Partition("again", 0)
	if p == nil {
		t.Fatal("again-0 not hosted")
	}
	if leo := p.Log().LogEndOffset(); leo != 0 {
		t.Errorf("the re-created topic's log ends at %d, want 0", leo)
	}
	if id, err := storage.ReadPartitionMetadata(nil, p.Log().Dir()); err != nil || id != t0.ID {
		t.Errorf("partition.metadata names %x (%v), want %x", id, err, t0.ID)
	}
}

// TestStrayReassignedAwayWhileDown: a partition whose replicas no longer
// include this broker is renamed stray.
func TestStrayReassignedAwayWhileDown(t *testing.T) {
	e, cfg, files := strayEnv(t, "away", []int32{1})
	t0, _ := e.meta.Topic("away")
	t0.Partitions = slices.Clone(t0.Partitions)
	t0.Partitions[0].Replicas, t0.Partitions[0].ISR, t0.Partitions[0].Leader = []int32{2, 3}, []int32{2, 3}, 2
	e.meta.replaceTopic(t0)
	logs := e.restartLogged(t, cfg)
	checkMovedAside(t, e, logs, "away-0", files, false)
	if e.m.Partition("away", 0) != nil {
		t.Error("away-0 hosted")
	}
}

// TestReassignmentToThisBrokerNotStray: a partition being reassigned to
// this broker (an adding replica, already in the replicas) and one being
// reassigned away from it (a removing replica, still in the replicas, as
// in Kafka) are not stray: they open with their records.
func TestReassignmentToThisBrokerNotStray(t *testing.T) {
	var cfg Config
	e := newEnv(t, func(c *Config) { cfg = *c }, nil)
	e.topic("incoming", []int32{1}, []int32{1})
	produce(t, e.m.Partition("incoming", 0), 3)
	produce(t, e.m.Partition("incoming", 1), 2)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	t0, _ := e.meta.Topic("incoming")
	t0.Partitions = slices.Clone(t0.Partitions)
	t0.Partitions[0].Replicas, t0.Partitions[0].ISR, t0.Partitions[0].Leader = []int32{2, 1}, []int32{2}, 2
	t0.Partitions[0].AddingReplicas, t0.Partitions[0].RemovingReplicas = []int32{1}, []int32{2}
	t0.Partitions[1].Replicas, t0.Partitions[1].ISR = []int32{1, 2}, []int32{1}
	t0.Partitions[1].AddingReplicas, t0.Partitions[1].RemovingReplicas = []int32{2}, []int32{1}
	e.meta.replaceTopic(t0)
	logs := e.restartLogged(t, cfg)
	if got := logs.withMessage("partition log marked stray and renamed"); len(got) != 0 {
		t.Fatalf("renamed: %v", got)
	}
	for i, want := range []int64{3, 2} {
		p := e.m.Partition("incoming", int32(i))
		if p == nil {
			t.Fatalf("incoming-%d not hosted", i)
		}
		if leo := p.Log().LogEndOffset(); leo != want {
			t.Errorf("incoming-%d ends at %d, want %d", i, leo, want)
		}
	}
}

// TestStrayDirLeftAtNextStart: a -stray directory found at a later start
// is left as it is (a warning names it), however its name reads, and the
// log dir is marked at the clean stop even after a crash.
func TestStrayDirLeftAtNextStart(t *testing.T) {
	e, cfg, files := strayEnv(t, "gone", []int32{1})
	e.meta.forgetTopic("gone")
	e.restart(t, cfg)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	strays := strayDirs(t, e.dir, "gone-0")
	if len(strays) != 1 {
		t.Fatalf("stray directories: %v", strays)
	}
	// A crash instead of the stop, and the topic back under its old id:
	// the stray directory stays what it is.
	if err := os.Remove(filepath.Join(e.dir, storage.CleanShutdownFileName)); err != nil {
		t.Fatal(err)
	}
	e.topic("gone", []int32{1})
	logs := e.restartLogged(t, cfg)
	if got := strayDirs(t, e.dir, "gone-0"); !slices.Equal(got, strays) {
		t.Errorf("stray directories after the next start: %v, want %v", got, strays)
	}
	got := filetree.Read(t, filepath.Join(e.dir, strays[0]))
	for f, b := range files {
		if !bytes.Equal(got[f], b) {
			t.Errorf("%s changed in the stray directory", f)
		}
	}
	if p := e.m.Partition("gone", 0); p == nil || p.Log().LogEndOffset() != 0 {
		t.Error("gone-0 not hosted afresh")
	}
	left := logs.withMessage("stray partition log left in place")
	if len(left) != 1 || left[0]["dir"] != filepath.Join(e.dir, strays[0]) {
		t.Errorf("warnings for the stray directory: %v", left)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if !dirMarked(t, e.dir) {
		t.Error("log dir not marked at the clean stop")
	}
}

// TestOtherDirsInLogDirLeftAlone: a directory whose name is no
// partition's is left alone with a warning (no failed start), one of
// Config.ForeignDirs silently even if it reads as a partition's, and a
// file named like a partition is no directory to rename.
func TestOtherDirsInLogDirLeftAlone(t *testing.T) {
	var cfg Config
	e := newEnv(t, func(c *Config) { cfg = *c }, nil)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(e.dir, "etcd-1")
	cfg.ForeignDirs = []string{foreign + "/"}
	for _, d := range []string{"not_a_partition", "topic-x", "-0", "t-99999999999", "etcd-1/member", "lost+found"} {
		if err := os.MkdirAll(filepath.Join(e.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.dir, "file-0"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := e.restartLogged(t, cfg)
	var warned []string
	for _, l := range logs.withMessage("directory in a log dir is not a partition log; left alone") {
		warned = append(warned, filepath.Base(l["dir"]))
	}
	slices.Sort(warned)
	if want := []string{"-0", "not_a_partition", "t-99999999999", "topic-x"}; !slices.Equal(warned, want) {
		t.Errorf("warned of %v, want %v", warned, want)
	}
	if got := logs.withMessage("partition log marked stray and renamed"); len(got) != 0 {
		t.Errorf("renamed: %v", got)
	}
	for _, d := range []string{"not_a_partition", "topic-x", "-0", "t-99999999999", "etcd-1/member", "lost+found", "file-0"} {
		if _, err := os.Stat(filepath.Join(e.dir, d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// TestStrayDirName: Kafka's name, within 255 bytes for the longest topic
// name, never read as a partition's by the log-dir scans.
func TestStrayDirName(t *testing.T) {
	for _, topic := range []string{"t", "a-b-7", strings.Repeat("x", 249)} {
		name := strayDirName(topic, 12345)
		m := strayName.FindStringSubmatch(name)
		if m == nil || m[2] != "12345" || !strings.HasPrefix(topic, m[1]) || len(name) > 255 {
			t.Errorf("%q: %q", topic, name)
		}
		if len(topic) < 200 && m[1] != topic {
			t.Errorf("%q: topic cut in %q", topic, name)
		}
		if _, _, ok := storage.ParsePartitionDirName(name); ok {
			t.Errorf("%q parses as a partition directory", name)
		}
		if m[3][12] != '4' || !strings.ContainsRune("89ab", rune(m[3][16])) {
			t.Errorf("%q: not a version 4 UUID", m[3])
		}
	}
	if strayDirName("t", 0) == strayDirName("t", 0) {
		t.Error("two stray names alike")
	}
}

// failStrayRenames is a filesystem on which renaming to a stray name
// fails.
type failStrayRenames struct{ storage.FS }

func (f failStrayRenames) Rename(oldpath, newpath string) error {
	if strings.HasSuffix(newpath, StrayDirSuffix) {
		return storage.ErrInjected
	}
	return f.FS.Rename(oldpath, newpath)
}

// TestStrayRenameFailureLeavesDirectory: a stray directory that cannot be
// renamed stays as it is, with an error logged; the start goes on.
func TestStrayRenameFailureLeavesDirectory(t *testing.T) {
	e, cfg, files := strayEnv(t, "stuck", []int32{1})
	e.meta.forgetTopic("stuck")
	cfg.FS = failStrayRenames{storage.OSFS{}}
	logs := e.restartLogged(t, cfg)
	if got := filetree.Read(t, filepath.Join(e.dir, "stuck-0")); len(got) != len(files) {
		t.Errorf("stuck-0 holds %d files, want %d", len(got), len(files))
	}
	if got := strayDirs(t, e.dir, "stuck-0"); len(got) != 0 {
		t.Errorf("stray directories: %v", got)
	}
	if got := logs.withMessage("cannot move a stray partition log aside"); len(got) != 1 || got[0]["dir"] != filepath.Join(e.dir, "stuck-0") {
		t.Errorf("errors logged: %v", got)
	}
}

// TestManyStraysCounted: past a few strays in a log dir, a count line
// follows their lines.
func TestManyStraysCounted(t *testing.T) {
	var cfg Config
	e := newEnv(t, func(c *Config) { cfg = *c }, nil)
	replicas := make([][]int32, 12)
	for i := range replicas {
		replicas[i] = []int32{1}
	}
	e.topic("many", replicas...)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e.meta.forgetTopic("many")
	logs := e.restartLogged(t, cfg)
	if got := logs.withMessage("partition log marked stray and renamed"); len(got) != 12 {
		t.Errorf("%d rename lines, want 12", len(got))
	}
	if got := logs.withMessage("stray partition logs renamed"); len(got) != 1 || got[0]["count"] != "12" || got[0]["dir"] != e.dir {
		t.Errorf("count lines: %v", got)
	}
}

// countMetadataReads is a filesystem counting the opens of
// partition.metadata files.
type countMetadataReads struct {
	storage.FS
	mu sync.Mutex
	n  int
}

func (c *countMetadataReads) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if filepath.Base(name) == storage.PartitionMetadataFile && flag == os.O_RDONLY {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return c.FS.OpenFile(name, flag, perm)
}

// TestStartReadsPartitionMetadataOnce: the stray scan's reading of each
// kept partition's topic id serves the metadata replay's open.
func TestStartReadsPartitionMetadataOnce(t *testing.T) {
	var cfg Config
	e := newEnv(t, func(c *Config) { cfg = *c }, nil)
	e.topic("kept", []int32{1}, []int32{1}, []int32{1})
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	counter := &countMetadataReads{FS: storage.OSFS{}}
	cfg.FS = counter
	e.restart(t, cfg)
	for i := range 3 {
		if e.m.Partition("kept", int32(i)) == nil {
			t.Fatalf("kept-%d not hosted", i)
		}
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if counter.n != 3 {
		t.Errorf("partition.metadata read %d times for 3 partitions", counter.n)
	}
}
