package broker

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSecondBrokerOnALockedDirFailsAtOnce: a second broker given a log dir
// (or etcd data dir) a running broker holds fails Start at once with
// Kafka's message, and the dir is free again after the first one closes.
func TestSecondBrokerOnALockedDirFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	first := startTestBroker(t, map[string]string{"log.dirs": dir})
	defer first.Close()
	abs, _ := filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(dir, ".lock")); err != nil {
		t.Fatalf("no .lock in the log dir: %v", err)
	}

	for _, tc := range []struct {
		name  string
		props map[string]string
		dir   string
	}{
		{"same log dir", map[string]string{"log.dirs": dir}, abs},
		{"one of two log dirs", map[string]string{"log.dirs": t.TempDir() + "," + dir}, abs},
		{"same etcd data dir", map[string]string{"log.dirs": t.TempDir(), "etcd.data.dir": filepath.Join(dir, "etcd")}, filepath.Join(abs, "etcd")},
	} {
		second, _ := newTestServer(t, testProps(tc.props))
		start := time.Now()
		err := second.Start()
		took := time.Since(start)
		if err == nil {
			second.Close()
			t.Fatalf("%s: the second broker started", tc.name)
		}
		want := "Failed to acquire lock on file .lock in " + tc.dir + ". A Kafka instance in another process or thread is using this directory."
		if err.Error() != want {
			t.Errorf("%s: error %q, want %q", tc.name, err, want)
		}
		if took > 5*time.Second {
			t.Errorf("%s: failing took %v", tc.name, took)
		}
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again := startTestBroker(t, map[string]string{"log.dirs": dir})
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}
