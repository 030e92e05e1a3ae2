package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// TestCleanShutdownMarkerFormat: the log directory's marker holds what
// Kafka's CleanShutdownFileHandler writes, reads Kafka's (whatever its key
// order), and counts as present whatever its body.
func TestCleanShutdownMarkerFormat(t *testing.T) {
	dir := t.TempDir()
	if clean, epoch, err := HadCleanShutdown(nil, dir); err != nil || clean || epoch != -1 {
		t.Fatalf("no marker: %v %d %v; want false -1 nil", clean, epoch, err)
	}
	if err := WriteCleanShutdown(nil, dir, 42); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(dir, ".kafka_cleanshutdown"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":0,"brokerEpoch":42}`; string(body) != want {
		t.Fatalf("marker %q, want Kafka's %q", body, want)
	}
	for _, c := range []struct {
		body  string
		epoch int64
	}{
		{`{"version":0,"brokerEpoch":42}`, 42},
		{`{"brokerEpoch":7,"version":0}`, 7},
		{``, -1},      // cut short by a crash after everything else was durable
		{`{"ver`, -1}, // likewise
		{`{"version":0}`, -1},
		{`{"broker_epoch":"9","version":"0"}`, -1}, // not Kafka 4.4's: present, no epoch
	} {
		if err := os.WriteFile(filepath.Join(dir, ".kafka_cleanshutdown"), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		clean, epoch, err := HadCleanShutdown(nil, dir)
		if err != nil || !clean || epoch != c.epoch {
			t.Errorf("marker %q: %v %d %v; want true %d nil", c.body, clean, epoch, err, c.epoch)
		}
	}
	for range 2 { // the second finds nothing to remove
		if err := RemoveCleanShutdown(nil, dir); err != nil {
			t.Fatal(err)
		}
		if clean, _, _ := HadCleanShutdown(nil, dir); clean {
			t.Fatal("marker still there after RemoveCleanShutdown")
		}
	}
}

// TestOpenCleanShutdownOption: a log closed by CloseUnmarked leaves no
// marker of its own; opened with Options.CleanShutdown (its directory's
// marker covered it) it recovers nothing, without it every segment from
// the recovery point on is recovered. Close, for a log on its own, writes
// the log's marker, which Open takes as clean and removes.
func TestOpenCleanShutdownOption(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 3000
	for _, c := range []struct {
		name          string
		unmarked      bool
		option        bool
		wantRecovered bool
	}{
		{"unmarked_with_option", true, true, false},
		{"unmarked_without_option", true, false, true},
		{"own_marker", false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTestLog(t, dir, cfg, nil)
			appendBatches(t, l, compress.None, 60, testEpoch.UnixMilli())
			leo := l.LogEndOffset()
			closeLog := l.Close
			if c.unmarked {
				closeLog = l.CloseUnmarked
			}
			if err := closeLog(); err != nil {
				t.Fatal(err)
			}
			_, err := os.Stat(filepath.Join(dir, cleanShutdownFile))
			if hasMarker := err == nil; hasMarker == c.unmarked {
				t.Fatalf("own marker present %v after the close, want %v", hasMarker, !c.unmarked)
			}
			l2, err := Open(dir, cfg, Options{CleanShutdown: c.option})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if got := l2.RecoveredSegments() > 0; got != c.wantRecovered {
				t.Errorf("recovered %d segments, want recovery %v", l2.RecoveredSegments(), c.wantRecovered)
			}
			if l2.LogEndOffset() != leo {
				t.Errorf("log end offset %d after reopening, want %d", l2.LogEndOffset(), leo)
			}
			if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !os.IsNotExist(err) {
				t.Errorf("own marker left while the log is open: %v", err)
			}
		})
	}
}
