package replication

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// TestStaleLogDirectoryMovedAside: a directory whose partition.metadata
// names another topic id (a deleted topic of the same name) is never
// served: it is moved aside and removed, and Close waits for the removal.
func TestStaleLogDirectoryMovedAside(t *testing.T) {
	e := newEnv(t, nil, nil)
	stale := filepath.Join(e.dir, "reused-0")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	old := [16]byte{9, 9, 9}
	if err := storage.WritePartitionMetadata(nil, stale, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "marker"), []byte("old topic"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.topic("reused", []int32{1})
	p := e.m.Partition("reused", 0)
	if p == nil {
		t.Fatal("reused-0 not hosted")
	}
	id, err := storage.ReadPartitionMetadata(nil, p.Log().Dir())
	if err != nil || id != p.TopicID() {
		t.Fatalf("partition.metadata names %x (%v), want the new topic's %x", id, err, p.TopicID())
	}
	if _, err := os.Stat(filepath.Join(p.Log().Dir(), "marker")); !os.IsNotExist(err) {
		t.Fatalf("the old topic's files are served: %v", err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		switch de.Name() {
		case "reused-0", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint", storage.ReplicationOffsetFile, storage.CleanShutdownFileName,
			storage.MetaPropertiesFileName:
		default:
			t.Fatalf("%s left in the log directory after Close", de.Name())
		}
	}
}

// TestPartitionMetadataFailureReported: a partition whose partition.metadata
// cannot be made durable is not hosted (the error is reported), and is once
// the disk recovers and the metadata is applied again.
func TestPartitionMetadataFailureReported(t *testing.T) {
	ffs := storage.NewFaultFS(nil)
	e := newEnv(t, func(c *Config) { c.FS = ffs }, nil)
	ffs.FailSyncs(true)
	if err := e.m.applyTopic(controller.TopicInfo{Name: "faulty", ID: [16]byte{7},
		Partitions: []controller.PartitionInfo{{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}}}}, nil); err == nil {
		t.Fatal("no error with every fsync failing")
	}
	if e.m.Partition("faulty", 0) != nil {
		t.Fatal("a partition without a durable partition.metadata is hosted")
	}
	ffs.FailSyncs(false)
	e.topic("faulty", []int32{1})
	p := e.m.Partition("faulty", 0)
	if p == nil {
		t.Fatal("partition not hosted after the disk recovered")
	}
	if id, err := storage.ReadPartitionMetadata(nil, p.Log().Dir()); err != nil || id != p.TopicID() {
		t.Fatalf("partition.metadata names %x (%v), want %x", id, err, p.TopicID())
	}
}

// TestNewPartitionDirectorySurvivesPowerLoss: a partition's directory is
// durable once created, so a power loss takes from it only what was not
// fsynced, never the directory with its fsynced files.
func TestNewPartitionDirectorySurvivesPowerLoss(t *testing.T) {
	sfs := storage.NewStrictFS(nil)
	e := newEnv(t, func(c *Config) { c.FS = sfs }, nil)
	e.topic("durable", []int32{1})
	p := e.m.Partition("durable", 0)
	if p == nil {
		t.Fatal("durable-0 not hosted")
	}
	dir := p.Log().Dir()
	sfs.CutPower()
	if err := e.m.Close(); err != nil { // its fsyncs keep nothing now
		t.Fatal(err)
	}
	if _, err := sfs.Crash(); err != nil {
		t.Fatal(err)
	}
	if id, err := storage.ReadPartitionMetadata(nil, dir); err != nil || id != p.TopicID() {
		t.Fatalf("after a power loss: partition.metadata %x (%v), want %x", id, err, p.TopicID())
	}
}
