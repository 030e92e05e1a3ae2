package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMetaPropertiesFormat: meta.properties is written as Kafka's
// Properties.store writes it, read back, and Kafka's own files (v1 as
// kafka-storage.sh format writes them, in any key order, and v0 of
// ZooKeeper-era brokers) are read with Kafka's rules.
func TestMetaPropertiesFormat(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadMetaProperties(nil, dir); ok || err != nil {
		t.Fatalf("no file: ok %v, err %v", ok, err)
	}
	mp := MetaProperties{Version: 1, ClusterID: "MkU3OEVBNTcwNTJENDM2Qg", NodeID: 3, DirectoryID: "4BdKbPS3QyWDa03Z7exwAQ"}
	at := time.Date(2026, 12, 7, 18, 55, 1, 0, time.UTC)
	if err := WriteMetaProperties(nil, dir, mp, at); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFileName))
	if err != nil {
		t.Fatal(err)
	}
	want := "#\n#Mon Dec 07 18:55:01 UTC 2026\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=3\ndirectory.id=4BdKbPS3QyWDa03Z7exwAQ\n"
	if string(body) != want {
		t.Fatalf("wrote %q, want %q", body, want)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaPropertiesFileName+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	if got, ok, err := ReadMetaProperties(nil, dir); !ok || err != nil || got != mp {
		t.Fatalf("read back %+v %v %v, want %+v", got, ok, err, mp)
	}

	for _, c := range []struct {
		name, body string
		want       MetaProperties
		err        string
	}{
		{name: "kafka v1, its key order", body: "#\n#Thu Mar 14 10:09:41 UTC 2024\nnode.id=1\ndirectory.id=4BdKbPS3QyWDa03Z7exwAQ\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n",
			want: MetaProperties{Version: 1, ClusterID: "MkU3OEVBNTcwNTJENDM2Qg", NodeID: 1, DirectoryID: "4BdKbPS3QyWDa03Z7exwAQ"}},
		{name: "separators and blanks", body: "! comment\r\n  version : 1\r\ncluster.id   abc\\=d\nnode.id=7\n\n",
			want: MetaProperties{Version: 1, ClusterID: "abc=d", NodeID: 7}},
		{name: "v0", body: "#\nbroker.id=5\n", want: MetaProperties{Version: 0, NodeID: 5}},
		{name: "v0 with cluster id", body: "version=0\nbroker.id=5\ncluster.id=abc\n", want: MetaProperties{Version: 0, NodeID: 5, ClusterID: "abc"}},
		{name: "v0 without node", body: "cluster.id=abc\n", want: MetaProperties{Version: 0, NodeID: -1, ClusterID: "abc"}},
		{name: "v1 without cluster id", body: "version=1\nnode.id=1\n", err: "cluster.id was not found"},
		{name: "v1 without node id", body: "version=1\ncluster.id=abc\n", err: "node.id was not found"},
		{name: "v1 with broker.id only", body: "version=1\ncluster.id=abc\nbroker.id=1\n", err: "node.id was not found"},
		{name: "bad node id", body: "version=1\ncluster.id=abc\nnode.id=x\n", err: "failed to parse node.id"},
		{name: "node id past int32", body: "version=1\ncluster.id=abc\nnode.id=4294967296\n", err: "failed to parse node.id"},
		{name: "unknown version", body: "version=2\ncluster.id=abc\nnode.id=1\n", err: "unknown meta.properties version number 2"},
		{name: "bad escape", body: "version=1\ncluster.id=\\uzz\nnode.id=1\n", err: "Malformed"},
		{name: "too large", body: strings.Repeat("#", metaPropertiesMaxSize+1), err: "more than the 65536 read"},
	} {
		if err := os.WriteFile(filepath.Join(dir, MetaPropertiesFileName), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, ok, err := ReadMetaProperties(nil, dir)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), MetaPropertiesFileName) {
				t.Errorf("%s: %+v, %v; want an error naming the file and %q", c.name, got, err, c.err)
			}
			continue
		}
		if err != nil || !ok || got != c.want {
			t.Errorf("%s: %+v %v %v, want %+v", c.name, got, ok, err, c.want)
		}
	}

	// Values that need escaping round-trip; v0 is written with broker.id.
	odd := MetaProperties{Version: 0, ClusterID: " a=b:c#d!e\\f", NodeID: 2}
	if err := WriteMetaProperties(nil, dir, odd, at); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := ReadMetaProperties(nil, dir); !ok || err != nil || got != odd {
		t.Fatalf("read back %+v %v %v, want %+v", got, ok, err, odd)
	}
	if body, _ := os.ReadFile(filepath.Join(dir, MetaPropertiesFileName)); !strings.Contains(string(body), "\nbroker.id=2\n") {
		t.Fatalf("v0 written as %q, want broker.id", body)
	}
}

// A failed write leaves the previous file whole and no temporary file.
func TestMetaPropertiesWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	old := MetaProperties{Version: 1, ClusterID: "old", NodeID: 1, DirectoryID: "d"}
	if err := WriteMetaProperties(nil, dir, old, time.Now()); err != nil {
		t.Fatal(err)
	}
	fsys := NewFaultFS(OSFS{})
	fsys.FailSyncs(true)
	if err := WriteMetaProperties(fsys, dir, MetaProperties{Version: 1, ClusterID: "new", NodeID: 1}, time.Now()); err == nil {
		t.Fatal("write with failing fsyncs succeeded")
	}
	if got, ok, err := ReadMetaProperties(nil, dir); !ok || err != nil || got != old {
		t.Fatalf("after the failed write: %+v %v %v, want %+v", got, ok, err, old)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaPropertiesFileName+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}
