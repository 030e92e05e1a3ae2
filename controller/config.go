package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Defaults of the Config fields left zero.
const (
	DefaultPrefix                   = "/strait"
	DefaultLeaseTTLSeconds          = 10
	DefaultNumPartitions            = 1 // num.partitions
	DefaultReplicationFactor        = 1 // default.replication.factor
	defaultEmbeddedName             = "strait"
	maxRecordsPerTopicCreation      = 10000 // Kafka's MAX_RECORDS_PER_USER_OP
	embeddedMaxTxnOps               = maxRecordsPerTopicCreation + 16
	embeddedMaxRequestBytes         = 16 << 20
	clientMaxCallSendMsgSize        = 16 << 20
	externalDialTimeoutMs           = 5000
	embeddedTickMs, embeddedElectMs = 10, 50
)

// Config configures a Controller. Zero fields take the defaults above.
type Config struct {
	NodeID    int32
	Rack      string
	Endpoints []Endpoint // advertised listeners, registered under the lease
	DataDir   string     // embedded etcd's data directory
	// EtcdEndpoints, when set, uses that etcd instead of embedding one (etcd.endpoints).
	EtcdEndpoints []string
	// Prefix namespaces every key (etcd.prefix, default "/strait").
	Prefix string
	// LeaseTTLSeconds is the broker registration lease (default 10).
	LeaseTTLSeconds int64
	Logger          *slog.Logger
	// Now is the wall clock delegation tokens' issue, expiry and sweep
	// times are read on; nil is time.Now.
	Now func() time.Time

	// DefaultNumPartitions replaces a requested partition count of -1 (num.partitions, default 1).
	DefaultNumPartitions int32
	// DefaultReplicationFactor replaces a requested replication factor of -1
	// (default.replication.factor, default 1).
	DefaultReplicationFactor int16

	// The embedded etcd as one member of a multi-member etcd cluster, named
	// after etcd's own flags (see etcd_cluster.go for the defaults). Without
	// EtcdInitialCluster the embedded etcd is a single member with no peer
	// listener, as before.
	EtcdName                     string   // etcd.name (--name), default "strait"
	EtcdInitialCluster           string   // etcd.initial.cluster (--initial-cluster): "name=peerURL,..."
	EtcdInitialClusterState      string   // etcd.initial.cluster.state: "new" (default) or "existing"
	EtcdInitialClusterToken      string   // etcd.initial.cluster.token, default "strait"
	EtcdListenPeerURLs           []string // etcd.listen.peer.urls
	EtcdInitialAdvertisePeerURLs []string // etcd.initial.advertise.peer.urls
	EtcdListenClientURLs         []string // etcd.listen.client.urls, default http://127.0.0.1:0
	EtcdAdvertiseClientURLs      []string // etcd.advertise.client.urls
	EtcdHeartbeatIntervalMs      int      // etcd.heartbeat.interval
	EtcdElectionTimeoutMs        int      // etcd.election.timeout

	// UncleanLeaderElectionEnable is the cluster default of
	// unclean.leader.election.enable (default false); a topic config overrides it.
	UncleanLeaderElectionEnable bool
	// MinInsyncReplicas is the cluster default of min.insync.replicas
	// (default 1); a topic config overrides it. The eligible leader replicas
	// are kept against it.
	MinInsyncReplicas int32
	// AutoLeaderRebalanceEnable is auto.leader.rebalance.enable; nil means
	// Kafka's default, true.
	AutoLeaderRebalanceEnable *bool
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds
	// (default 300 s).
	LeaderImbalanceCheckInterval time.Duration
	// LeaderImbalancePerBrokerPercentage is leader.imbalance.per.broker.percentage;
	// nil means Kafka's default, 10.
	LeaderImbalancePerBrokerPercentage *int

	// DelegationTokens are the delegation.token.* settings (tokens.go).
	DelegationTokens TokenConfig
	// EtcdSecurity is TLS and authentication towards etcd (etcd_security.go).
	EtcdSecurity EtcdSecurity

	member embeddedMember // resolved from the Etcd* fields by withDefaults
}

// withDefaults validates cfg and fills its zero fields.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.NodeID < 0 {
		return cfg, fmt.Errorf("controller: node id %d must be >= 0", cfg.NodeID)
	}
	if len(cfg.EtcdEndpoints) == 0 && cfg.DataDir == "" {
		return cfg, errors.New("controller: a data directory is required for the embedded etcd")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if cfg.LeaseTTLSeconds == 0 {
		cfg.LeaseTTLSeconds = DefaultLeaseTTLSeconds
	}
	if cfg.LeaseTTLSeconds < 1 {
		return cfg, fmt.Errorf("controller: lease TTL %ds must be positive", cfg.LeaseTTLSeconds)
	}
	if cfg.DefaultNumPartitions == 0 {
		cfg.DefaultNumPartitions = DefaultNumPartitions
	}
	if cfg.DefaultReplicationFactor == 0 {
		cfg.DefaultReplicationFactor = DefaultReplicationFactor
	}
	if cfg.DefaultNumPartitions < 1 || cfg.DefaultReplicationFactor < 1 {
		return cfg, errors.New("controller: default partition count and replication factor must be positive")
	}
	if err := cfg.replicationDefaults(); err != nil {
		return cfg, err
	}
	cfg.DelegationTokens.withDefaults()
	if err := cfg.EtcdSecurity.validate(len(cfg.EtcdEndpoints) > 0); err != nil {
		return cfg, err
	}
	if len(cfg.EtcdEndpoints) == 0 {
		member, err := cfg.resolveEmbeddedMember()
		if err != nil {
			return cfg, err
		}
		cfg.member = member
	} else if cfg.EtcdInitialCluster != "" || len(cfg.EtcdListenPeerURLs) > 0 {
		return cfg, errors.New("controller: etcd.endpoints (an external etcd) and etcd.initial.cluster or " +
			"etcd.listen.peer.urls (an embedded member) exclude each other")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = cfg.Logger.With("component", "controller")
	return cfg, nil
}
