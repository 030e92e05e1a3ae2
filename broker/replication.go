package broker

// The broker's glue to package replication: the Manager's typed
// configuration, resolved here from the broker's, and its collaborators (the
// controller as metadata view and ISR writer, the inter-broker clients, the
// topic configuration over the dynamic defaults).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/quota"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/storage"
)

// newReplicaManager creates the replica manager over the started
// controller.
func (s *Server) newReplicaManager() *replication.Manager {
	return replication.New(replication.ConfigFrom(s.cfg), replication.Deps{
		Metadata:    s.ctrl,
		ISR:         s.ctrl,
		Brokers:     replicaClient{s},
		TopicConfig: s.topicReplicationConfig,
		Logger:      s.logger,
		Now:         s.clock.Now,

		LeaderQuota:       s.leaderQuota,
		AlterLogDirsQuota: s.alterLogDirsQuota,
		FollowerQuota:     s.followerQuota,
	})
}

// newReplicationQuotas creates the replication throttles over
// replication.quota.window.num samples of
// replication.quota.window.size.seconds; the dynamic configs set their
// bounds (setReplicationThrottles).
func (s *Server) newReplicationQuotas() {
	r := s.cfg.Replication
	qc := quota.Config{Samples: int(r.QuotaWindowNum), WindowSeconds: int(r.QuotaWindowSizeSeconds)}
	s.leaderQuota, s.followerQuota = quota.NewReplication(qc), quota.NewReplication(qc)
	s.alterLogDirsQuota = quota.NewReplication(qc)
	s.setReplicationThrottles(s.cfg.Replication)
}

// setReplicationThrottles applies leader.replication.throttled.rate and
// follower.replication.throttled.rate (BrokerConfigHandler's updateQuota).
func (s *Server) setReplicationThrottles(r config.Replication) {
	s.leaderQuota.SetBound(r.LeaderThrottledRate)
	s.followerQuota.SetBound(r.FollowerThrottledRate)
	s.alterLogDirsQuota.SetBound(r.AlterLogDirsIORate)
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
