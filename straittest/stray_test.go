package straittest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/strait/strait/internal/filetree"
	"github.com/strait/strait/straittest"
)

// TestTopicDeletedWhileBrokerDownMovedAside: a broker down while its topic
// is deleted finds the partition's directory at its restart, with the
// metadata loaded from etcd, and renames it <topic>-<p>.<uuid>-stray with
// every byte kept, as Kafka's brokers do; DescribeLogDirs does not list it.
func TestTopicDeletedWhileBrokerDownMovedAside(t *testing.T) {
	c := straittest.StartCluster(t, 3, straittest.WithTopic("gone", 1, 3))
	produceValues(t, c.Client(), "gone", 0, 50)
	c.WaitISR("gone", 0, 3, 30*time.Second)
	c.Stop(3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Admin().DeleteTopics(ctx, "gone")
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("deleting the topic: %v", err)
	}
	logDir := c.Broker(3).LogDirs()[0]
	files := filetree.Read(t, filepath.Join(logDir, "gone-0"))
	if len(files) == 0 {
		t.Fatal("broker 3 holds no files of gone-0")
	}
	c.Restart(3)

	if _, err := os.Stat(filepath.Join(logDir, "gone-0")); !os.IsNotExist(err) {
		t.Fatalf("gone-0 still in broker 3's log dir: %v", err)
	}
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	stray := regexp.MustCompile(`^gone-0\.[0-9a-f]{32}-stray$`)
	var found []string
	for _, e := range ents {
		if stray.MatchString(e.Name()) {
			found = append(found, e.Name())
		}
	}
	if len(found) != 1 {
		t.Fatalf("stray directories of gone-0: %v", found)
	}
	got := filetree.Read(t, filepath.Join(logDir, found[0]))
	if len(got) != len(files) {
		t.Errorf("%d files in the stray directory, %d in the log", len(got), len(files))
	}
	for f, b := range files {
		if !bytes.Equal(got[f], b) {
			t.Errorf("%s differs in the stray directory", f)
		}
	}
	// DescribeLogDirs (kafka-log-dirs) lists the hosted partitions only.
	dirs := describeLogDirs(t, c, c.Client(), 3).Dirs
	if len(dirs) == 0 {
		t.Error("DescribeLogDirs lists no log dir")
	}
	for _, d := range dirs {
		for _, tp := range d.Topics {
			if tp.Topic == "gone" {
				t.Errorf("DescribeLogDirs lists %s in %s", tp.Topic, d.Dir)
			}
		}
	}
}
