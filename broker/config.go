package broker

// Broker configuration: server.properties keys, defaults and validation as in
// Apache Kafka 4.x (KafkaConfig, ServerLogConfigs, SocketServerConfigs, LogConfig),
// plus the few keys Strait adds for etcd. Kafka's keys that Strait accepts but does
// not act on are listed in knownBrokerKeys (config_keys.go) so that a stock
// server.properties yields no "unknown config" warnings; their values are still
// type-checked, because Kafka would refuse to start on a malformed one.
//
// Errors use Kafka's wording, most of them ConfigException's
// "Invalid value <v> for configuration <key>: <reason>".

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/storage"
)

// Kafka's defaults (LogConfig, ServerLogConfigs, ServerConfigs, SocketServerConfigs).
const (
	defaultSegmentBytes             = 1 << 30              // log.segment.bytes
	minSegmentBytes                 = 1 << 20              // KIP-1030: 1 MiB floor since 4.0
	defaultSegmentMs                = 7 * 24 * 3600 * 1000 // log.roll.hours=168
	defaultSegmentIndexBytes        = 10 << 20             // log.index.size.max.bytes
	defaultIndexIntervalBytes       = 4096                 // log.index.interval.bytes
	defaultMaxMessageBytes          = 1048588              // message.max.bytes: 1 MiB + LOG_OVERHEAD
	defaultRetentionMs              = 7 * 24 * 3600 * 1000 // log.retention.hours=168
	defaultSocketRequestMaxBytes    = 100 << 20            // socket.request.max.bytes
	defaultTimestampAfterMaxMs      = 3600000              // KIP-1030: one hour since 4.0
	defaultFileDeleteDelayMs        = 60000                // log.segment.delete.delay.ms
	defaultLogDir                   = "/tmp/strait-logs"   // Kafka: /tmp/kafka-logs
	defaultEtcdPrefix               = "/strait"
	defaultListeners                = "PLAINTEXT://127.0.0.1:9092"
	defaultInterBrokerSecurityProto = "PLAINTEXT"
)

// securityProtocols are Kafka's SecurityProtocol names; listener.security.protocol.map
// maps each to itself by default.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// EtcdClusterConfig is the embedded etcd's membership in a cluster of
// brokers' etcd members, as etcd's own flags name it.
type EtcdClusterConfig struct {
	Name                     string   // etcd.name
	InitialCluster           string   // etcd.initial.cluster: name=peerURL,...
	InitialClusterState      string   // etcd.initial.cluster.state: new or existing
	InitialClusterToken      string   // etcd.initial.cluster.token
	ListenPeerURLs           []string // etcd.listen.peer.urls
	InitialAdvertisePeerURLs []string // etcd.initial.advertise.peer.urls
	ListenClientURLs         []string // etcd.listen.client.urls
	AdvertiseClientURLs      []string // etcd.advertise.client.urls
	HeartbeatIntervalMs      int      // etcd.heartbeat.interval
	ElectionTimeoutMs        int      // etcd.election.timeout
}

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	Name             string // listener name, e.g. PLAINTEXT (upper case, as Kafka normalises it)
	Host             string // may be "" (all interfaces) for listeners
	Port             int32  // 0 = pick a free port (tests)
	SecurityProtocol string // from listener.security.protocol.map, default: the name if it is a protocol name
}

// String renders the listener as Kafka writes it: NAME://host:port.
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
}

// Config is the broker's static configuration.
type Config struct {
	NodeID                   int32      // node.id (default 1); broker.id is accepted as its alias
	Listeners                []Listener // listeners (default PLAINTEXT://127.0.0.1:9092), without the controller listeners
	AdvertisedListeners      []Listener // advertised.listeners (default: listeners; a port 0 there is replaced by the bound port at start)
	LogDirs                  []string   // log.dirs, else log.dir (Strait default: /tmp/strait-logs, mirroring Kafka's /tmp/kafka-logs)
	NumPartitions            int32      // num.partitions (1)
	DefaultReplicationFactor int16      // default.replication.factor (1)
	AutoCreateTopicsEnable   bool       // auto.create.topics.enable (true)
	MessageMaxBytes          int32      // message.max.bytes (1048588)
	SocketRequestMaxBytes    int32      // socket.request.max.bytes (104857600)
	Rack                     string     // broker.rack
	EtcdEndpoints            []string   // etcd.endpoints (empty: embedded etcd)
	EtcdDataDir              string     // etcd.data.dir (default: <first log dir>/etcd)
	EtcdPrefix               string     // etcd.prefix (default /strait)
	// EtcdCluster makes the embedded etcd one member of a cluster
	// (etcd.name, etcd.initial.cluster, etcd.*.urls, ...); zero values
	// keep the single-member default.
	EtcdCluster EtcdClusterConfig
	LogDefaults storage.LogConfig // broker-level log.* defaults for every topic
	Logger      *slog.Logger      // nil = slog.Default()
	Props       map[string]string // the effective properties as given (for DescribeConfigs later)

	// InterBrokerListenerName is inter.broker.listener.name, else the listener named
	// after security.inter.broker.protocol (PLAINTEXT).
	InterBrokerListenerName string
	// ControllerListenerNames is controller.listener.names. Strait has no KRaft
	// quorum (etcd replaces it), so these listeners are parsed and then left out of
	// Listeners and AdvertisedListeners: a KRaft combined-mode file still works.
	ControllerListenerNames []string
	MinInsyncReplicas       int32  // min.insync.replicas (1)
	CompressionType         string // compression.type (producer)
	// MessageTimestampBeforeMaxMs and MessageTimestampAfterMaxMs are
	// log.message.timestamp.before/after.max.ms, also copied into LogDefaults.
	MessageTimestampBeforeMaxMs int64
	MessageTimestampAfterMaxMs  int64
	// UncleanLeaderElectionEnable, AutoLeaderRebalanceEnable and
	// LeaderImbalanceCheckIntervalSeconds are Kafka's keys of the same names
	// (false, true, 300), used by the active controller.
	UncleanLeaderElectionEnable         bool
	AutoLeaderRebalanceEnable           bool
	LeaderImbalanceCheckIntervalSeconds int64
	// RetentionCheckIntervalMs is log.retention.check.interval.ms (300000).
	RetentionCheckIntervalMs int64
	// LogCleanerEnable is log.cleaner.enable (true): whether compacted
	// topics are cleaned; Cleaner holds the log.cleaner.* settings.
	LogCleanerEnable bool
	Cleaner          storage.CleanerConfig
	// ProducerIDExpirationCheckIntervalMs is
	// producer.id.expiration.check.interval.ms (600000): how often idle
	// producers' state is expired.
	ProducerIDExpirationCheckIntervalMs int64
	// StorageFS is the filesystem partition logs are written through; nil is
	// the operating system's. Tests inject faults with storage.NewFaultFS.
	StorageFS storage.FS
}

// DefaultConfig returns the configuration an empty server.properties gives.
func DefaultConfig() Config {
	l := Listener{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}
	return Config{
		NodeID:                   1,
		Listeners:                []Listener{l},
		AdvertisedListeners:      []Listener{l},
		LogDirs:                  []string{defaultLogDir},
		NumPartitions:            1,
		DefaultReplicationFactor: 1,
		AutoCreateTopicsEnable:   true,
		MessageMaxBytes:          defaultMaxMessageBytes,
		SocketRequestMaxBytes:    defaultSocketRequestMaxBytes,
		EtcdDataDir:              defaultLogDir + "/etcd",
		EtcdPrefix:               defaultEtcdPrefix,
		LogDefaults:              defaultLogConfig(),
		Props:                    map[string]string{},
		InterBrokerListenerName:  "PLAINTEXT",
		MinInsyncReplicas:        1,
		CompressionType:          "producer",

		MessageTimestampBeforeMaxMs: math.MaxInt64,
		MessageTimestampAfterMaxMs:  defaultTimestampAfterMaxMs,
		RetentionCheckIntervalMs:    300000,

		ProducerIDExpirationCheckIntervalMs: 600000,
		AutoLeaderRebalanceEnable:           true,
		LeaderImbalanceCheckIntervalSeconds: 300,
		LogCleanerEnable:                    true,
		Cleaner:                             storage.DefaultCleanerConfig(),
	}
}

// defaultLogConfig is Kafka's LogConfig defaults, as storage defines them.
func defaultLogConfig() storage.LogConfig { return storage.DefaultLogConfig() }

// ConfigError is an invalid broker or topic configuration. Error returns Kafka's
// message for it.
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

// props reads typed values out of a property map, remembering the first error.
// Absent keys yield the given default.
type props struct {
	m   map[string]string
	err error
}

func (p *props) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *props) has(key string) bool { _, ok := p.m[key]; return ok }

func (p *props) str(key, def string) string {
	v, ok := p.m[key]
	if !ok {
		return def
	}
	return strings.TrimSpace(v)
}

func (p *props) long(key string, def int64) int64 {
	v, ok := p.m[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		p.fail(invalidValue(key, v, "Not a number of type LONG"))
		return def
	}
	return n
}

func (p *props) int(key string, def int32) int32 {
	v, ok := p.m[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		p.fail(invalidValue(key, v, "Not a number of type INT"))
		return def
	}
	return int32(n)
}

func (p *props) bool(key string, def bool) bool {
	v, ok := p.m[key]
	if !ok {
		return def
	}
	if err := checkType(key, v, typeBoolean); err != nil {
		p.fail(err)
		return def
	}
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// atLeast is ConfigDef.Range.atLeast.
func (p *props) double(key string, def float64) float64 {
	raw, ok := p.m[key]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil {
		p.fail(invalidValue(key, raw, "Not a number of type DOUBLE"))
		return def
	}
	return f
}

func (p *props) atLeast(key string, n, min int64) {
	if n < min && p.has(key) {
		p.fail(invalidValue(key, p.m[key], "Value must be at least "+strconv.FormatInt(min, 10)))
	}
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

// ParseConfig turns properties into a Config. Unknown keys produce warnings
// (returned, sorted), not errors; invalid values produce an error naming the key
// and the value in Kafka's words, e.g.
// "Invalid value abc for configuration num.partitions: Not a number of type INT".
func ParseConfig(in map[string]string) (Config, []string, error) {
	c := DefaultConfig()
	c.Props = maps.Clone(in)
	if c.Props == nil {
		c.Props = map[string]string{}
	}
	p := &props{m: c.Props}

	var warnings []string
	for _, key := range slices.Sorted(maps.Keys(p.m)) {
		t, known := knownBrokerKeys[key]
		if !known {
			t, known = straitKeys[key]
		}
		if !known && strings.HasPrefix(key, "listener.name.") {
			continue // per-listener overrides, e.g. listener.name.internal.ssl.keystore.location
		}
		if !known {
			warnings = append(warnings, "The configuration '"+key+"' was supplied but isn't a known config.")
			continue
		}
		if err := checkType(key, p.m[key], t); err != nil {
			return Config{}, warnings, err
		}
	}

	// node.id, with broker.id as its alias (KafkaConfig.populateSynonyms).
	c.NodeID = p.int("node.id", 1)
	if p.has("broker.id") {
		brokerID := p.int("broker.id", 0)
		if !p.has("node.id") {
			c.NodeID = brokerID
		} else if brokerID != c.NodeID && p.err == nil {
			return Config{}, warnings, &ConfigError{Key: "node.id", Message: "You must set `node.id` to the same value as `broker.id`."}
		}
	}
	if c.NodeID < 0 && p.err == nil {
		key := "node.id"
		if !p.has(key) {
			key = "broker.id"
		}
		p.fail(invalidValue(key, p.m[key], "Value must be at least 0"))
	}

	c.NumPartitions = p.int("num.partitions", 1)
	p.atLeast("num.partitions", int64(c.NumPartitions), 1)
	rf := p.int("default.replication.factor", 1)
	if rf < 1 || rf > math.MaxInt16 {
		// Kafka's key has no validator, but CreateTopics then fails for every topic
		// relying on it; refuse at start instead.
		p.fail(invalidValue("default.replication.factor", p.m["default.replication.factor"],
			"Value must be at least 1 and no more than 32767"))
	}
	c.DefaultReplicationFactor = int16(rf)
	c.AutoCreateTopicsEnable = p.bool("auto.create.topics.enable", true)
	c.MessageMaxBytes = p.int("message.max.bytes", defaultMaxMessageBytes)
	c.RetentionCheckIntervalMs = p.long("log.retention.check.interval.ms", 300000)
	p.atLeast("log.retention.check.interval.ms", c.RetentionCheckIntervalMs, 1)
	p.atLeast("message.max.bytes", int64(c.MessageMaxBytes), 0)
	c.SocketRequestMaxBytes = p.int("socket.request.max.bytes", defaultSocketRequestMaxBytes)
	p.atLeast("socket.request.max.bytes", int64(c.SocketRequestMaxBytes), 1)
	// Read where the fetch session cache is made (fetchsession.go).
	p.atLeast("max.incremental.fetch.session.cache.slots", int64(p.int("max.incremental.fetch.session.cache.slots", defaultFetchSessionSlots)), 0)
	c.Rack = p.str("broker.rack", "")
	c.MinInsyncReplicas = p.int("min.insync.replicas", 1)
	p.atLeast("min.insync.replicas", int64(c.MinInsyncReplicas), 1)
	c.CompressionType = p.str("compression.type", "producer")
	if p.has("compression.type") {
		if err := validIn("compression.type", c.CompressionType, compressionTypes...); err != nil {
			p.fail(err)
		}
	}
	if p.err != nil {
		return Config{}, warnings, p.err
	}

	if err := c.parseListeners(p); err != nil {
		return Config{}, warnings, err
	}

	// log.dirs, else log.dir (KafkaConfig.logDirs).
	dirs := parseCsvList(p.str("log.dir", defaultLogDir))
	if p.has("log.dirs") {
		dirs = parseCsvList(p.str("log.dirs", ""))
	}
	if len(dirs) == 0 {
		return Config{}, warnings, &ConfigError{Key: "log.dirs", Message: "At least one log directory must be defined via log.dirs or log.dir."}
	}
	c.LogDirs = dirs

	c.EtcdEndpoints = parseCsvList(p.str("etcd.endpoints", ""))
	c.EtcdDataDir = p.str("etcd.data.dir", strings.TrimRight(dirs[0], "/")+"/etcd")
	if c.EtcdDataDir == "" {
		return Config{}, warnings, invalidValue("etcd.data.dir", p.m["etcd.data.dir"], "String must be non-empty")
	}
	c.EtcdCluster = EtcdClusterConfig{
		Name:                     p.str("etcd.name", ""),
		InitialCluster:           p.str("etcd.initial.cluster", ""),
		InitialClusterState:      p.str("etcd.initial.cluster.state", ""),
		InitialClusterToken:      p.str("etcd.initial.cluster.token", ""),
		ListenPeerURLs:           parseCsvList(p.str("etcd.listen.peer.urls", "")),
		InitialAdvertisePeerURLs: parseCsvList(p.str("etcd.initial.advertise.peer.urls", "")),
		ListenClientURLs:         parseCsvList(p.str("etcd.listen.client.urls", "")),
		AdvertiseClientURLs:      parseCsvList(p.str("etcd.advertise.client.urls", "")),
		HeartbeatIntervalMs:      int(p.int("etcd.heartbeat.interval", 0)),
		ElectionTimeoutMs:        int(p.int("etcd.election.timeout", 0)),
	}
	if st := c.EtcdCluster.InitialClusterState; st != "" && st != "new" && st != "existing" {
		return Config{}, warnings, invalidValue("etcd.initial.cluster.state", st, "String must be one of: new, existing")
	}
	c.UncleanLeaderElectionEnable = p.bool("unclean.leader.election.enable", false)
	c.AutoLeaderRebalanceEnable = p.bool("auto.leader.rebalance.enable", true)
	c.LeaderImbalanceCheckIntervalSeconds = p.long("leader.imbalance.check.interval.seconds", 300)
	p.atLeast("leader.imbalance.check.interval.seconds", c.LeaderImbalanceCheckIntervalSeconds, 1)
	c.EtcdPrefix = p.str("etcd.prefix", defaultEtcdPrefix)
	if !strings.HasPrefix(c.EtcdPrefix, "/") {
		return Config{}, warnings, invalidValue("etcd.prefix", p.m["etcd.prefix"], "Value must start with /")
	}

	if err := c.parseLogDefaults(p); err != nil {
		return Config{}, warnings, err
	}
	return c, warnings, nil
}

// parseLogDefaults reads the broker-level synonyms of the topic configs
// (ServerTopicConfigSynonyms), with Kafka's precedence among them.
func (c *Config) parseLogDefaults(p *props) error {
	ld := defaultLogConfig()

	ld.SegmentBytes = int64(p.int("log.segment.bytes", defaultSegmentBytes))
	p.atLeast("log.segment.bytes", ld.SegmentBytes, minSegmentBytes)

	rollHours := p.int("log.roll.hours", 168)
	p.atLeast("log.roll.hours", int64(rollHours), 1)
	ld.SegmentMs = int64(rollHours) * 3600 * 1000
	if p.has("log.roll.ms") {
		ld.SegmentMs = p.long("log.roll.ms", 0)
		if ld.SegmentMs < 1 && p.err == nil {
			return &ConfigError{Key: "log.roll.ms", Message: "log.roll.ms must be greater than or equal to 1"}
		}
	}

	ld.SegmentIndexBytes = p.int("log.index.size.max.bytes", defaultSegmentIndexBytes)
	p.atLeast("log.index.size.max.bytes", int64(ld.SegmentIndexBytes), 4)
	ld.IndexIntervalBytes = p.int("log.index.interval.bytes", defaultIndexIntervalBytes)
	p.atLeast("log.index.interval.bytes", int64(ld.IndexIntervalBytes), 0)
	ld.MaxMessageBytes = c.MessageMaxBytes
	ld.ProducerIDExpirationMs = int64(p.int("producer.id.expiration.ms", 86400000))
	p.atLeast("producer.id.expiration.ms", ld.ProducerIDExpirationMs, 1)
	c.ProducerIDExpirationCheckIntervalMs = int64(p.int("producer.id.expiration.check.interval.ms", 600000))
	p.atLeast("producer.id.expiration.check.interval.ms", c.ProducerIDExpirationCheckIntervalMs, 1)

	switch ts := p.str("log.message.timestamp.type", "CreateTime"); ts {
	case "CreateTime":
		ld.TimestampType = storage.CreateTime
	case "LogAppendTime":
		ld.TimestampType = storage.LogAppendTime
	default:
		p.fail(validIn("log.message.timestamp.type", ts, "CreateTime", "LogAppendTime"))
	}

	// log.retention.ms > log.retention.minutes > log.retention.hours; any negative
	// value means infinite (KafkaConfig.logRetentionTimeMillis).
	switch {
	case p.has("log.retention.ms"):
		ld.RetentionMs = p.long("log.retention.ms", 0)
	case p.has("log.retention.minutes"):
		ld.RetentionMs = int64(p.int("log.retention.minutes", 0)) * 60 * 1000
	default:
		ld.RetentionMs = int64(p.int("log.retention.hours", 168)) * 3600 * 1000
	}
	if ld.RetentionMs < 0 {
		ld.RetentionMs = -1
	}
	if ld.RetentionMs == 0 && p.err == nil {
		return &ConfigError{Key: "log.retention.ms", Message: "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"}
	}
	ld.RetentionBytes = p.long("log.retention.bytes", -1)

	ld.FlushMessages = p.long("log.flush.interval.messages", math.MaxInt64)
	p.atLeast("log.flush.interval.messages", ld.FlushMessages, 1)
	// flush.ms synonyms: log.flush.interval.ms, else log.flush.scheduler.interval.ms.
	ld.FlushMs = p.long("log.flush.scheduler.interval.ms", math.MaxInt64)
	if p.has("log.flush.interval.ms") {
		ld.FlushMs = p.long("log.flush.interval.ms", math.MaxInt64)
	}

	ld.Compact, ld.Delete = false, false
	for _, policy := range parseList(p.str("log.cleanup.policy", "delete")) {
		if err := validIn("log.cleanup.policy", policy, "compact", "delete"); err != nil {
			p.fail(err)
		}
		ld.Compact = ld.Compact || policy == "compact"
		ld.Delete = ld.Delete || policy == "delete"
	}
	ld.MinCleanableDirtyRatio = p.double("log.cleaner.min.cleanable.ratio", ld.MinCleanableDirtyRatio)
	if r := ld.MinCleanableDirtyRatio; r < 0 || r > 1 {
		p.fail(invalidValue("log.cleaner.min.cleanable.ratio", fmt.Sprint(r), "Value must be no less than 0.0 and no more than 1.0"))
	}
	ld.MinCompactionLagMs = p.long("log.cleaner.min.compaction.lag.ms", ld.MinCompactionLagMs)
	p.atLeast("log.cleaner.min.compaction.lag.ms", ld.MinCompactionLagMs, 0)
	ld.MaxCompactionLagMs = p.long("log.cleaner.max.compaction.lag.ms", ld.MaxCompactionLagMs)
	p.atLeast("log.cleaner.max.compaction.lag.ms", ld.MaxCompactionLagMs, 1)
	ld.DeleteRetentionMs = p.long("log.cleaner.delete.retention.ms", ld.DeleteRetentionMs)
	p.atLeast("log.cleaner.delete.retention.ms", ld.DeleteRetentionMs, 0)

	c.LogCleanerEnable = p.bool("log.cleaner.enable", true)
	cc := storage.DefaultCleanerConfig()
	cc.Threads = int(p.int("log.cleaner.threads", int32(cc.Threads)))
	p.atLeast("log.cleaner.threads", int64(cc.Threads), 0)
	cc.DedupeBufferSize = p.long("log.cleaner.dedupe.buffer.size", cc.DedupeBufferSize)
	cc.DedupeBufferLoadFactor = p.double("log.cleaner.io.buffer.load.factor", cc.DedupeBufferLoadFactor)
	cc.IOBufferSize = int(p.int("log.cleaner.io.buffer.size", int32(cc.IOBufferSize)))
	p.atLeast("log.cleaner.io.buffer.size", int64(cc.IOBufferSize), 0)
	cc.BackoffMs = p.long("log.cleaner.backoff.ms", cc.BackoffMs)
	p.atLeast("log.cleaner.backoff.ms", cc.BackoffMs, 0)
	c.Cleaner = cc

	c.MessageTimestampBeforeMaxMs = p.long("log.message.timestamp.before.max.ms", math.MaxInt64)
	p.atLeast("log.message.timestamp.before.max.ms", c.MessageTimestampBeforeMaxMs, 0)
	c.MessageTimestampAfterMaxMs = p.long("log.message.timestamp.after.max.ms", defaultTimestampAfterMaxMs)
	p.atLeast("log.message.timestamp.after.max.ms", c.MessageTimestampAfterMaxMs, 0)
	ld.TimestampBeforeMaxMs = c.MessageTimestampBeforeMaxMs
	ld.TimestampAfterMaxMs = c.MessageTimestampAfterMaxMs
	ld.FileDeleteDelayMs = p.long("log.segment.delete.delay.ms", defaultFileDeleteDelayMs)
	p.atLeast("log.segment.delete.delay.ms", ld.FileDeleteDelayMs, 0)

	if p.err != nil {
		return p.err
	}
	c.LogDefaults = ld
	return nil
}

// listenerPattern is SocketServerConfigs.URI_PARSE_REGEXP, anchored as matches() is.
var listenerPattern = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// parseListeners fills Listeners, AdvertisedListeners, InterBrokerListenerName and
// ControllerListenerNames, validating them as KafkaConfig does.
func (c *Config) parseListeners(p *props) error {
	c.ControllerListenerNames = nil
	for _, n := range strings.Split(p.str("controller.listener.names", ""), ",") {
		if n = strings.TrimSpace(n); n != "" {
			c.ControllerListenerNames = append(c.ControllerListenerNames, n)
		}
	}
	isController := func(name string) bool { return slices.Contains(c.ControllerListenerNames, name) }

	// listener.security.protocol.map (KafkaConfig.effectiveListenerSecurityProtocolMap).
	protoMap := map[string]string{}
	for _, sp := range securityProtocols {
		protoMap[sp] = sp
	}
	listenersRaw := p.str("listeners", defaultListeners)
	if p.has("listener.security.protocol.map") {
		m, err := parseProtocolMap(p.m["listener.security.protocol.map"])
		if err != nil {
			return err
		}
		protoMap = m
	} else {
		// KRaft adds PLAINTEXT for controller listener names when nothing uses
		// SSL or SASL and no map was given.
		sslOrSasl := func(n string) bool { return n == "SSL" || n == "SASL_SSL" || n == "SASL_PLAINTEXT" }
		usesSecure := slices.ContainsFunc(c.ControllerListenerNames, sslOrSasl)
		for _, e := range parseCsvList(listenersRaw) {
			if name, _, ok := strings.Cut(e, "://"); ok && sslOrSasl(name) {
				usesSecure = true
			}
		}
		if !usesSecure {
			for _, n := range c.ControllerListenerNames {
				protoMap[strings.ToUpper(n)] = "PLAINTEXT"
			}
		}
	}

	all, err := parseListenerList("listeners", listenersRaw, protoMap, true)
	if err != nil {
		return err
	}
	var names []string
	c.Listeners = nil
	for _, l := range all {
		names = append(names, l.Name)
		if !isController(l.Name) {
			c.Listeners = append(c.Listeners, l)
		}
	}
	if len(c.Listeners) == 0 {
		return invalidValue("listeners", p.m["listeners"], "There must be at least one broker listener (one not in controller.listener.names)")
	}

	if p.has("advertised.listeners") {
		adv, err := parseListenerList("advertised.listeners", p.str("advertised.listeners", ""), protoMap, false)
		if err != nil {
			return err
		}
		c.AdvertisedListeners = nil
		for _, l := range adv {
			if !isController(l.Name) {
				c.AdvertisedListeners = append(c.AdvertisedListeners, l)
			}
		}
	} else {
		c.AdvertisedListeners = slices.Clone(c.Listeners)
	}
	var advNames []string
	for _, l := range c.AdvertisedListeners {
		advNames = append(advNames, l.Name)
	}
	if len(advNames) == 0 {
		return &ConfigError{Key: "advertised.listeners", Message: "There must be at least one advertised listener. Perhaps all listeners appear in controller.listener.names?"}
	}

	// inter.broker.listener.name or security.inter.broker.protocol.
	if p.has("inter.broker.listener.name") {
		if p.has("security.inter.broker.protocol") {
			return &ConfigError{Key: "inter.broker.listener.name", Message: "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."}
		}
		name := strings.ToUpper(p.str("inter.broker.listener.name", ""))
		if _, ok := protoMap[name]; !ok {
			return &ConfigError{Key: "inter.broker.listener.name", Message: "Listener with name " + name +
				" defined in inter.broker.listener.name not found in listener.security.protocol.map."}
		}
		c.InterBrokerListenerName = name
	} else {
		proto := p.str("security.inter.broker.protocol", defaultInterBrokerSecurityProto)
		if !slices.Contains(securityProtocols, strings.ToUpper(proto)) {
			return &ConfigError{Key: "security.inter.broker.protocol", Message: "Invalid security protocol `" + proto + "` defined in security.inter.broker.protocol"}
		}
		c.InterBrokerListenerName = strings.ToUpper(proto)
	}
	if !slices.Contains(advNames, c.InterBrokerListenerName) {
		return &ConfigError{Key: "inter.broker.listener.name", Message: "inter.broker.listener.name must be a listener name defined in advertised.listeners. " +
			"The valid options based on currently configured listeners are " + strings.Join(advNames, ",")}
	}
	for _, n := range advNames {
		if !slices.Contains(names, n) {
			return &ConfigError{Key: "advertised.listeners", Message: "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. " +
				"Found " + strings.Join(advNames, ",") + ". The valid options based on the current configuration are " + strings.Join(names, ",")}
		}
	}
	for _, l := range c.AdvertisedListeners {
		if l.Host == "0.0.0.0" {
			return &ConfigError{Key: "advertised.listeners", Message: "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."}
		}
	}
	return nil
}

// parseProtocolMap parses listener.security.protocol.map (Csv.parseCsvMap: the
// last ':' of an entry splits name from protocol).
func parseProtocolMap(raw string) (map[string]string, error) {
	const key = "listener.security.protocol.map"
	m := map[string]string{}
	for _, e := range strings.Split(strings.TrimSpace(raw), ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndexByte(e, ':')
		if i < 0 {
			return nil, &ConfigError{Key: key, Message: "Error parsing configuration property '" + key + "': entry " + e + " is not of the form NAME:PROTOCOL"}
		}
		name, proto := strings.TrimSpace(e[:i]), strings.TrimSpace(e[i+1:])
		if !slices.Contains(securityProtocols, strings.ToUpper(proto)) {
			return nil, &ConfigError{Key: key, Message: "Invalid security protocol `" + proto + "` defined in " + key}
		}
		m[strings.ToUpper(name)] = strings.ToUpper(proto)
	}
	return m, nil
}

// parseListenerList is CoreUtils.listenerListToEndPoints: NAME://host:port
// entries, names normalised to upper case, unique names, and (for listeners)
// unique non-zero ports unless exactly one IPv4 and one IPv6 address share one.
func parseListenerList(key, raw string, protoMap map[string]string, requireDistinctPorts bool) ([]Listener, error) {
	var out []Listener
	for _, e := range parseCsvList(raw) {
		m := listenerPattern.FindStringSubmatch(e)
		if m == nil {
			return nil, invalidValue(key, raw, "Unable to parse "+e+" to a broker endpoint")
		}
		port, err := strconv.ParseInt(m[3], 10, 32)
		if err != nil || port < 0 || port > 65535 {
			return nil, invalidValue(key, raw, "Invalid port "+m[3]+" in "+e)
		}
		name := strings.ToUpper(m[1])
		proto, ok := protoMap[name]
		if !ok {
			return nil, invalidValue(key, raw, "No security protocol defined for listener "+name)
		}
		out = append(out, Listener{Name: name, Host: m[2], Port: int32(port), SecurityProtocol: proto})
	}
	seen := map[string]bool{}
	for _, l := range out {
		if seen[l.Name] {
			return nil, invalidValue(key, raw, "Each listener must have a different name, listeners: "+raw)
		}
		seen[l.Name] = true
	}
	if !requireDistinctPorts {
		return out, nil
	}
	byPort := map[int32][]Listener{}
	for _, l := range out {
		if l.Port != 0 { // port 0 is for tests: every one gets its own port
			byPort[l.Port] = append(byPort[l.Port], l)
		}
	}
	for _, port := range slices.Sorted(maps.Keys(byPort)) {
		ls := byPort[port]
		if len(ls) < 2 {
			continue
		}
		var v4, v6, other int
		for _, l := range ls {
			ip := net.ParseIP(l.Host)
			switch {
			case ip == nil:
				other++
			case ip.To4() != nil:
				v4++
			default:
				v6++
			}
		}
		switch {
		case other > 1 || (other == 1 && v4+v6 == 0):
			return nil, invalidValue(key, raw, "Each listener must have a different port, listeners: "+raw)
		case len(ls) > 2:
			return nil, invalidValue(key, raw, "Each listener must have a different port unless exactly one listener has "+
				"an IPv4 address and the other IPv6 address, listeners: "+raw+", port: "+strconv.Itoa(int(port)))
		case v4 != 1 || v6 != 1:
			return nil, invalidValue(key, raw, "If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: "+
				raw+", port: "+strconv.Itoa(int(port)))
		}
	}
	return out, nil
}

// compressionTypes is BrokerCompressionType.names().
var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// topicKey is one topic-level config of LogConfig's ConfigDef.
type topicKey struct {
	name     string
	typ      configType
	validate func(key, raw string) error // after the type check; nil = none
}

func atLeast(min int64) func(key, raw string) error {
	return func(key, raw string) error {
		n, _ := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if n < min {
			return invalidValue(key, raw, "Value must be at least "+strconv.FormatInt(min, 10))
		}
		return nil
	}
}

func between(min, max int64) func(key, raw string) error {
	return func(key, raw string) error {
		n, _ := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if n < min {
			return invalidValue(key, raw, "Value must be at least "+strconv.FormatInt(min, 10))
		}
		if n > max {
			return invalidValue(key, raw, "Value must be no more than "+strconv.FormatInt(max, 10))
		}
		return nil
	}
}

func oneOf(allowed ...string) func(key, raw string) error {
	return func(key, raw string) error { return validIn(key, strings.TrimSpace(raw), allowed...) }
}

// topicKeys is LogConfig's topic ConfigDef, in its definition order (the order
// Kafka parses, hence which error a request with several bad values gets), as
// in Kafka 4.4 (topicCatalog in config_catalog.go; a test keeps them equal).
var topicKeys = []topicKey{
	{"segment.bytes", typeInt, atLeast(minSegmentBytes)},
	{"segment.ms", typeLong, atLeast(1)},
	{"segment.jitter.ms", typeLong, atLeast(0)},
	{"segment.index.bytes", typeInt, atLeast(4)},
	{"flush.messages", typeLong, atLeast(1)},
	{"flush.ms", typeLong, atLeast(0)},
	{"retention.bytes", typeLong, nil},
	{"retention.ms", typeLong, atLeast(-1)},
	{"max.message.bytes", typeInt, atLeast(0)},
	{"max.decompressed.message.bytes", typeInt, between(1, math.MaxInt32-8)},
	{"index.interval.bytes", typeInt, atLeast(0)},
	{"delete.retention.ms", typeLong, atLeast(0)},
	{"min.compaction.lag.ms", typeLong, atLeast(0)},
	{"max.compaction.lag.ms", typeLong, atLeast(1)},
	{"file.delete.delay.ms", typeLong, atLeast(0)},
	{"min.cleanable.dirty.ratio", typeDouble, func(key, raw string) error {
		f, _ := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if f < 0 {
			return invalidValue(key, raw, "Value must be at least 0")
		}
		if f > 1 {
			return invalidValue(key, raw, "Value must be no more than 1")
		}
		return nil
	}},
	{"cleanup.policy", typeList, func(key, raw string) error {
		for _, p := range parseList(raw) {
			if err := validIn(key, p, "compact", "delete"); err != nil {
				return err
			}
		}
		return nil
	}},
	{"unclean.leader.election.enable", typeBoolean, nil},
	{"min.insync.replicas", typeInt, atLeast(1)},
	{"compression.type", typeString, oneOf(compressionTypes...)},
	{"compression.gzip.level", typeInt, func(key, raw string) error {
		n, _ := strconv.Atoi(strings.TrimSpace(raw))
		if n > 9 || (n < 1 && n != -1) {
			return invalidValue(key, raw, "Value must be between 1 and 9 or equal to -1")
		}
		return nil
	}},
	{"compression.lz4.level", typeInt, between(1, 17)},
	{"compression.zstd.level", typeInt, between(-131072, 22)},
	{"preallocate", typeBoolean, nil},
	{"message.timestamp.type", typeString, oneOf("CreateTime", "LogAppendTime")},
	{"message.timestamp.before.max.ms", typeLong, atLeast(0)},
	{"message.timestamp.after.max.ms", typeLong, atLeast(0)},
	{"leader.replication.throttled.replicas", typeList, validThrottledReplicas},
	{"follower.replication.throttled.replicas", typeList, validThrottledReplicas},
	{"remote.storage.enable", typeBoolean, nil},
	{"local.retention.ms", typeLong, atLeast(-2)},
	{"local.retention.bytes", typeLong, atLeast(-2)},
	{"remote.log.copy.disable", typeBoolean, nil},
	{"remote.copy.lag.ms", typeLong, atLeast(-1)},
	{"remote.copy.lag.bytes", typeLong, atLeast(-1)},
	{"remote.log.delete.on.disable", typeBoolean, nil},
	{"errors.deadletterqueue.group.enable", typeBoolean, nil},
}

var throttledReplicaPattern = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// validThrottledReplicas is ThrottledReplicaListValidator: "*" or
// partition:broker pairs.
func validThrottledReplicas(key, raw string) error {
	list := parseList(raw)
	ok := strings.Join(list, "") == "*"
	if !ok {
		ok = true
		for _, e := range list {
			if !throttledReplicaPattern.MatchString(e) {
				ok = false
			}
		}
	}
	if !ok {
		return invalidValue(key, "["+strings.Join(list, ", ")+"]", key+
			" must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
	}
	return nil
}

// TopicConfigNames lists the topic-level config names Kafka knows, in its order.
func TopicConfigNames() []string {
	out := make([]string, len(topicKeys))
	for i, k := range topicKeys {
		out[i] = k.name
	}
	return out
}

// ValidateTopicConfigs checks CreateTopics (or AlterConfigs) topic configs as
// Kafka's LogConfig.validate does: names first ("Unknown topic config name: x"),
// then each value in definition order, then the cross-key rules. The error is a
// *TopicConfigError wrapping kerr.InvalidConfig.
func ValidateTopicConfigs(configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if !slices.ContainsFunc(topicKeys, func(k topicKey) bool { return k.name == name }) {
			return &TopicConfigError{Err: kerr.InvalidConfig, Key: name, Message: "Unknown topic config name: " + name}
		}
	}
	for _, k := range topicKeys {
		raw, ok := configs[k.name]
		if !ok {
			continue
		}
		err := checkType(k.name, raw, k.typ)
		if err == nil && k.validate != nil {
			err = k.validate(k.name, raw)
		}
		if err != nil {
			return &TopicConfigError{Err: kerr.InvalidConfig, Key: k.name, Message: err.Error()}
		}
	}
	// Strait has no tiered storage, as a Kafka broker with
	// remote.log.storage.system.enable=false (its default).
	if v, ok := configs["remote.storage.enable"]; ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return &TopicConfigError{Err: kerr.InvalidConfig, Key: "remote.storage.enable", Message: "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."}
	}
	// LogConfig.validateValues, with Kafka's defaults for the absent side.
	minLag, maxLag := int64(0), int64(math.MaxInt64)
	if v, ok := configs["min.compaction.lag.ms"]; ok {
		minLag, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	if v, ok := configs["max.compaction.lag.ms"]; ok {
		maxLag, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	if minLag > maxLag {
		return &TopicConfigError{Err: kerr.InvalidConfig, Key: "min.compaction.lag.ms", Message: fmt.Sprintf(
			"conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)}
	}
	return nil
}

// TopicLogConfig resolves a topic's configs over the broker defaults
// (LogDefaults). Invalid configs give ValidateTopicConfigs' error.
func (c Config) TopicLogConfig(topicConfigs map[string]string) (storage.LogConfig, error) {
	if err := ValidateTopicConfigs(topicConfigs); err != nil {
		return storage.LogConfig{}, err
	}
	lc := c.LogDefaults
	num := func(key string) (int64, bool) {
		v, ok := topicConfigs[key]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	if n, ok := num("segment.bytes"); ok {
		lc.SegmentBytes = n
	}
	if n, ok := num("segment.ms"); ok {
		lc.SegmentMs = n
	}
	if n, ok := num("segment.index.bytes"); ok {
		lc.SegmentIndexBytes = int32(n)
	}
	if n, ok := num("index.interval.bytes"); ok {
		lc.IndexIntervalBytes = int32(n)
	}
	if n, ok := num("max.message.bytes"); ok {
		lc.MaxMessageBytes = int32(n)
	}
	if n, ok := num("retention.ms"); ok {
		lc.RetentionMs = n
	}
	if n, ok := num("retention.bytes"); ok {
		lc.RetentionBytes = n
	}
	if n, ok := num("flush.messages"); ok {
		lc.FlushMessages = n
	}
	if n, ok := num("flush.ms"); ok {
		lc.FlushMs = n
	}
	if v, ok := topicConfigs["message.timestamp.type"]; ok {
		lc.TimestampType = storage.CreateTime
		if strings.TrimSpace(v) == "LogAppendTime" {
			lc.TimestampType = storage.LogAppendTime
		}
	}
	if v, ok := topicConfigs["cleanup.policy"]; ok {
		lc.Compact = slices.Contains(parseList(v), "compact")
		lc.Delete = slices.Contains(parseList(v), "delete")
	}
	if v, ok := topicConfigs["min.cleanable.dirty.ratio"]; ok {
		if r, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			lc.MinCleanableDirtyRatio = r
		}
	}
	for key, field := range map[string]*int64{
		"message.timestamp.before.max.ms": &lc.TimestampBeforeMaxMs,
		"message.timestamp.after.max.ms":  &lc.TimestampAfterMaxMs,
		"file.delete.delay.ms":            &lc.FileDeleteDelayMs,
		"min.compaction.lag.ms":           &lc.MinCompactionLagMs,
		"max.compaction.lag.ms":           &lc.MaxCompactionLagMs,
		"delete.retention.ms":             &lc.DeleteRetentionMs,
	} {
		if n, ok := num(key); ok {
			*field = n
		}
	}
	// min.insync.replicas is not a log setting: see TopicMinInsyncReplicas.
	return lc, nil
}

// TopicMinInsyncReplicas resolves min.insync.replicas for a topic.
func (c Config) TopicMinInsyncReplicas(topicConfigs map[string]string) (int32, error) {
	if err := ValidateTopicConfigs(topicConfigs); err != nil {
		return 0, err
	}
	if v, ok := topicConfigs["min.insync.replicas"]; ok {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		return int32(n), nil
	}
	return c.MinInsyncReplicas, nil
}

// IsConfigError reports whether err is a configuration error (broker or topic).
func IsConfigError(err error) bool {
	var ce *ConfigError
	var te *TopicConfigError
	return errors.As(err, &ce) || errors.As(err, &te)
}
