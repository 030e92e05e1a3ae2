// Package config owns the broker's configuration: where the properties come
// from (server.properties < KAFKA_* environment < --override, props.go), the
// Kafka key catalog they are checked against (catalog.go, generated from
// Apache Kafka's ConfigDefs, and keys.go), their parsing, once, into a typed
// Config with one struct per concern (listeners, log defaults, replication,
// groups, transactions, fetch sessions, shutdown, etcd), the validation of
// every key Strait acts on with Kafka's message, so that an invalid value
// stops the broker naming the key, the topic-level keys and their validation
// (topics.go), and the layering of static, dynamic and default values behind
// DescribeConfigs and AlterConfigs (layers.go, dynamic.go).
//
// Defaults come from the catalog alone (straitDefaults lists where Strait's
// differ, internalDefaults the few internal Kafka keys the catalog has no
// default for). No other package reads a raw property: they take the typed
// values.
//
// Errors use Kafka's wording, most of them ConfigException's
// "Invalid value <v> for configuration <key>: <reason>".
package config

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/internal/clock"
	"github.com/strait/strait/storage"
)

// minSegmentBytes is log.segment.bytes' and segment.bytes' floor (KIP-1030:
// 1 MiB since Kafka 4.0).
const minSegmentBytes = 1 << 20

// straitDefaults are the defaults of Strait's own keys and of the Kafka keys
// whose default Strait changes; every other default is the catalog's.
var straitDefaults = map[string]string{
	"node.id":        "1",                          // Kafka has none: KRaft needs one set
	"listeners":      "PLAINTEXT://127.0.0.1:9092", // Kafka: PLAINTEXT://:9092
	"log.dir":        "/tmp/strait-logs",           // Kafka: /tmp/kafka-logs
	"etcd.prefix":    "/strait",
	"etcd.endpoints": "", // empty: the embedded etcd

	"strait.max.decompressed.batch.bytes": "0", // no cap
	"strait.fd.reserve":                   "256",
	// Kafka has no such bound: it keeps every segment's .log open, and its
	// operators raise RLIMIT_NOFILE past 100,000. 1,000 keeps a broker with
	// any number of idle partitions under 2,000 descriptors in all (the
	// rest: strait.fd.reserve, connections, etcd); closing and opening a
	// file again costs microseconds, little next to the catch-up read of a
	// sealed segment that needs it (BENCHMARKS.md, idle partitions).
	"strait.log.segment.open.files.max":          "1000",
	"strait.http.listener":                       "", // off
	"strait.share.coordinator.max.state.entries": "2000000",
}

// internalDefaults are Kafka's defaults of the internal keys Strait acts on,
// which the catalog (public keys only) does not list.
var internalDefaults = map[string]string{
	"producer.id.expiration.check.interval.ms": "600000",
}

// defaultValue is key's default: Strait's, else the catalog's, else the
// internal key's; false when it has none.
func defaultValue(key string) (string, bool) {
	if v, ok := straitDefaults[key]; ok {
		return v, true
	}
	if k := brokerCatalogByName[key]; k != nil && k.def != nil {
		return *k.def, true
	}
	v, ok := internalDefaults[key]
	return v, ok
}

// securityProtocols are Kafka's SecurityProtocol names; listener.security.protocol.map
// maps each to itself by default.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// Etcd is where Strait keeps its metadata: an external etcd cluster
// (etcd.endpoints), or the embedded etcd, alone or one member of a cluster of
// brokers' etcd members, as etcd's own flags name it.
type Etcd struct {
	Endpoints                []string     // etcd.endpoints (empty: embedded etcd)
	DataDir                  string       // etcd.data.dir (default: <first log dir>/etcd)
	Prefix                   string       // etcd.prefix (default /strait)
	Name                     string       // etcd.name
	InitialCluster           string       // etcd.initial.cluster: name=peerURL,...
	InitialClusterState      string       // etcd.initial.cluster.state: new or existing
	InitialClusterToken      string       // etcd.initial.cluster.token
	ListenPeerURLs           []string     // etcd.listen.peer.urls
	InitialAdvertisePeerURLs []string     // etcd.initial.advertise.peer.urls
	ListenClientURLs         []string     // etcd.listen.client.urls
	AdvertiseClientURLs      []string     // etcd.advertise.client.urls
	HeartbeatIntervalMs      int          // etcd.heartbeat.interval (0: etcd's)
	ElectionTimeoutMs        int          // etcd.election.timeout (0: etcd's)
	Security                 EtcdSecurity // TLS and authentication (etcd_security.go)
}

// Network is where the broker listens and how clients and other brokers
// reach it.
type Network struct {
	Listeners  []Listener // listeners (default PLAINTEXT://127.0.0.1:9092), without the controller listeners
	Advertised []Listener // advertised.listeners (default: listeners; a port 0 there is replaced by the bound port at start)
	// InterBrokerListenerName is inter.broker.listener.name, else the listener named
	// after security.inter.broker.protocol (PLAINTEXT).
	InterBrokerListenerName string
	// ControllerListenerNames is controller.listener.names. Strait has no KRaft
	// quorum (etcd replaces it), so these listeners are parsed and then left out of
	// Listeners and Advertised: a KRaft combined-mode file still works.
	ControllerListenerNames []string
	SocketRequestMaxBytes   int32 // socket.request.max.bytes (104857600)
}

// Log is the partition logs' place on disk, the broker-level defaults of
// every topic's log (the log.* synonyms of the topic keys), and the
// background work over the logs.
type Log struct {
	Dirs     []string          // log.dirs, else log.dir (Strait default: /tmp/strait-logs, mirroring Kafka's /tmp/kafka-logs)
	Defaults storage.LogConfig // log.segment.bytes, log.retention.*, log.cleanup.policy, ...: every topic's defaults
	// RetentionCheckIntervalMs is log.retention.check.interval.ms (300000).
	RetentionCheckIntervalMs int64
	// FlushOffsetCheckpointIntervalMs and FlushStartOffsetCheckpointIntervalMs
	// are log.flush.offset.checkpoint.interval.ms and
	// log.flush.start.offset.checkpoint.interval.ms (60000 each; 0: only on
	// shutdown and when a log must): how often each log directory's
	// recovery-point and log-start-offset checkpoints are written.
	FlushOffsetCheckpointIntervalMs      int64
	FlushStartOffsetCheckpointIntervalMs int64
	// SegmentOpenFilesMax is strait.log.segment.open.files.max (1000, at
	// least 1): sealed segments' log files kept open while no read uses
	// them; more are closed, least recently used first, and opened again
	// on the next read (storage.FileCache).
	SegmentOpenFilesMax int32
	// CleanerEnable is log.cleaner.enable (true): whether compacted topics
	// are cleaned; Cleaner holds the log.cleaner.* settings.
	CleanerEnable bool
	Cleaner       storage.CleanerConfig
	// ProducerIDExpirationCheckIntervalMs is
	// producer.id.expiration.check.interval.ms (600000): how often idle
	// producers' state is expired.
	ProducerIDExpirationCheckIntervalMs int64
}

// TopicDefaults are the broker keys a topic takes when its creation leaves
// them open (auto-creation, CreateTopics with -1, no override).
type TopicDefaults struct {
	NumPartitions            int32  // num.partitions (1)
	DefaultReplicationFactor int16  // default.replication.factor (1)
	AutoCreateEnable         bool   // auto.create.topics.enable (true)
	MessageMaxBytes          int32  // message.max.bytes (1048588), also Log.Defaults.MaxMessageBytes
	MinInsyncReplicas        int32  // min.insync.replicas (1)
	CompressionType          string // compression.type (producer)
	DeleteTopicEnable        bool   // delete.topic.enable (true): false refuses DeleteTopics
}

// Controller holds the keys of Kafka's names that the active controller
// uses: unclean.leader.election.enable (false), auto.leader.rebalance.enable
// (true) and leader.imbalance.check.interval.seconds (300).
type Controller struct {
	UncleanLeaderElectionEnable         bool
	AutoLeaderRebalanceEnable           bool
	LeaderImbalanceCheckIntervalSeconds int64
}

// Config is the broker's static configuration, every value typed and
// validated. Parse builds it; Default is what an empty server.properties
// gives.
type Config struct {
	NodeID int32  // node.id (default 1); broker.id is accepted as its alias
	Rack   string // broker.rack

	Network    Network       // listeners and how clients and brokers reach them
	Log        Log           // log.dirs and the log.* defaults of every topic
	Topics     TopicDefaults // what topics are created with when a request leaves it open
	Controller Controller    // the active controller's leader-election keys

	Replication   Replication   // replica.*, num.recovery.threads.per.data.dir, broker.session.timeout.ms
	Groups        Groups        // the group coordinator's keys (offsets.*, group.*)
	Transactions  Transactions  // the transaction coordinator's keys (transaction.*)
	FetchSessions FetchSessions // max.incremental.fetch.session.cache.slots
	Shutdown      Shutdown      // controlled.shutdown.enable
	Etcd          Etcd          // etcd.*: Strait's metadata store
	Security      Security      // how each listener authenticates: ssl.*, sasl.*, delegation.token.*
	Quotas        Quotas        // reserved: client quotas
	Limits        Limits        // queued.max.requests, queued.max.request.bytes
	ClientQuotas  ClientQuotas  // quota.window.num, quota.window.size.seconds
	HTTP          HTTP          // strait.http.*: metrics and health probes

	// Props are the properties as given, for DescribeConfigs' layers (see
	// NewLayers); nothing else reads them.
	Props map[string]string

	// Runtime dependencies, set by the embedder, never parsed.
	Logger *slog.Logger // nil = slog.Default()
	// LogLevel, when set, is the level Logger's handler reads: the broker
	// changes it for IncrementalAlterConfigs on BROKER_LOGGER resources.
	// nil: the level cannot be changed at run time.
	LogLevel *slog.LevelVar
	// StorageFS is the filesystem partition logs are written through; nil is
	// the operating system's. Tests inject faults with storage.NewFaultFS.
	StorageFS storage.FS
	// Clock is the time the broker reads (Kafka's Time); nil is the
	// system's. Tests jump it with a *clock.Offset.
	Clock clock.Clock
}

// Default returns the configuration an empty server.properties gives.
func Default() Config {
	c, _, err := Parse(nil)
	if err != nil {
		panic("config: the defaults do not parse: " + err.Error()) // a broken catalog, caught by every test
	}
	return c
}

// ConfigError is an invalid broker configuration. Error returns Kafka's
// message for it; Key is the key at fault.
type ConfigError struct {
	Key     string // the configuration key at fault
	Message string
}

func (e *ConfigError) Error() string { return e.Message }

// invalidValue is Kafka's ConfigException(name, value, message).
func invalidValue(key, value, reason string) *ConfigError {
	return &ConfigError{Key: key, Message: "Invalid value " + value + " for configuration " + key + ": " + reason}
}

// TopicConfigError is a CreateTopics/AlterConfigs config rejected as Kafka rejects
// it: errors.Is(err, kerr.InvalidConfig) holds and Error is Kafka's message, fit
// for the response's error message.
type TopicConfigError struct {
	Err     *kerr.Error
	Key     string
	Message string
}

func (e *TopicConfigError) Error() string { return e.Message }
func (e *TopicConfigError) Unwrap() error { return e.Err }

// configType is ConfigDef.Type: how Kafka parses a value.
type configType uint8

const (
	typeString configType = iota
	typeBoolean
	typeInt
	typeShort
	typeLong
	typeDouble
	typeList
	typeClass
	typePassword
)

// checkType parses raw as Kafka's ConfigDef.parseType would, returning the
// ConfigException Kafka throws for a malformed value. Classes are not loaded.
func checkType(key, raw string, t configType) error {
	s := strings.TrimSpace(raw)
	var err error
	switch t {
	case typeBoolean:
		if !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
			return invalidValue(key, raw, "Expected value to be either true or false")
		}
	case typeInt:
		_, err = strconv.ParseInt(s, 10, 32)
	case typeShort:
		_, err = strconv.ParseInt(s, 10, 16)
	case typeLong:
		_, err = strconv.ParseInt(s, 10, 64)
	case typeDouble:
		_, err = strconv.ParseFloat(s, 64)
	}
	if err != nil {
		return invalidValue(key, raw, "Not a number of type "+typeName(t))
	}
	return nil
}

func typeName(t configType) string {
	return [...]string{"STRING", "BOOLEAN", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}[t]
}

// props reads typed values out of a property map, remembering the first
// error. An absent key takes its default (defaultValue); the types have been
// checked before, so a parse error here is a default's.
type props struct {
	m    map[string]string
	err  error
	used map[string]bool // every key read: the keys Strait acts on (a test checks each is validated)
}

func (p *props) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *props) has(key string) bool { p.use(key); _, ok := p.m[key]; return ok }

func (p *props) use(key string) {
	if p.used != nil {
		p.used[key] = true
	}
}

// raw is key's value as given, else its default ("" without one).
func (p *props) raw(key string) string {
	p.use(key)
	if v, ok := p.m[key]; ok {
		return v
	}
	v, _ := defaultValue(key)
	return v
}

func (p *props) str(key string) string { return strings.TrimSpace(p.raw(key)) }

func (p *props) long(key string) int64 {
	v := p.raw(key)
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		p.fail(invalidValue(key, v, "Not a number of type LONG"))
	}
	return n
}

func (p *props) int(key string) int32 {
	v := p.raw(key)
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		p.fail(invalidValue(key, v, "Not a number of type INT"))
	}
	return int32(n)
}

func (p *props) bool(key string) bool {
	v := p.raw(key)
	if err := checkType(key, v, typeBoolean); err != nil {
		p.fail(err)
	}
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

func (p *props) double(key string) float64 {
	v := p.raw(key)
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		p.fail(invalidValue(key, v, "Not a number of type DOUBLE"))
	}
	return f
}

// atLeast is ConfigDef.Range.atLeast.
func (p *props) atLeast(key string, n, min int64) {
	if n < min {
		p.fail(invalidValue(key, p.raw(key), "Value must be at least "+strconv.FormatInt(min, 10)))
	}
}

// between is ConfigDef.Range.between.
func (p *props) between(key string, n, min, max int64) {
	switch {
	case n < min:
		p.fail(invalidValue(key, p.raw(key), "Value must be at least "+strconv.FormatInt(min, 10)))
	case n > max:
		p.fail(invalidValue(key, p.raw(key), "Value must be no more than "+strconv.FormatInt(max, 10)))
	}
}

// intAtLeast and longAtLeast read a number and check its floor.
func (p *props) intAtLeast(key string, min int64) int32 {
	n := p.int(key)
	p.atLeast(key, int64(n), min)
	return n
}

func (p *props) longAtLeast(key string, min int64) int64 {
	n := p.long(key)
	p.atLeast(key, n, min)
	return n
}

// parseCsvList is Kafka's Csv.parseCsvList: split on commas with surrounding
// whitespace, dropping empty entries.
func parseCsvList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// parseList is ConfigDef's LIST parsing: trimmed, empty = no entries, else split
// on commas with the whitespace around them (empty entries kept).
func parseList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// validIn is ConfigDef.ValidString.in, case-sensitive as Kafka's.
func validIn(key, value string, allowed ...string) error {
	if !slices.Contains(allowed, value) {
		return invalidValue(key, value, "String must be one of: "+strings.Join(allowed, ", "))
	}
	return nil
}
