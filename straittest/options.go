package straittest

import (
	"log/slog"
	"maps"
	"strconv"
)

// Option configures Start and StartCluster.
type Option func(*options)

type options struct {
	config       map[string]string           // every broker
	brokerCfg    map[int32]map[string]string // one broker, over config
	topics       []Topic
	faultyDisks  bool
	powerLoss    bool
	logLevel     slog.Level
	logTo        []slog.Handler
	embeddedEtcd bool
	logDirs      int // log dirs per broker (WithLogDirs); 0: one
}

// Topic is a topic to create once the brokers are up.
type Topic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string // topic configs (cleanup.policy, ...); nil for none
}

// WithConfig sets a broker configuration key (Kafka's name, as in
// server.properties) on every broker, over the test defaults (Defaults).
// Setting the keys the package manages (node.id, listeners, log.dirs,
// etcd.name, etcd.initial.cluster, etcd.listen.peer.urls) is allowed but
// loses what they give: a listener without a fixed port does not keep its
// port across Restart.
func WithConfig(key, value string) Option {
	return func(o *options) { o.config[key] = value }
}

// WithConfigs is WithConfig for each key of kv.
func WithConfigs(kv map[string]string) Option {
	return func(o *options) { maps.Copy(o.config, kv) }
}

// WithBrokerConfig sets a key on broker id only (ids are 1..n), over
// WithConfig: a rack per broker, say.
func WithBrokerConfig(id int32, key, value string) Option {
	return func(o *options) {
		if o.brokerCfg[id] == nil {
			o.brokerCfg[id] = map[string]string{}
		}
		o.brokerCfg[id][key] = value
	}
}

// WithTopic creates a topic once the brokers are up, and waits until every
// broker knows a leader for each of its partitions.
func WithTopic(name string, partitions int32, replicationFactor int16) Option {
	return WithTopics(Topic{Name: name, Partitions: partitions, ReplicationFactor: replicationFactor})
}

// WithTopics creates topics as WithTopic does, with their configs.
func WithTopics(topics ...Topic) Option {
	return func(o *options) { o.topics = append(o.topics, topics...) }
}

// WithLogDirs gives every broker n log dirs (JBOD): logs/, then logs2/ to
// logs<n>/ in its directory (Broker.LogDirs).
func WithLogDirs(n int) Option {
	return func(o *options) { o.logDirs = n }
}

// WithFaultyDisks puts each broker's partition logs on a Disk whose faults
// the test arms (Broker.Disk): full, failing writes or fsyncs, slow.
// Without it the logs go to the operating system's filesystem directly.
func WithFaultyDisks() Option {
	return func(o *options) { o.faultyDisks = true }
}

// WithPowerLossDisks is WithFaultyDisks with a Disk that also remembers
// what was fsynced, so that Cluster.PowerLoss can take a broker down with
// everything it had not made durable (storage.StrictFS has the model). It
// keeps every file's synced content in memory: for tests writing megabytes,
// not gigabytes.
func WithPowerLossDisks() Option {
	return func(o *options) { o.faultyDisks, o.powerLoss = true, true }
}

// WithLogLevel sets the level of the brokers' logs sent to t.Log (default
// slog.LevelInfo; they show only when the test fails or with -v).
func WithLogLevel(l slog.Level) Option {
	return func(o *options) { o.logLevel = l }
}

// WithEmbeddedEtcd gives each broker an embedded etcd member of its own,
// the members of a cluster wired to each other, as in production. By
// default the brokers keep their metadata in one etcd shared by the test
// process's clusters (etcd.endpoints, each cluster under its own
// etcd.prefix), which never fsyncs, starts with the first cluster and
// closes with the last: a broker then starts in a few milliseconds and a
// cluster closes in milliseconds rather than seconds (docs/testing.md has
// the numbers). A test of the embedded etcd itself, or of a member's
// failure, needs this option.
func WithEmbeddedEtcd() Option {
	return func(o *options) { o.embeddedEtcd = true }
}

// WithLogHandler sends the brokers' log records to h as well as to t.Log,
// each at the levels h enables: a test can assert on a log line, or a
// benchmark time the phases of start-up. Each record carries a "broker"
// attribute, the node.id.
func WithLogHandler(h slog.Handler) Option {
	return func(o *options) { o.logTo = append(o.logTo, h) }
}

// Defaults are the broker keys the package sets before the caller's
// WithConfig, for a cluster of n brokers: what a test wants rather than what
// a production broker does.
func Defaults(n int) map[string]string {
	rf := strconv.Itoa(min(n, 3))
	d := map[string]string{
		// A group's first member is answered at once rather than after 3 s.
		"group.initial.rebalance.delay.ms": "0",
		// One partition each for the internal topics rather than 50: they
		// are created on first use, and 50 partitions' logs take time.
		"offsets.topic.num.partitions":             "1",
		"offsets.topic.replication.factor":         rf,
		"transaction.state.log.num.partitions":     "1",
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            strconv.Itoa(min(n, 2)),
		// Let clients pick short group sessions (Kafka's floor is 6 s).
		"group.min.session.timeout.ms": "1000",
		// The registration lease: a broker that stops answering loses its
		// leaderships after 3 s rather than 9 s.
		"broker.session.timeout.ms": "3000",
	}
	if n > 1 {
		// etcd's own timing (100 ms heartbeats, 1 s election) is for a
		// network; on loopback a tenth of it elects the first leader sooner.
		d["etcd.heartbeat.interval"] = "20"
		d["etcd.election.timeout"] = "200"
	}
	return d
}
