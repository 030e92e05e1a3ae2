// Package controller is Strait's control plane: it owns the connection to etcd
// (embedded by default, where Kafka used ZooKeeper or KRaft), the broker registry,
// the election of the active controller, the cluster metadata (topics and
// partition states) and a watch cache of that metadata which every broker reads.
//
// # etcd
//
// Without Config.EtcdEndpoints the controller embeds a single-member etcd whose
// data lives in Config.DataDir. It binds no port at all by default: there is
// no peer listener (a single member has no peers) and no client listener
// unless etcd.listen.client.urls names one, for tools and other processes;
// the controller itself talks to the embedded server in process (v3client).
// With Config.EtcdEndpoints it is a plain etcd client of that cluster. Who
// reaches etcd can change every piece of cluster metadata, SCRAM
// credentials and delegation tokens included, so listeners the embedded
// etcd does open take etcd's TLS settings, and a client of an external etcd
// presents a certificate and a user name (etcd_security.go).
//
// With Config.EtcdInitialCluster (etcd.initial.cluster and the other etcd.*
// keys, named after etcd's flags; see etcd_cluster.go) the embedded etcd is
// one member of a multi-member cluster: three brokers listing each other form
// one three-member etcd, share all metadata and keep working with one member
// lost. Each broker still talks to its own member in process.
//
// # Key layout
//
// Every key lives under Config.Prefix (default "/strait"); values are JSON.
//
//	<prefix>/cluster_id                  the cluster id, created once: Kafka's 22-char base64url UUID
//	<prefix>/brokers/<node id>           {"nodeId","rack","endpoints":[{"name","host","port","securityProtocol"}],
//	                                      "fenced","inControlledShutdown","truncatesOnFetch"}
//	                                     put under the broker's lease (LeaseTTLSeconds, kept alive);
//	                                     its create revision is the broker epoch
//	<prefix>/controller/election/<lease> concurrency.Election candidates, value = node id; the key with
//	                                     the lowest create revision is the active controller
//	<prefix>/topics/<name>               {"name","id" (base64url of the 16-byte topic id),"internal","configs"}
//	<prefix>/partitions/<name>/<p>       {"replicas","leader","leaderEpoch","isr","partitionEpoch",
//	                                      "addingReplicas","removingReplicas"} (the last two while reassigning),
//	                                      "elr","lastKnownElr" (eligible leader replicas, when not empty; elr.go)
//	<prefix>/clean_shutdown/<node id>    the epoch of the broker's registration that ended with Close, until
//	                                     it registers again (no lease; elr.go)
//	<prefix>/producer_ids                the last producer id block handed out (producer_ids.go)
//	<prefix>/features                    {"feature":level,...} the levels UpdateFeatures finalized (features.go)
//	<prefix>/etcd_members/<member id>    the node id of the broker whose embedded etcd member that is
//	                                     (hex member id; no lease; quorum.go)
//	<prefix>/configs/brokers/<node id>   {"key":"value",...} one broker's dynamic configs (topic_configs.go)
//	<prefix>/configs/brokers/<default>   {"key":"value",...} the cluster-wide dynamic defaults
//	<prefix>/configs/groups/<group id>   {"key":"value",...} one group's configs (group_configs.go)
//	<prefix>/scram/<user>/<mechanism>    {"salt","storedKey","serverKey","iterations"} a SCRAM credential
//	                                     (never the password; auth_cache.go, credentials.go)
//	<prefix>/delegation_tokens/<id>      {"tokenId","owner","requester","renewers","issueTimestampMs",
//	                                      "expiryTimestampMs","maxTimestampMs"} a delegation token, without
//	                                     its HMAC, which each broker derives from the secret (tokens.go)
//
// A topic is created by one transaction (if topics/<name> is absent: put it and
// every partitions/<name>/<p>) and deleted by one (delete topics/<name> and the
// partitions/<name>/ range), so a watcher sees a topic appear or vanish whole,
// at one revision.
//
// # Watch cache
//
// Start loads every key under the prefix at one revision and watches from the
// next, applying the events of each watch response together (several
// revisions under a burst of changes) and publishing one snapshot as of its
// last revision. Readers get immutable snapshots through an atomic pointer:
// no lock on the read path. Topic listeners are called on the watch
// goroutine, in revision order, once per changed topic and snapshot, after
// that snapshot is published; a change of partition states names the
// partitions it changed (TopicChange.Partitions). Writes (CreateTopic,
// DeleteTopic) return only after this controller's cache and listeners have
// applied them. A change costs what it touches: topics are kept in a
// sharded persistent map and their names in sorted chunks (topicindex.go),
// so nothing per change grows with the number of topics or partitions that
// did not change.
//
// # Leadership and ISR
//
// Partition states change as in Kafka's controller (PartitionChangeBuilder,
// partition_change.go), each change a compare-and-swap on the partition key
// that also checks the registrations of the brokers it relies on
// (changes.go), so the writers below never overwrite each other:
//
//   - the active controller (active.go) keeps leaders and ISRs consistent
//     with the registered brokers: a broker whose lease expired, or that is in
//     controlled shutdown, loses its leaderships to the next ISR member (leader
//     epoch bumped) and leaves the ISRs; a partition with no live ISR member
//     has leader -1 until one returns (or an unclean election); with
//     auto.leader.rebalance.enable it runs preferred leader elections;
//   - a broker registers fenced, leaves what its previous incarnation held,
//     then unfences (rejoin, broker_lifecycle.go); ControlledShutdown moves
//     its leaderships away before it deregisters;
//   - a leader changes its ISR with AlterPartition (alter_partition.go), which
//     also completes reassignments (reassign.go);
//   - ElectLeaders, AlterPartitionReassignments and CreatePartitions run on
//     the broker that receives the request.
//
// # Lifecycle
//
// New, Start, Err, Close, as etcd's embed: every goroutine of the
// controller (the watch, the session, the campaign, the broker-config
// watches, the embedded member's watcher) starts through its
// background.Group (bg.Go), and Close waits for them. Err reports the
// embedded etcd failing or stopping while the controller runs; the broker
// stops on it.
package controller
