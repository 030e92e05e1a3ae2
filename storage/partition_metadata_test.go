package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestPartitionMetadataRoundTrip(t *testing.T) {
	dir := t.TempDir()
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if _, err := ReadPartitionMetadata(nil, dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reading a missing partition.metadata: %v, want not-exist", err)
	}
	if err := WritePartitionMetadata(nil, dir, id); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, PartitionMetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "version: 0\ntopic_id: " + EncodeTopicID(id) + "\n"; string(b) != want {
		t.Fatalf("partition.metadata = %q, want %q", b, want)
	}
	got, err := ReadPartitionMetadata(OSFS{}, dir)
	if err != nil || got != id {
		t.Fatalf("read back %x, %v; want %x", got, err, id)
	}
	if _, err := os.Stat(filepath.Join(dir, PartitionMetadataFile+checkpointTmp)); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

func TestPartitionMetadataBadContents(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"version: 0\n", "version: 0\ntopic_id: !!!\n", "version: 0\ntopic_id: AAAA\n"} {
		if err := os.WriteFile(filepath.Join(dir, PartitionMetadataFile), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPartitionMetadata(nil, dir); err == nil {
			t.Fatalf("%q read without error", body)
		}
	}
}

// TestPartitionMetadataWriteFaults: a failed write, file fsync or directory
// fsync is reported, and no partition.metadata (nor its temporary file) is
// left claiming the directory.
func TestPartitionMetadataWriteFaults(t *testing.T) {
	id := [16]byte{0xaa, 15: 0xbb}
	for _, tc := range []struct {
		name string
		arm  func(*FaultFS)
	}{
		{"disk full", func(f *FaultFS) { f.SetWriteBudget(5) }},
		{"fsync fails", func(f *FaultFS) { f.FailSyncs(true) }},
		{"create fails", func(f *FaultFS) { f.FailCreates(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ffs := NewFaultFS(nil)
			tc.arm(ffs)
			err := WritePartitionMetadata(ffs, dir, id)
			if err == nil {
				t.Fatal("write succeeded under an injected fault")
			}
			if _, serr := os.Stat(filepath.Join(dir, PartitionMetadataFile+checkpointTmp)); !os.IsNotExist(serr) {
				t.Fatalf("temporary file left behind: %v", serr)
			}
			// Each fault strikes before the rename.
			if _, serr := os.Stat(filepath.Join(dir, PartitionMetadataFile)); !os.IsNotExist(serr) {
				t.Fatalf("partition.metadata present after a failed write: %v", serr)
			}
		})
	}
}
