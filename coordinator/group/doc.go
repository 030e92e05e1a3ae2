// Package group is Strait's group coordinator. It owns consumer groups of
// both rebalance protocols and their committed offsets:
//
//   - the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) on
//     Kafka's state machine Empty -> PreparingRebalance -> CompletingRebalance
//     -> Stable (and Dead), with session, rebalance and pending-sync timeouts,
//     group.initial.rebalance.delay.ms, KIP-394's member-id round trip and
//     KIP-345 static membership; any protocol type (consumer, connect, ...);
//   - KIP-848's consumer protocol (ConsumerGroupHeartbeat,
//     ConsumerGroupDescribe): group and member epochs, server-side assignors
//     (uniform, range), revocation before reassignment, subscriptions by topic
//     list or RE2 regex;
//   - KIP-1071's streams groups (StreamsGroupHeartbeat, StreamsGroupDescribe):
//     the application's topology, configured against the cluster's topics
//     (the internal topics it lacks are reported for the broker to create),
//     broker-side task assignment (active and standby tasks, sticky) and the
//     same revoke-before-reassign reconciliation, per task;
//   - mixed groups (mixed.go): classic members inside a consumer-protocol
//     group, with Kafka's online upgrade and downgrade between the two
//     protocols under group.consumer.migration.policy;
//   - committed offsets (OffsetCommit, OffsetFetch, OffsetDelete), their
//     expiry after offsets.retention.minutes, and ListGroups, DescribeGroups,
//     DeleteGroups.
//
// # Placement
//
// A group lives on partition abs(recordbatch.JavaStringHash(groupID)) % N of the
// __consumer_offsets topic (N: the topic's partition count, or
// offsets.topic.num.partitions before it exists), exactly as Kafka hashes, so
// the leader of that partition is the group's coordinator. Each partition is
// a shard of groups; a shard is loaded by replaying its partition the first
// time it is needed (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS) and
// unloaded when this broker stops leading it.
//
// # Records
//
// Every state change is appended to the group's partition as one
// uncompressed magic-v2 record batch (CRC32C), in Kafka's key and value
// schemas, so a Kafka tool reading __consumer_offsets understands them. The
// key's leading int16 version names the record type:
//
//	key v1  OffsetCommitKey{group, topic, partition}
//	        -> OffsetCommitValue v3 (v1 when it carries an expire timestamp);
//	           a null value (tombstone) deletes the offset
//	key v2  GroupMetadataKey{group}
//	        -> GroupMetadataValue v3: a classic group's generation, protocol,
//	           leader and members with subscription and assignment; a
//	           tombstone deletes the group
//	key v3  ConsumerGroupMetadataKey{group} -> the group epoch
//	key v5  ConsumerGroupMemberMetadataKey{group, member} -> a member's
//	        subscription, client, instance and rack ids, rebalance timeout,
//	        and for a classic member its protocols and session timeout
//	        (the tagged ClassicMemberMetadata)
//	key v6  ConsumerGroupTargetAssignmentMetadataKey{group} -> the epoch of
//	        the target assignment
//	key v7  ConsumerGroupTargetAssignmentMemberKey{group, member} -> the
//	        member's target partitions
//	key v8  ConsumerGroupCurrentMemberAssignmentKey{group, member} -> the
//	        member's epoch, previous epoch, state, assigned partitions and
//	        partitions pending revocation
//
//	key v17 StreamsGroupMetadataKey{group} -> the group epoch
//	key v19 StreamsGroupMemberMetadataKey{group, member} -> a member's
//	        process, client, endpoint, client tags, topology epoch
//	key v20 StreamsGroupTargetAssignmentMetadataKey{group} -> target epoch
//	key v21 StreamsGroupTargetAssignmentMemberKey{group, member} -> the
//	        member's target active, standby and warm-up tasks
//	key v22 StreamsGroupCurrentMemberAssignmentKey{group, member} -> epochs,
//	        state, tasks and active tasks pending revocation
//	key v23 StreamsGroupTopologyKey{group} -> the topology
//
// The KIP-848 and streams values are their schemas' flexible version 0; a
// tombstone deletes the key's state.
//
// Offsets committed inside a transaction (TxnOffsetCommit) go in a
// transactional batch carrying the producer's id and epoch; they stay
// pending, invisible to OffsetFetch (UNSTABLE_OFFSET_COMMIT with
// require_stable), until the transaction's commit marker on the partition
// makes them committed offsets (CompleteTransaction, and on replay the
// marker itself); an abort marker drops them.
//
// A KIP-848 (consumer protocol) group writes the records of what a
// heartbeat, leave or timeout changed (consumer_persist.go compares with
// what its records last said) before the change is answered; a leaving
// member's records and a deleted group's get tombstones, in Kafka's order.
// A coordinator loading the partition rebuilds the group from them: the
// members keep their epochs and assignments, their session timers restart
// and the subscribed topics are resolved again without bumping the epoch.
// Key v4 (ConsumerGroupPartitionMetadata, deprecated by Kafka 4.1) is read
// and ignored, never written; nor is Kafka 4.1's MetadataHash or the
// regex resolutions of key 16, which Strait recomputes. Streams groups are
// written and loaded the same way (streams_persist.go); Kafka's tagged
// fields of their values (metadata hash companions, assignment timestamps,
// per-task epochs) are skipped on load. Share group records (types 9 to
// 15) belong to coordinator/share: it appends them through AppendShare, and
// a load hands the latest of each key to Config.ShareLoaded before the
// partition serves requests.
//
// # Concurrency
//
// One mutex per group guards its membership, state, timers and offsets, and
// is held across the append of the group's records so the log and memory
// change in the same order. A shard's mutex guards only its map of groups
// and is never held while a group's is taken (lock order: group, then
// shard). Timers take the group's lock. JoinGroup and SyncGroup answers are
// delivered through callbacks, possibly later and from a timer goroutine.
package group
