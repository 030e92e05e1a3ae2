package broker

// AlterReplicaLogDirs (key 34), v1-2 (v0 was removed in Kafka 4): moves
// replicas hosted here to another of this broker's log dirs
// (replication.Manager.MoveReplica: a future log is created in the
// destination and the answer sent; it catches up while the current log
// serves and is swapped in then, as Kafka's ReplicaAlterLogDirsThread;
// DescribeLogDirs shows it meanwhile). Authorized as Kafka: CLUSTER ALTER, else every
// partition is CLUSTER_AUTHORIZATION_FAILED. Per partition, as Kafka's
// ReplicaManager.alterReplicaLogDirs: LOG_DIR_NOT_FOUND for a dir that is
// not one of log.dirs, KAFKA_STORAGE_ERROR for an offline dir or a replica
// whose dir failed (or a move whose copy failed), REPLICA_NOT_AVAILABLE for
// a partition not hosted here (kafka-reassign-partitions retries it until
// the reassignment created the replica).

import (
	"errors"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/replication"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.AlterReplicaLogDirs, 1, 2, handleAlterReplicaLogDirs) }

func handleAlterReplicaLogDirs(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AlterReplicaLogDirsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	authorized := c.authorizeCluster(acl.OpAlter)
	byTopic := map[string]int{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			i, ok := byTopic[t.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[t.Topic] = i
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = p
				if !authorized {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				} else {
					rp.ErrorCode = s.moveReplica(t.Topic, p, d.Dir)
				}
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			}
		}
	}
	x.respond(resp)
}

// moveReplica moves a replica to the log dir named dir (an absolute path, as
// Kafka's tools send; matched against log.dirs made absolute) and returns
// the error code for it.
func (s *Server) moveReplica(topic string, p int32, dir string) int16 {
	target := ""
	want := filepath.Clean(dir)
	for _, d := range s.cfg.Log.Dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		if filepath.Clean(abs) == want || filepath.Clean(d) == want {
			target = d
			break
		}
	}
	if target == "" {
		return kerr.LogDirNotFound.Code
	}
	if t := s.replicas.TopicByName(topic); t == nil || t.Partition(p) == nil {
		if t != nil && s.replicas.OfflineReplica(t.ID(), p) {
			return kerr.KafkaStorageError.Code
		}
		if md, ok := s.ctrl.Topic(topic); ok && s.replicas.OfflineReplica(md.ID, p) {
			return kerr.KafkaStorageError.Code
		}
		if s.replicas.DirOffline(target) {
			return kerr.KafkaStorageError.Code
		}
		return kerr.ReplicaNotAvailable.Code
	}
	err := s.replicas.MoveReplica(topic, p, target)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, replication.ErrLogDirNotFound):
		return kerr.LogDirNotFound.Code
	case errors.Is(err, replication.ErrReplicaNotAvailable):
		return kerr.ReplicaNotAvailable.Code
	default:
		s.logger.Error("moving a replica between log dirs", "topic", topic, "partition", p, "dir", dir, "err", err)
		return kerr.KafkaStorageError.Code
	}
}
