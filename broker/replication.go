package broker

// The broker's glue to package replication: the Manager's typed
// configuration, resolved here from the broker's, and its collaborators (the
// controller as metadata view and ISR writer, the inter-broker clients, the
// topic configuration over the dynamic defaults).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/storage"
)

// replicationConfig is the replication settings of cfg, as package config
// parsed and validated them.
func replicationConfig(cfg config.Config) replication.Config {
	r := cfg.Replication
	return replication.Config{
		NodeID:                            cfg.NodeID,
		LogDirs:                           cfg.Log.Dirs,
		FS:                                cfg.StorageFS,
		ReplicaLagTimeMax:                 r.LagTimeMax,
		FetchBackoff:                      r.FetchBackoff,
		FetchWaitMaxMs:                    int32(r.FetchWaitMax / time.Millisecond),
		FetchMinBytes:                     r.FetchMinBytes,
		FetchResponseMaxBytes:             r.FetchResponseMax,
		FetchMaxBytes:                     r.FetchMaxBytes,
		HighWatermarkCheckpointInterval:   r.HighWatermarkSync,
		RecoveryThreadsPerDataDir:         r.RecoveryThreadsPerDataDir,
		RetentionCheckInterval:            time.Duration(cfg.Log.RetentionCheckIntervalMs) * time.Millisecond,
		ProducerIDExpirationCheckInterval: time.Duration(cfg.Log.ProducerIDExpirationCheckIntervalMs) * time.Millisecond,
		LogCleanerEnable:                  cfg.Log.CleanerEnable,
		Cleaner:                           cfg.Log.Cleaner,
	}
}

// newReplicaManager creates the replica manager over the started
// controller.
func (s *Server) newReplicaManager() *replication.Manager {
	return replication.New(replicationConfig(s.cfg), replication.Deps{
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
		return cur.Log.Defaults, cur.Topics.MinInsyncReplicas, err
	}
	minISR, err := cur.TopicMinInsyncReplicas(overrides)
	if err != nil {
		return cur.Log.Defaults, cur.Topics.MinInsyncReplicas, err
	}
	return logCfg, minISR, nil
}

// replicaClient sends the replica fetchers' requests through the
// inter-broker clients (interbroker.go).
type replicaClient struct{ s *Server }

func (c replicaClient) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return c.s.sendToBroker(ctx, broker, req)
}
