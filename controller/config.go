package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
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

	// DefaultNumPartitions replaces a requested partition count of -1 (num.partitions, default 1).
	DefaultNumPartitions int32
	// DefaultReplicationFactor replaces a requested replication factor of -1
	// (default.replication.factor, default 1).
	DefaultReplicationFactor int16
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("component", "controller")
	return cfg, nil
}
