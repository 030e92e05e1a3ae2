package config

// Parse: the properties, read once into Config.

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/strait/strait/storage"
)

// Parse turns properties into a Config. Unknown keys produce warnings
// (returned, sorted), not errors; invalid values produce an error naming the key
// and the value in Kafka's words, e.g.
// "Invalid value abc for configuration num.partitions: Not a number of type INT".
// The error is a *ConfigError, whose Key is the key at fault.
func Parse(in map[string]string) (Config, []string, error) {
	return parse(in, nil)
}

// parse is Parse, recording in used (when not nil) every key it reads.
func parse(in map[string]string, used map[string]bool) (Config, []string, error) {
	var c Config
	c.Props = maps.Clone(in)
	if c.Props == nil {
		c.Props = map[string]string{}
	}
	p := &props{m: c.Props, used: used}

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
	c.NodeID = p.int("node.id")
	if p.has("broker.id") {
		brokerID := p.int("broker.id")
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

	c.Topics.NumPartitions = p.intAtLeast("num.partitions", 1)
	c.Limits = parseLimits(p)
	c.HTTP = parseHTTP(p)
	checkPluginClasses(p)
	c.ClientQuotas = parseClientQuotas(p)
	// Kafka's default.replication.factor has no validator, but CreateTopics
	// then fails for every topic relying on it; refuse at start instead.
	rf := p.int("default.replication.factor")
	if rf < 1 || rf > math.MaxInt16 {
		p.fail(invalidValue("default.replication.factor", p.raw("default.replication.factor"),
			"Value must be at least 1 and no more than 32767"))
	}
	c.Topics.DefaultReplicationFactor = int16(rf)
	c.Topics.AutoCreateEnable = p.bool("auto.create.topics.enable")
	c.Topics.DeleteTopicEnable = p.bool("delete.topic.enable")
	c.Topics.MessageMaxBytes = p.int("message.max.bytes")
	c.Log.RetentionCheckIntervalMs = p.longAtLeast("log.retention.check.interval.ms", 1)
	c.Log.FlushOffsetCheckpointIntervalMs = int64(p.intAtLeast("log.flush.offset.checkpoint.interval.ms", 0))
	c.Log.FlushStartOffsetCheckpointIntervalMs = int64(p.intAtLeast("log.flush.start.offset.checkpoint.interval.ms", 0))
	c.Log.SegmentOpenFilesMax = p.intAtLeast("strait.log.segment.open.files.max", 1)
	p.atLeast("message.max.bytes", int64(c.Topics.MessageMaxBytes), 0)
	c.Network.SocketRequestMaxBytes = p.intAtLeast("socket.request.max.bytes", 1)
	c.FetchSessions = parseFetchSessions(p)
	c.Rack = p.str("broker.rack")
	c.Topics.MinInsyncReplicas = p.intAtLeast("min.insync.replicas", 1)
	c.Topics.CompressionType = p.str("compression.type")
	if err := validIn("compression.type", c.Topics.CompressionType, compressionTypes...); err != nil {
		p.fail(err)
	}
	if p.err != nil {
		return Config{}, warnings, p.err
	}

	if err := c.parseListeners(p); err != nil {
		return Config{}, warnings, err
	}
	if parseListenerLimits(p, &c.Limits, c.Network.Listeners); p.err != nil {
		return Config{}, warnings, p.err
	}

	// log.dirs, else log.dir (KafkaConfig.logDirs).
	dirs := parseCsvList(p.str("log.dir"))
	if p.has("log.dirs") {
		dirs = parseCsvList(p.str("log.dirs"))
	}
	if len(dirs) == 0 {
		return Config{}, warnings, &ConfigError{Key: "log.dirs", Message: "At least one log directory must be defined via log.dirs or log.dir."}
	}
	c.Log.Dirs = dirs

	etcd, err := parseEtcd(p, dirs[0])
	if err != nil {
		return Config{}, warnings, err
	}
	c.Etcd = etcd
	c.Controller.UncleanLeaderElectionEnable = p.bool("unclean.leader.election.enable")
	c.Controller.AutoLeaderRebalanceEnable = p.bool("auto.leader.rebalance.enable")
	c.Controller.LeaderImbalanceCheckIntervalSeconds = p.longAtLeast("leader.imbalance.check.interval.seconds", 1)

	if err := c.parseLogDefaults(p); err != nil {
		return Config{}, warnings, err
	}
	c.Replication = parseReplication(p)
	var groupWarnings []string
	c.Groups, groupWarnings = parseGroups(p)
	warnings = append(warnings, groupWarnings...)
	c.Transactions = parseTransactions(p)
	c.Shutdown = Shutdown{Controlled: p.bool("controlled.shutdown.enable")}
	if p.err != nil {
		return Config{}, warnings, p.err
	}
	if err := c.parseSecurity(p); err != nil {
		return Config{}, warnings, err
	}
	if p.err != nil {
		return Config{}, warnings, p.err
	}
	if err := c.crossCheck(); err != nil {
		return Config{}, warnings, err
	}
	return c, warnings, nil
}

// parseEtcd reads the etcd.* keys (Strait's own; straitKeys).
func parseEtcd(p *props, firstLogDir string) (Etcd, error) {
	e := Etcd{
		Endpoints:                parseCsvList(p.str("etcd.endpoints")),
		DataDir:                  strings.TrimRight(firstLogDir, "/") + "/etcd",
		Prefix:                   p.str("etcd.prefix"),
		Name:                     p.str("etcd.name"),
		InitialCluster:           p.str("etcd.initial.cluster"),
		InitialClusterState:      p.str("etcd.initial.cluster.state"),
		InitialClusterToken:      p.str("etcd.initial.cluster.token"),
		ListenPeerURLs:           parseCsvList(p.str("etcd.listen.peer.urls")),
		InitialAdvertisePeerURLs: parseCsvList(p.str("etcd.initial.advertise.peer.urls")),
		ListenClientURLs:         parseCsvList(p.str("etcd.listen.client.urls")),
		AdvertiseClientURLs:      parseCsvList(p.str("etcd.advertise.client.urls")),
	}
	if p.has("etcd.data.dir") {
		e.DataDir = p.str("etcd.data.dir")
		if e.DataDir == "" {
			return Etcd{}, invalidValue("etcd.data.dir", p.m["etcd.data.dir"], "String must be non-empty")
		}
	}
	if p.has("etcd.heartbeat.interval") {
		e.HeartbeatIntervalMs = int(p.intAtLeast("etcd.heartbeat.interval", 1))
	}
	if p.has("etcd.election.timeout") {
		e.ElectionTimeoutMs = int(p.intAtLeast("etcd.election.timeout", 1))
	}
	if p.err != nil {
		return Etcd{}, p.err
	}
	if st := e.InitialClusterState; st != "" && st != "new" && st != "existing" {
		return Etcd{}, invalidValue("etcd.initial.cluster.state", st, "String must be one of: new, existing")
	}
	if !strings.HasPrefix(e.Prefix, "/") {
		return Etcd{}, invalidValue("etcd.prefix", p.raw("etcd.prefix"), "Value must start with /")
	}
	sec, err := parseEtcdSecurity(p, e)
	if err != nil {
		return Etcd{}, err
	}
	e.Security = sec
	return e, nil
}

// parseLogDefaults reads the broker-level synonyms of the topic configs
// (ServerTopicConfigSynonyms), with Kafka's precedence among them, and the
// log cleaner's and retention's settings.
func (c *Config) parseLogDefaults(p *props) error {
	var ld storage.LogConfig

	ld.SegmentBytes = int64(p.intAtLeast("log.segment.bytes", minSegmentBytes))

	rollHours := p.intAtLeast("log.roll.hours", 1)
	ld.SegmentMs = int64(rollHours) * 3600 * 1000
	if p.has("log.roll.ms") {
		ld.SegmentMs = p.long("log.roll.ms")
		if ld.SegmentMs < 1 && p.err == nil {
			return &ConfigError{Key: "log.roll.ms", Message: "log.roll.ms must be greater than or equal to 1"}
		}
	}

	// log.roll.jitter.ms, else log.roll.jitter.hours
	// (KafkaConfig.logRollTimeJitterMillis); Kafka has no validator on the
	// first, and a negative value draws as its absolute value would.
	ld.SegmentJitterMs = int64(p.intAtLeast("log.roll.jitter.hours", 0)) * 3600 * 1000
	if p.has("log.roll.jitter.ms") {
		ld.SegmentJitterMs = p.long("log.roll.jitter.ms")
		if ld.SegmentJitterMs < 0 {
			ld.SegmentJitterMs = -ld.SegmentJitterMs
		}
	}

	ld.Preallocate = p.bool("log.preallocate")
	ld.SegmentIndexBytes = p.intAtLeast("log.index.size.max.bytes", 4)
	ld.IndexIntervalBytes = p.intAtLeast("log.index.interval.bytes", 0)
	ld.MaxMessageBytes = c.Topics.MessageMaxBytes
	ld.MaxDecompressedBatchBytes = p.longAtLeast("strait.max.decompressed.batch.bytes", 0)
	ld.ProducerIDExpirationMs = int64(p.intAtLeast("producer.id.expiration.ms", 1))
	c.Log.ProducerIDExpirationCheckIntervalMs = int64(p.intAtLeast("producer.id.expiration.check.interval.ms", 1))

	switch ts := p.str("log.message.timestamp.type"); ts {
	case "CreateTime":
		ld.TimestampType = storage.CreateTime
	case "LogAppendTime":
		ld.TimestampType = storage.LogAppendTime
	default:
		p.fail(validIn("log.message.timestamp.type", ts, "CreateTime", "LogAppendTime"))
	}

	// log.retention.ms > log.retention.minutes > log.retention.hours; any negative
	// value means infinite (KafkaConfig.logRetentionTimeMillis).
	retentionKey := "log.retention.hours"
	switch {
	case p.has("log.retention.ms"):
		retentionKey = "log.retention.ms"
		ld.RetentionMs = p.long("log.retention.ms")
	case p.has("log.retention.minutes"):
		retentionKey = "log.retention.minutes"
		ld.RetentionMs = int64(p.int("log.retention.minutes")) * 60 * 1000
	default:
		ld.RetentionMs = int64(p.int("log.retention.hours")) * 3600 * 1000
	}
	if ld.RetentionMs < 0 {
		ld.RetentionMs = -1
	}
	if ld.RetentionMs == 0 && p.err == nil {
		// Kafka's message names log.retention.ms whichever spelling set it.
		return &ConfigError{Key: retentionKey, Message: "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"}
	}
	ld.RetentionBytes = p.long("log.retention.bytes")

	ld.FlushMessages = p.longAtLeast("log.flush.interval.messages", 1)
	// flush.ms synonyms: log.flush.interval.ms, else log.flush.scheduler.interval.ms.
	ld.FlushMs = p.long("log.flush.scheduler.interval.ms")
	if p.has("log.flush.interval.ms") {
		ld.FlushMs = p.long("log.flush.interval.ms")
	}

	for _, policy := range parseList(p.str("log.cleanup.policy")) {
		if err := validIn("log.cleanup.policy", policy, "compact", "delete"); err != nil {
			p.fail(err)
		}
		ld.Compact = ld.Compact || policy == "compact"
		ld.Delete = ld.Delete || policy == "delete"
	}
	// ConfigDef.Range.between(0, 1), which prints the value parsed.
	ld.MinCleanableDirtyRatio = p.double("log.cleaner.min.cleanable.ratio")
	switch r := ld.MinCleanableDirtyRatio; {
	case r < 0:
		p.fail(invalidValue("log.cleaner.min.cleanable.ratio", javaDouble(r), "Value must be at least 0"))
	case r > 1:
		p.fail(invalidValue("log.cleaner.min.cleanable.ratio", javaDouble(r), "Value must be no more than 1"))
	}
	ld.MinCompactionLagMs = p.longAtLeast("log.cleaner.min.compaction.lag.ms", 0)
	ld.MaxCompactionLagMs = p.longAtLeast("log.cleaner.max.compaction.lag.ms", 1)
	ld.DeleteRetentionMs = p.longAtLeast("log.cleaner.delete.retention.ms", 0)

	c.Log.CleanerEnable = p.bool("log.cleaner.enable")
	c.Log.Cleaner = storage.CleanerConfig{
		Threads:                int(p.intAtLeast("log.cleaner.threads", 0)),
		DedupeBufferSize:       p.long("log.cleaner.dedupe.buffer.size"),
		DedupeBufferLoadFactor: p.double("log.cleaner.io.buffer.load.factor"),
		IOBufferSize:           int(p.intAtLeast("log.cleaner.io.buffer.size", 0)),
		BackoffMs:              p.longAtLeast("log.cleaner.backoff.ms", 0),
		// Kafka has no validator; 0 or below is no limit here (Kafka's
		// throttler divides by it: 0 stops its cleaner for good).
		IOMaxBytesPerSecond: p.double("log.cleaner.io.max.bytes.per.second"),
	}

	// compression.type (validated with the topic defaults) and the
	// levels of KIP-390, with Kafka's validators.
	ld.CompressionType = c.Topics.CompressionType
	ld.GzipLevel = p.int("compression.gzip.level")
	if err := validGzipLevel("compression.gzip.level", p.raw("compression.gzip.level")); err != nil {
		p.fail(err)
	}
	ld.LZ4Level = p.int("compression.lz4.level")
	p.between("compression.lz4.level", int64(ld.LZ4Level), 1, 17)
	ld.ZstdLevel = p.int("compression.zstd.level")
	p.between("compression.zstd.level", int64(ld.ZstdLevel), -131072, 22)

	ld.TimestampBeforeMaxMs = p.longAtLeast("log.message.timestamp.before.max.ms", 0)
	ld.TimestampAfterMaxMs = p.longAtLeast("log.message.timestamp.after.max.ms", 0)
	ld.FileDeleteDelayMs = p.longAtLeast("log.segment.delete.delay.ms", 0)

	if p.err != nil {
		return p.err
	}
	c.Log.Defaults = ld
	return nil
}
