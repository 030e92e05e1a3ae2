package broker

// The broker's glue to package replication: the Manager's typed
// configuration, resolved here from the broker's, and its collaborators (the
// controller as metadata view and ISR writer, the inter-broker clients, the
// topic configuration over the dynamic defaults).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/replication"
	"github.com/strait/strait/storage"
)

// replicationConfig is the replication settings of cfg. The replica.* keys,
// replica.high.watermark.checkpoint.interval.ms and
// num.recovery.threads.per.data.dir are read here, once.
func (s *Server) replicationConfig(cfg Config) replication.Config {
	num := func(key string, def, min int64) int64 { return s.coordinatorSetting(cfg.Props, key, def, min) }
	ms := func(key string, def, min int64) time.Duration {
		return time.Duration(num(key, def, min)) * time.Millisecond
	}
	return replication.Config{
		NodeID:                            cfg.NodeID,
		LogDirs:                           cfg.LogDirs,
		FS:                                cfg.StorageFS,
		ReplicaLagTimeMax:                 ms("replica.lag.time.max.ms", 30000, 1),
		FetchBackoff:                      ms("replica.fetch.backoff.ms", 1000, 0),
		FetchWaitMaxMs:                    int32(num("replica.fetch.wait.max.ms", 500, 0)),
		FetchMinBytes:                     int32(num("replica.fetch.min.bytes", 1, 0)),
		FetchResponseMaxBytes:             int32(num("replica.fetch.response.max.bytes", 10<<20, 0)),
		FetchMaxBytes:                     int32(num("replica.fetch.max.bytes", 1<<20, 0)),
		HighWatermarkCheckpointInterval:   ms("replica.high.watermark.checkpoint.interval.ms", 5000, 1),
		RecoveryThreadsPerDataDir:         int(num("num.recovery.threads.per.data.dir", 2, 1)),
		RetentionCheckInterval:            time.Duration(cfg.RetentionCheckIntervalMs) * time.Millisecond,
		ProducerIDExpirationCheckInterval: time.Duration(cfg.ProducerIDExpirationCheckIntervalMs) * time.Millisecond,
		LogCleanerEnable:                  cfg.LogCleanerEnable,
		Cleaner:                           cfg.Cleaner,
	}
}

// newReplicaManager creates the replica manager over the started
// controller.
func (s *Server) newReplicaManager() *replication.Manager {
	return replication.New(s.replicationConfig(s.cfg), replication.Deps{
		Metadata:    s.ctrl,
		ISR:         s.ctrl,
		Brokers:     replicaClient{s},
		TopicConfig: s.topicReplicationConfig,
		Logger:      s.logger,
	})
}

// topicReplicationConfig resolves a topic's overrides over the broker's
// current defaults, static and dynamic, so that logs opened or reconfigured
// after a dynamic change get them too; on error it returns the defaults.
func (s *Server) topicReplicationConfig(overrides map[string]string) (storage.LogConfig, int32, error) {
	cur := s.currentConfig()
	logCfg, err := cur.TopicLogConfig(overrides)
	if err != nil {
		return cur.LogDefaults, cur.MinInsyncReplicas, err
	}
	minISR, err := cur.TopicMinInsyncReplicas(overrides)
	if err != nil {
		return cur.LogDefaults, cur.MinInsyncReplicas, err
	}
	return logCfg, minISR, nil
}

// replicaClient sends the replica fetchers' requests through the
// inter-broker clients (interbroker.go).
type replicaClient struct{ s *Server }

func (c replicaClient) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return c.s.sendToBroker(ctx, broker, req)
}
