package storage

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// kafkaRecoveryPoints is a recovery-point-offset-checkpoint as Kafka's
// OffsetCheckpointFile writes it for these three partitions in this order:
// BufferedWriter with newLine() ("\n" on Linux), version 0, the count, then
// "topic partition offset" per line.
const kafkaRecoveryPoints = "0\n3\n__consumer_offsets 7 1234567890123\norders 0 0\norders 11 42\n"

func TestOffsetCheckpointByteExactWithKafka(t *testing.T) {
	dir := t.TempDir()
	c := NewOffsetCheckpointFile(OSFS{}, dir, recoveryPointFile)
	entries := []TopicPartitionOffset{
		{Topic: "orders", Partition: 11, Offset: 42},
		{Topic: "__consumer_offsets", Partition: 7, Offset: 1234567890123},
		{Topic: "orders", Partition: 0, Offset: 0},
	}
	SortTopicPartitionOffsets(entries)
	if err := c.Write(entries); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, recoveryPointFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != kafkaRecoveryPoints {
		t.Fatalf("file = %q, Kafka writes %q", got, kafkaRecoveryPoints)
	}
	if _, err := os.Stat(filepath.Join(dir, recoveryPointFile+checkpointTmp)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	back, exists, err := c.Read()
	if err != nil || !exists {
		t.Fatalf("Read = %v, %v", exists, err)
	}
	if !reflect.DeepEqual(back, entries) {
		t.Fatalf("Read = %+v, wrote %+v", back, entries)
	}
	if got := string(FormatOffsetCheckpoint(nil)); got != "0\n0\n" {
		t.Fatalf("empty checkpoint = %q, Kafka writes %q", got, "0\n0\n")
	}
}

func TestOffsetCheckpointReadsWhatKafkaAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []TopicPartitionOffset
	}{
		{"empty file", "", nil},
		{"version only", "0\n", nil},
		{"no entries", "0\n0\n", []TopicPartitionOffset{}},
		{"no final newline", "0\n1\nt 0 5", []TopicPartitionOffset{{"t", 0, 5}}},
		{"CRLF", "0\r\n1\r\nt 1 5\r\n", []TopicPartitionOffset{{"t", 1, 5}}},
		{"tabs and runs of spaces", "0\n1\nt\t2   -1 \n", []TopicPartitionOffset{{"t", 2, -1}}},
		{"plus signs", "+0\n+1\nt +3 +9\n", []TopicPartitionOffset{{"t", 3, 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOffsetCheckpoint("f", []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && !reflect.DeepEqual(got, tc.want)) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOffsetCheckpointMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, data, wantReason string
	}{
		{"version not a number", "x\n0\n", "Malformed line 'x'"},
		{"version 1", "1\n0\n", "Unrecognised version 1, expected version 0"},
		{"count not a number", "0\nmany\n", "Malformed line 'many'"},
		{"fewer entries", "0\n2\nt 0 1\n", "Expected [2] entries, but found only [1]"},
		{"more entries", "0\n0\nt 0 1\n", "Expected [0] entries, but found only [1]"},
		{"negative count", "0\n-1\n", "Expected [-1] entries, but found only [0]"},
		{"two fields", "0\n1\nt 0\n", "Malformed line 't 0'"},
		{"four fields", "0\n1\nt 0 1 2\n", "Malformed line 't 0 1 2'"},
		{"leading space", "0\n1\n t 0 1\n", "Malformed line ' t 0 1'"},
		{"empty entry line", "0\n1\n\n", "Malformed line ''"},
		{"partition not a number", "0\n1\nt p 1\n", "Malformed line 't p 1'"},
		{"partition past int32", "0\n1\nt 2147483648 1\n", "Malformed line 't 2147483648 1'"},
		{"offset not a number", "0\n1\nt 0 1.5\n", "Malformed line 't 0 1.5'"},
		{"binary", "0\n1\nt\x00 0 1\x01\n", `Malformed line 't\x00 0 1\x01'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ReplicationOffsetFile)
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			got, exists, err := NewOffsetCheckpointFile(OSFS{}, dir, ReplicationOffsetFile).Read()
			var me *MalformedCheckpointError
			if !errors.As(err, &me) {
				t.Fatalf("Read = %+v, %v; want a MalformedCheckpointError", got, err)
			}
			if !exists || got != nil {
				t.Fatalf("exists %v, entries %+v on a malformed file", exists, got)
			}
			if me.Reason != tc.wantReason || me.Path != path || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q (reason %q), want reason %q naming %s", err, me.Reason, tc.wantReason, path)
			}
		})
	}
}

func TestOffsetCheckpointAbsentAndTooBig(t *testing.T) {
	dir := t.TempDir()
	c := NewOffsetCheckpointFile(OSFS{}, dir, logStartOffsetFile)
	if got, exists, err := c.Read(); err != nil || exists || got != nil {
		t.Fatalf("absent file: %+v, %v, %v", got, exists, err)
	}
	// A sparse file past the bound: rejected from its size, not read.
	f, err := os.Create(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxOffsetCheckpointBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var me *MalformedCheckpointError
	if _, _, err := c.Read(); !errors.As(err, &me) {
		t.Fatalf("oversized file: err %v, want MalformedCheckpointError", err)
	}
}

// A failed write leaves the previous file whole and no temporary behind.
func TestOffsetCheckpointWriteFault(t *testing.T) {
	dir := t.TempDir()
	fsys := NewFaultFS(OSFS{})
	c := NewOffsetCheckpointFile(fsys, dir, recoveryPointFile)
	old := []TopicPartitionOffset{{"t", 0, 10}}
	if err := c.Write(old); err != nil {
		t.Fatal(err)
	}
	fsys.FailSyncs(true)
	if err := c.Write([]TopicPartitionOffset{{"t", 0, 20}}); err == nil {
		t.Fatal("write with failing fsync succeeded")
	}
	fsys.FailSyncs(false)
	got, _, err := c.Read()
	if err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("after a failed write: %+v, %v; want %+v", got, err, old)
	}
	if _, err := os.Stat(c.Path() + checkpointTmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}
