package controller

// The embedded etcd as one member of an etcd cluster. Three brokers whose
// embedded members list each other in etcd.initial.cluster form one
// three-member etcd cluster: every broker then reads and writes the same
// metadata through its own member, and the cluster keeps working while a
// majority of members is up (2 of 3). The keys are etcd's own flags with an
// "etcd." prefix and dots for dashes:
//
//	key                               etcd flag                      default
//	etcd.name                         --name                         strait
//	etcd.initial.cluster              --initial-cluster              <name>=<first advertised peer URL>
//	etcd.initial.cluster.state        --initial-cluster-state        new
//	etcd.initial.cluster.token        --initial-cluster-token        strait
//	etcd.listen.peer.urls             --listen-peer-urls             with etcd.initial.cluster: this member's
//	                                                                 URLs in it; without: none (no peers)
//	etcd.initial.advertise.peer.urls  --initial-advertise-peer-urls  this member's URLs in etcd.initial.cluster,
//	                                                                 else etcd.listen.peer.urls, else http://127.0.0.1:0
//	etcd.listen.client.urls           --listen-client-urls           none: no client listener
//	etcd.advertise.client.urls        --advertise-client-urls        etcd.listen.client.urls
//	etcd.heartbeat.interval           --heartbeat-interval           100 ms with peers, 10 ms without
//	etcd.election.timeout             --election-timeout             1000 ms with peers, 50 ms without
//
// As in etcd, the initial-cluster keys only matter when the member's data
// directory is empty: a member that restarts on its data rejoins the cluster
// recorded there. A member added to a running cluster is first announced with
// `etcdctl member add` and started with etcd.initial.cluster.state=existing.
// The broker always talks to its own member in process; a client URL is only
// for tools and for brokers using etcd.endpoints. TLS: etcd_security.go.

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/embed"
)

// Defaults of the etcd.* keys and of the replication settings.
const (
	defaultEtcdClusterToken             = "strait"
	clusterTickMs, clusterElectMs       = 100, 1000 // etcd's defaults, for members on a network
	DefaultLeaderImbalanceCheckInterval = 300 * time.Second
	DefaultLeaderImbalancePercentage    = 10
)

// embeddedMember is the resolved configuration of the embedded etcd member.
type embeddedMember struct {
	name            string
	initialCluster  string
	state           string
	token           string
	listenPeer      []url.URL // empty: no peer listener (a single member for good)
	advertisePeer   []url.URL
	listenClient    []url.URL
	advertiseClient []url.URL
	tickMs, electMs uint
}

// hasPeers reports whether the member can have peers: it listens for them.
func (m embeddedMember) hasPeers() bool { return len(m.listenPeer) > 0 }

// resolveEmbeddedMember validates the etcd.* fields and fills the defaults
// described in the file comment. Errors name the key.
func (cfg Config) resolveEmbeddedMember() (embeddedMember, error) {
	m := embeddedMember{
		name:  cfg.EtcdName,
		state: cfg.EtcdInitialClusterState,
		token: cfg.EtcdInitialClusterToken,
	}
	if m.name == "" {
		m.name = defaultEmbeddedName
	}
	if m.state == "" {
		m.state = embed.ClusterStateFlagNew
	}
	if m.state != embed.ClusterStateFlagNew && m.state != embed.ClusterStateFlagExisting {
		return m, fmt.Errorf("controller: etcd.initial.cluster.state %q must be %q or %q",
			m.state, embed.ClusterStateFlagNew, embed.ClusterStateFlagExisting)
	}
	if m.token == "" {
		m.token = defaultEtcdClusterToken
	}
	var err error
	parse := func(key string, values []string) []url.URL {
		if err != nil || len(values) == 0 {
			return nil
		}
		urls, perr := types.NewURLs(values)
		if perr != nil {
			err = fmt.Errorf("controller: %s: %w", key, perr)
		}
		return urls
	}
	m.listenPeer = parse("etcd.listen.peer.urls", cfg.EtcdListenPeerURLs)
	m.advertisePeer = parse("etcd.initial.advertise.peer.urls", cfg.EtcdInitialAdvertisePeerURLs)
	m.listenClient = parse("etcd.listen.client.urls", cfg.EtcdListenClientURLs)
	m.advertiseClient = parse("etcd.advertise.client.urls", cfg.EtcdAdvertiseClientURLs)
	if err != nil {
		return m, err
	}

	loopback := []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	if cfg.EtcdInitialCluster != "" {
		members, err := types.NewURLsMap(cfg.EtcdInitialCluster)
		if err != nil {
			return m, fmt.Errorf("controller: etcd.initial.cluster: %w", err)
		}
		own, ok := members[m.name]
		if !ok {
			return m, fmt.Errorf("controller: etcd.name %q is not a member of etcd.initial.cluster %q",
				m.name, cfg.EtcdInitialCluster)
		}
		if len(m.advertisePeer) == 0 {
			m.advertisePeer = own
		}
		if len(m.listenPeer) == 0 {
			m.listenPeer = own
		}
		m.initialCluster = members.String()
	} else if m.state == embed.ClusterStateFlagExisting {
		return m, errors.New("controller: etcd.initial.cluster.state=existing needs etcd.initial.cluster")
	}
	if len(m.advertisePeer) == 0 {
		m.advertisePeer = m.listenPeer
	}
	if len(m.advertisePeer) == 0 {
		m.advertisePeer = loopback
	}
	if m.initialCluster == "" {
		m.initialCluster = types.URLsMap{m.name: m.advertisePeer}.String()
	}
	// No client listener unless asked for: the broker talks to its member
	// in process, and a listener is a way into the metadata.
	if len(m.advertiseClient) == 0 {
		m.advertiseClient = m.listenClient
	}
	if len(m.listenClient) == 0 && len(m.advertiseClient) > 0 {
		return m, errors.New("controller: etcd.advertise.client.urls needs etcd.listen.client.urls")
	}
	if err := checkTLSURLs(m.listenClient, "etcd.listen.client.urls", cfg.EtcdSecurity.CertFile != "", "etcd.cert.file"); err != nil {
		return m, err
	}
	if m.hasPeers() {
		if err := checkTLSURLs(m.listenPeer, "etcd.listen.peer.urls", cfg.EtcdSecurity.PeerCertFile != "", "etcd.peer.cert.file"); err != nil {
			return m, err
		}
	} else if cfg.EtcdSecurity.PeerCertFile != "" {
		return m, errors.New("controller: etcd.peer.cert.file needs peer URLs (etcd.initial.cluster or etcd.listen.peer.urls)")
	}

	m.tickMs, m.electMs = embeddedTickMs, embeddedElectMs
	if m.hasPeers() {
		m.tickMs, m.electMs = clusterTickMs, clusterElectMs
	}
	if cfg.EtcdHeartbeatIntervalMs < 0 || cfg.EtcdElectionTimeoutMs < 0 {
		return m, errors.New("controller: etcd.heartbeat.interval and etcd.election.timeout must be positive")
	}
	if cfg.EtcdHeartbeatIntervalMs > 0 {
		m.tickMs = uint(cfg.EtcdHeartbeatIntervalMs)
	}
	if cfg.EtcdElectionTimeoutMs > 0 {
		m.electMs = uint(cfg.EtcdElectionTimeoutMs)
	}
	if 5*m.tickMs > m.electMs {
		return m, fmt.Errorf("controller: etcd.election.timeout (%d ms) must be at least 5 times etcd.heartbeat.interval (%d ms)",
			m.electMs, m.tickMs)
	}
	return m, nil
}

// apply sets the member's fields on an embed.Config.
func (m embeddedMember) apply(cfg *embed.Config) {
	cfg.Name = m.name
	cfg.TickMs, cfg.ElectionMs = m.tickMs, m.electMs
	cfg.ListenPeerUrls = m.listenPeer
	cfg.AdvertisePeerUrls = m.advertisePeer
	cfg.InitialCluster = m.initialCluster
	cfg.ClusterState = m.state
	cfg.InitialClusterToken = m.token
	cfg.ListenClientUrls = m.listenClient
	cfg.AdvertiseClientUrls = m.advertiseClient
}

// checkTLSURLs refuses a mix of TLS settings and URLs of the other kind:
// https:// URLs without a certificate, or a certificate beside http:// URLs
// (which etcd would only warn about, serving in the clear).
func checkTLSURLs(urls []url.URL, urlKey string, haveCert bool, certKey string) error {
	for _, u := range urls {
		switch {
		case u.Scheme == "https" && !haveCert:
			return fmt.Errorf("controller: %s: %s is https but %s is not set", urlKey, u.String(), certKey)
		case u.Scheme != "https" && haveCert:
			return fmt.Errorf("controller: %s is set but %s has %s, not https://", certKey, urlKey, u.String())
		}
	}
	if haveCert && len(urls) == 0 {
		return fmt.Errorf("controller: %s is set but %s is empty (the embedded etcd has no client listener)", certKey, urlKey)
	}
	return nil
}

// replicationDefaults validates and fills the leader-balancing settings.
func (cfg *Config) replicationDefaults() error {
	if cfg.MinInsyncReplicas == 0 {
		cfg.MinInsyncReplicas = 1
	}
	if cfg.MinInsyncReplicas < 0 {
		return errors.New("controller: min.insync.replicas must be positive")
	}
	if cfg.LeaderImbalanceCheckInterval == 0 {
		cfg.LeaderImbalanceCheckInterval = DefaultLeaderImbalanceCheckInterval
	}
	if cfg.LeaderImbalanceCheckInterval < 0 {
		return errors.New("controller: leader.imbalance.check.interval.seconds must be positive")
	}
	if cfg.LeaderImbalancePerBrokerPercentage != nil && *cfg.LeaderImbalancePerBrokerPercentage < 0 {
		return errors.New("controller: leader.imbalance.per.broker.percentage must not be negative")
	}
	return nil
}

// autoLeaderRebalance reports auto.leader.rebalance.enable.
func (cfg Config) autoLeaderRebalance() bool {
	return cfg.AutoLeaderRebalanceEnable == nil || *cfg.AutoLeaderRebalanceEnable
}

// leaderImbalancePercentage reports leader.imbalance.per.broker.percentage.
func (cfg Config) leaderImbalancePercentage() int {
	if cfg.LeaderImbalancePerBrokerPercentage == nil {
		return DefaultLeaderImbalancePercentage
	}
	return *cfg.LeaderImbalancePerBrokerPercentage
}
