package straittest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Two clusters on the shared etcd are separate clusters (their own ids,
// their own topics); a broker restarts on it; the etcd and its directory
// are gone once the last cluster using it has closed.
func TestSharedEtcdClustersAreSeparate(t *testing.T) {
	var dir string
	t.Run("clusters", func(t *testing.T) {
		a := StartCluster(t, 3, WithTopic("a", 1, 3))
		b := Start(t, WithTopic("b", 2, 1))
		sharedEtcd.mu.Lock()
		dir, users := sharedEtcd.dir, sharedEtcd.users
		sharedEtcd.mu.Unlock()
		if users != 2 || dir == "" {
			t.Fatalf("shared etcd users %d, dir %q", users, dir)
		}
		if a.ClusterID() == "" || a.ClusterID() == b.ClusterID() {
			t.Fatalf("cluster ids %q and %q", a.ClusterID(), b.ClusterID())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		topics, err := b.Admin().ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if topics.Has("a") || !topics.Has("b") {
			t.Fatalf("topics of the second cluster: %v", topics.Names())
		}
		a.WaitISR("a", 0, 3, 10*time.Second)
		cl := a.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("1")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		leader := a.Leader("a", 0)
		a.Restart(leader)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("2")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	})
	sharedEtcd.mu.Lock()
	defer sharedEtcd.mu.Unlock()
	if sharedEtcd.etcd != nil || sharedEtcd.users != 0 {
		t.Fatalf("shared etcd still up after its clusters closed (users %d)", sharedEtcd.users)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("shared etcd directory %s left behind: %v", dir, err)
	}
}
