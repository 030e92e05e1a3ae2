package broker

// DescribeLogDirs (key 35); versions: see the registration below (v0 was
// removed in Kafka 4).
//
// Every log directory of log.dirs (by its absolute path) with the partitions
// it holds: all of them for a null topic list, else the requested ones found
// there. A partition's size is what its segments hold (Kafka's log size),
// not the length of their files, which preallocate extends; its offset lag
// max(0, high watermark - log end offset), 0 on a leader. A partition being
// moved by AlterReplicaLogDirs is listed in its destination too, as a future
// replica (IsFuture, KIP-113) whose size is its future log's and whose lag
// is the current log end offset minus the future log's (Kafka's
// getLogEndOffsetLag for a future replica). v4 adds the directory's
// total and usable bytes (statfs: the space an unprivileged writer can still
// use, as Java's FileStore.getUsableSpace). A directory that failed (marked
// offline) or cannot be read is KAFKA_STORAGE_ERROR, without partitions.
// v5 (KIP-1066) says whether the directory is cordoned: named in
// cordoned.log.dirs, or that key is "*". Strait places new replicas without
// regard to it (a difference: DIFFERENCES.md).
// Without CLUSTER DESCRIBE the answer is CLUSTER_AUTHORIZATION_FAILED and no
// directories.

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/replication"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeLogDirs, 1, 5, handleDescribeLogDirs) }

func handleDescribeLogDirs(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeLogDirsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !c.authorizeCluster(acl.OpDescribe) { // authorize.go: no directories, the error (v3+)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		x.respond(resp)
		return
	}

	var wanted map[string][]int32 // nil: every partition
	if req.Topics != nil {
		wanted = make(map[string][]int32, len(req.Topics))
		for _, t := range req.Topics {
			wanted[t.Topic] = append(wanted[t.Topic], t.Partitions...)
		}
	}
	// The hosted partitions by the log directory they live in.
	byDir := make(map[string][]*replication.Partition)
	s.replicas.ForEach(func(p *replication.Partition) {
		if wanted != nil && !slices.Contains(wanted[p.Topic()], p.Index()) {
			return
		}
		dir := filepath.Dir(p.Log().Dir())
		byDir[dir] = append(byDir[dir], p)
	})

	cordoned := cordonedLogDirs(s.currentConfig().Props["cordoned.log.dirs"])
	futures := s.replicas.Futures()
	for _, dir := range s.cfg.Log.Dirs {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.IsCordoned = cordoned("*") || cordoned(filepath.Clean(dir))
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir
		}
		rd.Dir = abs
		var st syscall.Statfs_t
		if s.replicas.DirOffline(dir) {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		if err := syscall.Statfs(dir, &st); err != nil {
			s.logger.Warn("describing log dir", "dir", dir, "err", err)
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		rd.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
		rd.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		parts := byDir[filepath.Clean(dir)]
		slices.SortFunc(parts, func(a, b *replication.Partition) int {
			if a.Topic() != b.Topic() {
				return strings.Compare(a.Topic(), b.Topic())
			}
			return int(a.Index() - b.Index())
		})
		rd.Topics = []kmsg.DescribeLogDirsResponseDirTopic{}
		for _, p := range parts {
			if n := len(rd.Topics); n == 0 || rd.Topics[n-1].Topic != p.Topic() {
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = p.Topic()
				rd.Topics = append(rd.Topics, rt)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = p.Index()
			rp.Size = p.Log().Size()
			rp.OffsetLag = max(p.Log().HighWatermark()-p.Log().LogEndOffset(), 0)
			rt := &rd.Topics[len(rd.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		for _, f := range futures {
			if filepath.Clean(f.Dir) != filepath.Clean(dir) {
				continue
			}
			if wanted != nil && !slices.Contains(wanted[f.Topic], f.Partition) {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.IsFuture, rp.OffsetLag = f.Partition, true, f.Lag
			rp.Size = f.Size
			// With the topic's partitions of this dir, as Kafka groups them.
			i := slices.IndexFunc(rd.Topics, func(t kmsg.DescribeLogDirsResponseDirTopic) bool { return t.Topic == f.Topic })
			if i < 0 {
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = f.Topic
				rd.Topics = append(rd.Topics, rt)
				i = len(rd.Topics) - 1
			}
			rd.Topics[i].Partitions = append(rd.Topics[i].Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	x.respond(resp)
}

// cordonedLogDirs parses cordoned.log.dirs (a comma-separated list of
// log.dirs entries, or "*") into a membership test of cleaned paths.
func cordonedLogDirs(v string) func(dir string) bool {
	set := map[string]bool{}
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); d == "*" {
			set["*"] = true
		} else if d != "" {
			set[filepath.Clean(d)] = true
		}
	}
	return func(dir string) bool { return set[dir] }
}
