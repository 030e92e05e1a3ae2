package replication

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strait/strait/internal/filetree"
	"github.com/strait/strait/storage"
)

// TestLogDirIdentityChecked: the first start writes each log directory's
// meta.properties (this cluster, this node, a directory.id of its own);
// a start with another cluster id or node.id fails naming the key and
// the file, and neither it nor the Close after it touches anything in the
// directory (a partition directory the metadata does not place here is not
// moved aside, the clean-shutdown marker stays); a
// copied directory (a duplicate directory.id) fails too; a file without a
// directory.id gets one, keeping the rest.
func TestLogDirIdentityChecked(t *testing.T) {
	second := t.TempDir()
	var cfg Config
	e := newEnv(t, func(c *Config) { c.LogDirs = append(c.LogDirs, second); cfg = *c }, nil)
	e.topic("kept", []int32{1})
	produce(t, e.m.Partition("kept", 0), 3)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, d := range cfg.LogDirs {
		mp, ok, err := storage.ReadMetaProperties(nil, d)
		if err != nil || !ok || mp.Version != 1 || mp.ClusterID != e.meta.clusterID || mp.NodeID != 1 || len(mp.DirectoryID) != 22 {
			t.Fatalf("%s: %+v %v %v; want version 1, this cluster and node, a directory id", d, mp, ok, err)
		}
		ids[mp.DirectoryID] = true
	}
	if len(ids) != 2 {
		t.Fatalf("directory ids %v, want one per log dir", ids)
	}
	partDir := filepath.Join(e.dir, "kept-0")
	before := filetree.Read(t, partDir)

	start := func(cfg Config) error {
		m := e.newManager(cfg, nil)
		err := m.Start()
		if err != nil {
			// As the broker does after a failed start: this too must
			// leave the directories alone.
			if cerr := m.Close(); cerr != nil {
				t.Errorf("close after the failed start: %v", cerr)
			}
			return err
		}
		t.Cleanup(func() { _ = m.Close() })
		return nil
	}
	untouched := func(what string) {
		t.Helper()
		if _, err := os.Stat(partDir); err != nil {
			t.Fatalf("%s: the partition directory is gone: %v", what, err)
		}
		got := filetree.Read(t, partDir)
		for f, b := range before {
			if string(got[f]) != string(b) {
				t.Errorf("%s: %s changed", what, f)
			}
		}
		if !dirMarked(t, e.dir) {
			t.Errorf("%s: the clean-shutdown marker was consumed", what)
		}
	}

	// Another cluster: the metadata no longer has the topic, so a start
	// that went on would move kept-0 aside as a stray.
	e.meta.forgetTopic("kept")
	e.meta.clusterID = "AnotherClusterIdAAAAAA"
	err := start(cfg)
	if err == nil || !strings.Contains(err.Error(), "Invalid cluster.id in: "+filepath.Join(e.dir, storage.MetaPropertiesFileName)) ||
		!strings.Contains(err.Error(), "Expected AnotherClusterIdAAAAAA, but read StraitFakeClusterIdAAA") {
		t.Fatalf("start with another cluster id: %v", err)
	}
	untouched("another cluster")
	e.meta.clusterID = "StraitFakeClusterIdAAA"

	other := cfg
	other.NodeID = 2
	if err := start(other); err == nil || !strings.Contains(err.Error(), "Stored node id 1 doesn't match previous node id 2") {
		t.Fatalf("start as another node: %v", err)
	}
	untouched("another node")

	copied := t.TempDir()
	body, err := os.ReadFile(filepath.Join(second, storage.MetaPropertiesFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copied, storage.MetaPropertiesFileName), body, 0o644); err != nil {
		t.Fatal(err)
	}
	dup := cfg
	dup.LogDirs = append(dup.LogDirs[:2:2], copied)
	if err := start(dup); err == nil || !strings.Contains(err.Error(), "Duplicate directory ID") || !strings.Contains(err.Error(), copied) {
		t.Fatalf("start with a copied log dir: %v", err)
	}
	untouched("a copied log dir")

	// A file of an older format, without directory.id: completed, kept.
	if err := os.WriteFile(filepath.Join(second, storage.MetaPropertiesFileName),
		[]byte("version=1\ncluster.id=StraitFakeClusterIdAAA\nnode.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := start(cfg); err != nil {
		t.Fatal(err)
	}
	mp, _, err := storage.ReadMetaProperties(nil, second)
	if err != nil || mp.DirectoryID == "" || ids[mp.DirectoryID] || mp.ClusterID != "StraitFakeClusterIdAAA" || mp.NodeID != 1 {
		t.Fatalf("completed file: %+v %v; want a new directory id, the rest kept", mp, err)
	}
}
