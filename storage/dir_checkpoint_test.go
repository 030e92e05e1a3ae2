package storage

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParsePartitionDirName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		ok        bool
	}{
		{"orders-0", "orders", 0, true},
		{"my-topic.v2-17", "my-topic.v2", 17, true},
		{"__consumer_offsets-49", "__consumer_offsets", 49, true},
		{"orders-0.0123456789abcdef0123456789abcdef-future", "", 0, false},
		{"orders-3.0123456789abcdef0123456789abcdef-delete", "", 0, false},
		{"orders-1.0123456789abcdef0123456789abcdef-stray", "", 0, false},
		{"topic-stray-4", "topic-stray", 4, true},
		{"orders-", "", 0, false},
		{"-5", "", 0, false},
		{"orders", "", 0, false},
		{"orders-+1", "", 0, false},
		{"orders-2147483648", "", 0, false},
	} {
		topic, p, ok := ParsePartitionDirName(tc.name)
		if topic != tc.topic || p != tc.partition || ok != tc.ok {
			t.Errorf("%q: %q %d %v, want %q %d %v", tc.name, topic, p, ok, tc.topic, tc.partition, tc.ok)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// legacyDataDir is a log directory as Strait wrote it before the
// per-directory checkpoints: one file per partition.
func legacyDataDir(t *testing.T) string {
	t.Helper()
	logDir := t.TempDir()
	for name, data := range map[string]string{
		"orders-0/" + recoveryPointFile:            "0\n100\n",
		"orders-1/" + recoveryPointFile:            "0\n7\n",
		"orders-2/" + recoveryPointFile:            "garbage", // skipped, logged
		"orders-3/" + highWatermarkFile:            "0\n5\n",  // another file: no entry
		"orders-4.abc-delete/" + recoveryPointFile: "0\n9\n",  // not a live log
	} {
		p := filepath.Join(logDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return logDir
}

func TestLoadDirOffsetsMigratesPerPartitionFiles(t *testing.T) {
	logDir := legacyDataDir(t)
	got, migrated, err := LoadDirOffsets(OSFS{}, logDir, recoveryPointFile, recoveryPointFile, discardLogger())
	if err != nil || !migrated {
		t.Fatalf("migrated %v, err %v", migrated, err)
	}
	want := map[TopicPartition]int64{{"orders", 0}: 100, {"orders", 1}: 7}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}

	// Once written, the per-directory file is what is read.
	if err := NewOffsetCheckpointFile(OSFS{}, logDir, recoveryPointFile).Write(DirOffsetEntries(map[TopicPartition]int64{{"orders", 0}: 150})); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(logDir, recoveryPointFile))
	if err != nil || string(b) != "0\n1\norders 0 150\n" {
		t.Fatalf("per-directory file %q, %v", b, err)
	}
	got, migrated, err = LoadDirOffsets(OSFS{}, logDir, recoveryPointFile, recoveryPointFile, discardLogger())
	if err != nil || migrated || !reflect.DeepEqual(got, map[TopicPartition]int64{{"orders", 0}: 150}) {
		t.Fatalf("after writing: %v, migrated %v, err %v", got, migrated, err)
	}
}

// A malformed per-directory file is an error and the older per-partition
// files are not used instead.
func TestLoadDirOffsetsMalformedFile(t *testing.T) {
	logDir := legacyDataDir(t)
	if err := os.WriteFile(filepath.Join(logDir, ReplicationOffsetFile), []byte("0\n2\norders 0 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, migrated, err := LoadDirOffsets(OSFS{}, logDir, ReplicationOffsetFile, highWatermarkFile, discardLogger())
	var me *MalformedCheckpointError
	if !errors.As(err, &me) || me.Path != filepath.Join(logDir, ReplicationOffsetFile) {
		t.Fatalf("err %v, want a MalformedCheckpointError naming the file", err)
	}
	if len(got) != 0 || migrated {
		t.Fatalf("offsets %v, migrated %v from a malformed file", got, migrated)
	}
}

func TestLoadDirOffsetsEmptyAndMissingDir(t *testing.T) {
	got, migrated, err := LoadDirOffsets(OSFS{}, t.TempDir(), ReplicationOffsetFile, highWatermarkFile, discardLogger())
	if err != nil || migrated || len(got) != 0 {
		t.Fatalf("empty dir: %v, %v, %v", got, migrated, err)
	}
	got, migrated, err = LoadDirOffsets(OSFS{}, filepath.Join(t.TempDir(), "absent"), ReplicationOffsetFile, highWatermarkFile, discardLogger())
	if err != nil || migrated || len(got) != 0 {
		t.Fatalf("missing dir: %v, %v, %v", got, migrated, err)
	}
}

// Unchanged offsets are not written again; a failed write is retried.
func TestDirCheckpointWriterSkipsUnchanged(t *testing.T) {
	logDir := t.TempDir()
	fsys := NewFaultFS(OSFS{})
	w := NewDirCheckpointWriter(fsys, logDir, ReplicationOffsetFile)
	offsets := map[TopicPartition]int64{{"b", 1}: 5, {"a", 0}: 9}
	if written, err := w.Write(offsets); err != nil || !written {
		t.Fatalf("first write: %v, %v", written, err)
	}
	b, err := os.ReadFile(filepath.Join(logDir, ReplicationOffsetFile))
	if err != nil || string(b) != "0\n2\na 0 9\nb 1 5\n" {
		t.Fatalf("file %q, %v", b, err)
	}
	// With fsyncs failing, a write would fail: a skipped one does not.
	fsys.FailSyncs(true)
	if written, err := w.Write(map[TopicPartition]int64{{"a", 0}: 9, {"b", 1}: 5}); err != nil || written {
		t.Fatalf("unchanged offsets: written %v, err %v", written, err)
	}
	offsets[TopicPartition{"a", 0}] = 10
	if written, err := w.Write(offsets); err == nil || written {
		t.Fatalf("changed offsets with failing fsync: written %v, err %v", written, err)
	}
	fsys.FailSyncs(false)
	// The offsets of the failed write are written now, not skipped.
	if written, err := w.Write(offsets); err != nil || !written {
		t.Fatalf("after the failure: written %v, err %v", written, err)
	}
	got, _, err := LoadDirOffsets(OSFS{}, logDir, ReplicationOffsetFile, highWatermarkFile, discardLogger())
	if err != nil || !reflect.DeepEqual(got, offsets) {
		t.Fatalf("read back %v, %v; want %v", got, err, offsets)
	}
}
