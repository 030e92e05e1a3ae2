package replication

import (
	"slices"
	"testing"

	"github.com/strait/strait/storage"
)

// TestBecomingLeaderFsyncsNothing: a broker taking over the leadership of
// many partitions records each new leader epoch in memory, without an
// fsync per partition (the leader-epoch-checkpoint is written when the
// recovery point moves, and by Close: storage/leader_epoch.go), so a
// failover's cost does not grow with the partitions a survivor takes
// over. The epochs it then writes survive Close and a power loss right
// after it.
func TestBecomingLeaderFsyncsNothing(t *testing.T) {
	sfs := storage.NewStrictFS(nil)
	cfs := &countFS{FS: sfs}
	e := newEnv(t, func(c *Config) { c.FS = cfs; c.SyncFSMinLogs = 4 }, nil)
	const partitions = 8
	replicas := make([][]int32, partitions)
	for i := range replicas {
		replicas[i] = []int32{2, 1} // led by broker 2, followed here
	}
	e.topic("takeover", replicas...)
	tp, _ := e.meta.Topic("takeover")
	parts := slices.Clone(tp.Partitions)
	all := make([]int32, partitions)
	for i := range parts {
		parts[i].Leader, parts[i].LeaderEpoch, parts[i].ISR = 1, 2, []int32{1}
		all[i] = int32(i)
	}
	tp.Partitions = parts
	cfs.fsyncs.Store(0)
	e.meta.setChanged(tp, all)
	if n := cfs.fsyncs.Load(); n != 0 {
		t.Errorf("becoming the leader of %d partitions made %d fsyncs, want none", partitions, n)
	}
	dirs := make([]string, partitions)
	for i := range partitions {
		p := e.m.Partition("takeover", int32(i))
		if p == nil || !p.IsLeader() || p.LeaderEpoch() != 2 {
			t.Fatalf("takeover-%d: %v, want led here at epoch 2", i, p)
		}
		if epoch, ok := p.Log().LatestEpoch(); !ok || epoch != 2 {
			t.Fatalf("takeover-%d: latest cached epoch %d (%v), want 2", i, epoch, ok)
		}
		produce(t, p, 3+i)
		dirs[i] = p.Log().Dir()
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sfs.Crash(); err != nil {
		t.Fatal(err)
	}
	for i, dir := range dirs {
		l, err := storage.Open(dir, storage.DefaultLogConfig(), storage.Options{})
		if err != nil {
			t.Fatalf("takeover-%d: reopening: %v", i, err)
		}
		epoch, end := l.EndOffsetForEpoch(1)
		latest, ok := l.LatestEpoch()
		l.Close()
		if !ok || latest != 2 || epoch != 1 || end != 0 {
			t.Errorf("takeover-%d after Close and a power loss: latest epoch %d (%v), epoch 1 ends at (%d, %d); want 2, (1, 0)",
				i, latest, ok, epoch, end)
		}
	}
}
