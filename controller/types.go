package controller

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Name             string // listener name, e.g. PLAINTEXT
	Host             string
	Port             int32
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
}

// BrokerInfo is a live broker's registration.
//
// Values returned by the controller share their slices with the cache: treat
// them as read-only.
type BrokerInfo struct {
	NodeID    int32
	Rack      string
	Endpoints []Endpoint
	// Epoch is Kafka's broker epoch: the etcd revision that created this
	// registration, so every registration (each start, each re-registration
	// after a lost lease) has a new, higher one.
	Epoch int64
	// Fenced is set while a broker that just registered has not yet taken
	// its previous incarnation out of the ISRs and leaderships (a few
	// milliseconds; Kafka registers brokers fenced too). A fenced broker may
	// neither lead nor join an ISR.
	Fenced bool
	// InControlledShutdown is set by ControlledShutdown: the broker is leaving
	// and may neither lead nor join an ISR (Kafka's inControlledShutdown).
	InControlledShutdown bool
	// TruncatesOnFetch: as a leader, the broker answers a Fetch's
	// last_fetched_epoch with a diverging epoch, so its followers need no
	// OffsetForLeaderEpoch round before fetching (Kafka's truncation on
	// fetch, which Kafka gates by metadata.version). Registrations of
	// Strait versions before it lack it: their followers truncate first.
	TruncatesOnFetch bool
}

// PartitionInfo is the replication state of one partition.
type PartitionInfo struct {
	Partition      int32
	Replicas       []int32
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas are set while a reassignment is in
	// progress (both are already part of Replicas), as in Kafka's
	// PartitionRegistration.
	AddingReplicas   []int32
	RemovingReplicas []int32
	// ELR is the eligible leader replicas (KIP-966): replicas that left the
	// ISR while it was smaller than min.insync.replicas, so they hold every
	// committed record and may lead when the ISR is empty. LastKnownELR holds
	// the last leader once the ISR became empty. Both are nil when empty.
	ELR          []int32
	LastKnownELR []int32
}

// TopicInfo is a topic as the cache knows it.
//
// Values returned by the controller (and passed to listeners) share their
// slices and maps with the cache, which never modifies them after publishing:
// treat them as read-only (copy before changing anything).
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Internal   bool
	Configs    map[string]string // only the topic-level overrides
	Partitions []PartitionInfo   // index == partition number
}

// CreateTopicRequest is one topic of a CreateTopics request.
type CreateTopicRequest struct {
	Name string
	// NumPartitions and ReplicationFactor of -1 mean the cluster defaults
	// (Config.DefaultNumPartitions, Config.DefaultReplicationFactor). With
	// Assignments both must be -1, as in Kafka.
	NumPartitions     int32
	ReplicationFactor int16
	Assignments       map[int32][]int32 // explicit replica assignment, optional
	Configs           map[string]string
	ValidateOnly      bool
	Internal          bool
}

// TopicChange is delivered to listeners in etcd revision order.
type TopicChange struct {
	Topic   TopicInfo
	Deleted bool
	// Partitions are the indexes of the partitions whose state changed
	// since the listener's previous change of this topic (same id), when
	// only partition states changed; nil when anything else may have (a new
	// topic, its configs, a reload): then every partition is to be looked at.
	// Sorted.
	Partitions []int32
}
