package replication

// Replication throttles (Kafka's KIP-73: ReplicationQuotaManager,
// ReplicaManager.shouldLeaderThrottle, ReplicaFetcherThread's
// shouldFollowerThrottle), as kafka-reassign-partitions --throttle sets
// them: a topic's leader.replication.throttled.replicas names the replicas
// ("partition:broker", or "*") whose leader side is throttled on that
// broker, follower.replication.throttled.replicas those whose follower side
// is; the broker's leader.replication.throttled.rate and
// follower.replication.throttled.rate bound the bytes of such partitions,
// measured over the replication quota windows.
//
//   - Leader: the bytes of throttled partitions served to follower fetches
//     count against the leader quota; once it is exceeded, a throttled
//     partition fetched by a replica outside the ISR is answered without
//     records (its bytes do not count towards the fetch's min_bytes either).
//   - Follower: the bytes fetched for throttled partitions count against the
//     follower quota; once it is exceeded, a throttled partition that is not
//     in sync (not caught up to the leader's high watermark at its last
//     fetch) is left out of the next Fetch.
//
// In-sync replicas are never held back, so a throttle never stalls acks=all
// produces. Without throttled replicas the cost is one atomic load per
// partition fetched.

import (
	"slices"

	"github.com/strait/strait/config"
)

// topicThrottles is which of a topic's partitions are throttled on this
// broker, on each side.
type topicThrottles struct {
	leaderAll, followerAll bool
	leader, follower       []int32
}

func throttledOn(configs map[string]string, node int32) topicThrottles {
	var t topicThrottles
	t.leaderAll, t.leader = config.ThrottledPartitions(configs[config.LeaderReplicationThrottledReplicas], node)
	t.followerAll, t.follower = config.ThrottledPartitions(configs[config.FollowerReplicationThrottledReplicas], node)
	return t
}

// settings is partition idx's, with minISR.
func (t topicThrottles) settings(idx, minISR int32) partSettings {
	return partSettings{minISR: minISR,
		leaderThrottled:   t.leaderAll || slices.Contains(t.leader, idx),
		followerThrottled: t.followerAll || slices.Contains(t.follower, idx)}
}

// ShouldLeaderThrottle is ReplicaManager.shouldLeaderThrottle: whether a
// follower fetch by replica gets no records from p now (p is
// leader-throttled here, replica is not in its ISR, and the leader quota is
// exceeded).
func (p *Partition) ShouldLeaderThrottle(replica int32) bool {
	if !p.leaderThrottled.Load() {
		return false
	}
	if st := p.state.Load(); st != nil && slices.Contains(st.ISR, replica) {
		return false
	}
	return p.m.leaderQuota.Exceeded(p.now())
}

// RecordLeaderBytes counts n bytes of p served to a follower against the
// leader quota when p is leader-throttled here (KafkaApis records the size
// of the throttled partitions of every follower fetch response).
func (p *Partition) RecordLeaderBytes(n int64) {
	if n > 0 && p.leaderThrottled.Load() {
		p.m.leaderQuota.Record(n, p.now())
	}
}

// LeaderThrottled reports whether the topic's
// leader.replication.throttled.replicas names this broker's replica of p.
func (p *Partition) LeaderThrottled() bool { return p.leaderThrottled.Load() }

// FollowerThrottled reports whether the topic's
// follower.replication.throttled.replicas names this broker's replica of p.
func (p *Partition) FollowerThrottled() bool { return p.followerThrottled.Load() }
