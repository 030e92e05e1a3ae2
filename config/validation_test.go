package config

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// invalidCases are an invalid value, and Kafka's message for it, for every
// key Strait acts on that has a range or a set of valid values beyond its
// type (TestEveryKeyStraitActsOnIsValidated checks none is missing). Where
// Kafka has no validator but a value would break Strait (a zero ticker
// period, a negative size), Strait refuses it with the same wording.
var invalidCases = []struct {
	key, value string
	extra      map[string]string // other properties the case needs
	msg        string
}{
	{"node.id", "-1", nil, "Invalid value -1 for configuration node.id: Value must be at least 0"},
	{"broker.id", "-1", nil, "Invalid value -1 for configuration broker.id: Value must be at least 0"},
	{"num.partitions", "0", nil, "Invalid value 0 for configuration num.partitions: Value must be at least 1"},
	{"default.replication.factor", "0", nil, "Invalid value 0 for configuration default.replication.factor: Value must be at least 1 and no more than 32767"},
	{"message.max.bytes", "-1", nil, "Invalid value -1 for configuration message.max.bytes: Value must be at least 0"},
	{"log.retention.check.interval.ms", "0", nil, "Invalid value 0 for configuration log.retention.check.interval.ms: Value must be at least 1"},
	{"socket.request.max.bytes", "0", nil, "Invalid value 0 for configuration socket.request.max.bytes: Value must be at least 1"},
	{"max.incremental.fetch.session.cache.slots", "-1", nil, "Invalid value -1 for configuration max.incremental.fetch.session.cache.slots: Value must be at least 0"},
	{"min.insync.replicas", "0", nil, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
	{"compression.type", "brotli", nil, "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
	{"compression.gzip.level", "0", nil, "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
	{"compression.lz4.level", "18", nil, "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"},
	{"compression.zstd.level", "23", nil, "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"},
	{"leader.imbalance.check.interval.seconds", "0", nil, "Invalid value 0 for configuration leader.imbalance.check.interval.seconds: Value must be at least 1"},
	{"replication.quota.window.num", "0", nil, "Invalid value 0 for configuration replication.quota.window.num: Value must be at least 1"},
	{"replication.quota.window.size.seconds", "0", nil, "Invalid value 0 for configuration replication.quota.window.size.seconds: Value must be at least 1"},

	// Listeners.
	{"listeners", "localhost:9092", nil, "Invalid value localhost:9092 for configuration listeners: Unable to parse localhost:9092 to a broker endpoint"},
	{"advertised.listeners", "PLAINTEXT://0.0.0.0:9092", nil, "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."},
	{"listener.security.protocol.map", "PLAINTEXT:TLS", nil, "Invalid security protocol `TLS` defined in listener.security.protocol.map"},
	{"inter.broker.listener.name", "OTHER", nil, "Listener with name OTHER defined in inter.broker.listener.name not found in listener.security.protocol.map."},
	{"security.inter.broker.protocol", "TLS", nil, "Invalid security protocol `TLS` defined in security.inter.broker.protocol"},
	{"controller.listener.names", "PLAINTEXT", nil, "Invalid value PLAINTEXT://127.0.0.1:9092 for configuration listeners: There must be at least one broker listener (one not in controller.listener.names)"},
	{"log.dirs", " , ", nil, "At least one log directory must be defined via log.dirs or log.dir."},
	{"log.dir", " , ", nil, "At least one log directory must be defined via log.dirs or log.dir."},

	// Etcd (Strait's keys).
	{"etcd.prefix", "strait", nil, "Invalid value strait for configuration etcd.prefix: Value must start with /"},
	{"etcd.data.dir", " ", nil, "Invalid value   for configuration etcd.data.dir: String must be non-empty"},
	{"etcd.initial.cluster.state", "old", nil, "Invalid value old for configuration etcd.initial.cluster.state: String must be one of: new, existing"},
	{"etcd.heartbeat.interval", "0", nil, "Invalid value 0 for configuration etcd.heartbeat.interval: Value must be at least 1"},
	{"etcd.election.timeout", "0", nil, "Invalid value 0 for configuration etcd.election.timeout: Value must be at least 1"},

	// Log defaults, the cleaner and retention.
	{"log.segment.bytes", "1000", nil, "Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576"},
	{"log.roll.hours", "0", nil, "Invalid value 0 for configuration log.roll.hours: Value must be at least 1"},
	{"log.roll.ms", "0", nil, "log.roll.ms must be greater than or equal to 1"},
	{"log.roll.jitter.hours", "-1", nil, "Invalid value -1 for configuration log.roll.jitter.hours: Value must be at least 0"},
	{"log.index.size.max.bytes", "3", nil, "Invalid value 3 for configuration log.index.size.max.bytes: Value must be at least 4"},
	{"log.index.interval.bytes", "-1", nil, "Invalid value -1 for configuration log.index.interval.bytes: Value must be at least 0"},
	{"producer.id.expiration.ms", "0", nil, "Invalid value 0 for configuration producer.id.expiration.ms: Value must be at least 1"},
	{"strait.max.decompressed.batch.bytes", "-1", nil, "Invalid value -1 for configuration strait.max.decompressed.batch.bytes: Value must be at least 0"},
	{"strait.fd.reserve", "-1", nil, "Invalid value -1 for configuration strait.fd.reserve: Value must be at least 0"},
	{"strait.log.segment.open.files.max", "0", nil, "Invalid value 0 for configuration strait.log.segment.open.files.max: Value must be at least 1"},
	{"strait.share.coordinator.max.state.entries", "0", nil, "Invalid value 0 for configuration strait.share.coordinator.max.state.entries: Value must be at least 1"},
	{"alter.config.policy.class.name", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration alter.config.policy.class.name: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"client.quota.callback.class", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration client.quota.callback.class: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"create.topic.policy.class.name", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration create.topic.policy.class.name: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"group.streams.topology.description.plugin.class", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration group.streams.topology.description.plugin.class: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"kafka.metrics.reporters", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration kafka.metrics.reporters: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"metric.reporters", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration metric.reporters: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"principal.builder.class", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration principal.builder.class: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"replica.selector.class", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration replica.selector.class: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"sasl.server.callback.handler.class", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration sasl.server.callback.handler.class: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"ssl.engine.factory.class", "com.example.Plugin", nil, "Invalid value com.example.Plugin for configuration ssl.engine.factory.class: Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"},
	{"strait.http.listener", "localhost:99999", nil, "Invalid value localhost:99999 for configuration strait.http.listener: Must be host:port (an empty host listens on every address)"},
	{"strait.http.listener", "9644", nil, "Invalid value 9644 for configuration strait.http.listener: Must be host:port (an empty host listens on every address)"},
	{"listener.name.plaintext.max.connections", "-1", nil, "Invalid value -1 for configuration listener.name.plaintext.max.connections: Value must be at least 0"},
	{"producer.id.expiration.check.interval.ms", "0", nil, "Invalid value 0 for configuration producer.id.expiration.check.interval.ms: Value must be at least 1"},
	{"log.message.timestamp.type", "createtime", nil, "Invalid value createtime for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
	{"log.retention.ms", "0", nil, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
	{"log.retention.minutes", "0", nil, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
	{"log.retention.hours", "0", nil, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
	{"log.flush.interval.messages", "0", nil, "Invalid value 0 for configuration log.flush.interval.messages: Value must be at least 1"},
	{"log.cleanup.policy", "delete,shred", nil, "Invalid value shred for configuration log.cleanup.policy: String must be one of: compact, delete"},
	{"log.cleaner.min.cleanable.ratio", "1.5", nil, "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"},
	{"log.cleaner.min.compaction.lag.ms", "-1", nil, "Invalid value -1 for configuration log.cleaner.min.compaction.lag.ms: Value must be at least 0"},
	{"log.cleaner.max.compaction.lag.ms", "0", nil, "Invalid value 0 for configuration log.cleaner.max.compaction.lag.ms: Value must be at least 1"},
	{"log.cleaner.delete.retention.ms", "-1", nil, "Invalid value -1 for configuration log.cleaner.delete.retention.ms: Value must be at least 0"},
	{"log.cleaner.threads", "-1", nil, "Invalid value -1 for configuration log.cleaner.threads: Value must be at least 0"},
	{"log.cleaner.io.buffer.size", "-1", nil, "Invalid value -1 for configuration log.cleaner.io.buffer.size: Value must be at least 0"},
	{"log.cleaner.backoff.ms", "-1", nil, "Invalid value -1 for configuration log.cleaner.backoff.ms: Value must be at least 0"},
	{"log.message.timestamp.before.max.ms", "-1", nil, "Invalid value -1 for configuration log.message.timestamp.before.max.ms: Value must be at least 0"},
	{"log.message.timestamp.after.max.ms", "-1", nil, "Invalid value -1 for configuration log.message.timestamp.after.max.ms: Value must be at least 0"},
	{"log.segment.delete.delay.ms", "-1", nil, "Invalid value -1 for configuration log.segment.delete.delay.ms: Value must be at least 0"},

	// Replication.
	{"replica.lag.time.max.ms", "0", nil, "Invalid value 0 for configuration replica.lag.time.max.ms: Value must be at least 1"},
	{"replica.lag.time.max.ms", "100", nil, "requirement failed: replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR"},
	{"replica.fetch.backoff.ms", "-1", nil, "Invalid value -1 for configuration replica.fetch.backoff.ms: Value must be at least 0"},
	{"replica.fetch.wait.max.ms", "-1", nil, "Invalid value -1 for configuration replica.fetch.wait.max.ms: Value must be at least 0"},
	{"replica.fetch.wait.max.ms", "40000", nil, "requirement failed: replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR"},
	{"replica.fetch.min.bytes", "-1", nil, "Invalid value -1 for configuration replica.fetch.min.bytes: Value must be at least 0"},
	{"replica.fetch.response.max.bytes", "-1", nil, "Invalid value -1 for configuration replica.fetch.response.max.bytes: Value must be at least 0"},
	{"replica.fetch.max.bytes", "-1", nil, "Invalid value -1 for configuration replica.fetch.max.bytes: Value must be at least 0"},
	{"replica.high.watermark.checkpoint.interval.ms", "0", nil, "Invalid value 0 for configuration replica.high.watermark.checkpoint.interval.ms: Value must be at least 1"},
	{"log.flush.offset.checkpoint.interval.ms", "-1", nil, "Invalid value -1 for configuration log.flush.offset.checkpoint.interval.ms: Value must be at least 0"},
	{"log.flush.start.offset.checkpoint.interval.ms", "-1", nil, "Invalid value -1 for configuration log.flush.start.offset.checkpoint.interval.ms: Value must be at least 0"},
	{"num.recovery.threads.per.data.dir", "0", nil, "Invalid value 0 for configuration num.recovery.threads.per.data.dir: Value must be at least 1"},
	{"broker.session.timeout.ms", "0", nil, "Invalid value 0 for configuration broker.session.timeout.ms: Value must be at least 1"},

	// Groups.
	{"offsets.topic.num.partitions", "0", nil, "Invalid value 0 for configuration offsets.topic.num.partitions: Value must be at least 1"},
	{"offsets.topic.replication.factor", "0", nil, "Invalid value 0 for configuration offsets.topic.replication.factor: Value must be at least 1"},
	{"offsets.topic.segment.bytes", "0", nil, "Invalid value 0 for configuration offsets.topic.segment.bytes: Value must be at least 1"},
	{"offsets.load.buffer.size", "0", nil, "Invalid value 0 for configuration offsets.load.buffer.size: Value must be at least 1"},
	{"offset.metadata.max.bytes", "-1", nil, "Invalid value -1 for configuration offset.metadata.max.bytes: Value must be at least 0"},
	{"offsets.retention.minutes", "0", nil, "Invalid value 0 for configuration offsets.retention.minutes: Value must be at least 1"},
	{"offsets.retention.check.interval.ms", "0", nil, "Invalid value 0 for configuration offsets.retention.check.interval.ms: Value must be at least 1"},
	{"group.initial.rebalance.delay.ms", "-1", nil, "Invalid value -1 for configuration group.initial.rebalance.delay.ms: Value must be at least 0"},
	{"group.min.session.timeout.ms", "-1", nil, "Invalid value -1 for configuration group.min.session.timeout.ms: Value must be at least 0"},
	{"group.max.session.timeout.ms", "-1", nil, "Invalid value -1 for configuration group.max.session.timeout.ms: Value must be at least 0"},
	{"group.max.size", "0", nil, "Invalid value 0 for configuration group.max.size: Value must be at least 1"},
	{"group.consumer.session.timeout.ms", "0", nil, "Invalid value 0 for configuration group.consumer.session.timeout.ms: Value must be at least 1"},
	{"group.share.session.timeout.ms", "0", nil, "Invalid value 0 for configuration group.share.session.timeout.ms: Value must be at least 1"},
	{"group.share.heartbeat.interval.ms", "0", nil, "Invalid value 0 for configuration group.share.heartbeat.interval.ms: Value must be at least 1"},
	{"group.share.max.size", "0", nil, "Invalid value 0 for configuration group.share.max.size: Value must be at least 1"},
	{"group.share.record.lock.duration.ms", "999", nil, "Invalid value 999 for configuration group.share.record.lock.duration.ms: Value must be at least 1000"},
	{"group.share.delivery.count.limit", "1", nil, "Invalid value 1 for configuration group.share.delivery.count.limit: Value must be at least 2"},
	{"group.share.partition.max.record.locks", "99", nil, "Invalid value 99 for configuration group.share.partition.max.record.locks: Value must be at least 100"},
	{"group.share.max.share.sessions", "0", nil, "Invalid value 0 for configuration group.share.max.share.sessions: Value must be at least 1"},
	{"share.coordinator.state.topic.num.partitions", "0", nil, "Invalid value 0 for configuration share.coordinator.state.topic.num.partitions: Value must be at least 1"},
	{"share.coordinator.state.topic.replication.factor", "0", nil, "Invalid value 0 for configuration share.coordinator.state.topic.replication.factor: Value must be at least 1"},
	{"share.coordinator.state.topic.min.isr", "0", nil, "Invalid value 0 for configuration share.coordinator.state.topic.min.isr: Value must be at least 1"},
	{"share.coordinator.state.topic.segment.bytes", "0", nil, "Invalid value 0 for configuration share.coordinator.state.topic.segment.bytes: Value must be at least 1"},
	{"share.coordinator.load.buffer.size", "0", nil, "Invalid value 0 for configuration share.coordinator.load.buffer.size: Value must be at least 1"},
	{"share.coordinator.snapshot.update.records.per.snapshot", "-1", nil, "Invalid value -1 for configuration share.coordinator.snapshot.update.records.per.snapshot: Value must be at least 0"},
	{"group.consumer.heartbeat.interval.ms", "0", nil, "Invalid value 0 for configuration group.consumer.heartbeat.interval.ms: Value must be at least 1"},
	{"group.consumer.max.size", "0", nil, "Invalid value 0 for configuration group.consumer.max.size: Value must be at least 1"},
	{"group.streams.session.timeout.ms", "0", nil, "Invalid value 0 for configuration group.streams.session.timeout.ms: Value must be at least 1"},
	{"group.streams.heartbeat.interval.ms", "0", nil, "Invalid value 0 for configuration group.streams.heartbeat.interval.ms: Value must be at least 1"},
	{"group.streams.max.size", "0", nil, "Invalid value 0 for configuration group.streams.max.size: Value must be at least 1"},
	{"group.streams.num.standby.replicas", "-1", nil, "Invalid value -1 for configuration group.streams.num.standby.replicas: Value must be at least 0"},
	{"group.consumer.migration.policy", "sideways", nil, "Invalid value sideways for configuration group.consumer.migration.policy: String must be one of (case insensitive): BIDIRECTIONAL, UPGRADE, DOWNGRADE, DISABLED"},
	{"group.coordinator.rebalance.protocols", "classic,eager", nil, "Invalid value eager for configuration group.coordinator.rebalance.protocols: String must be one of: consumer, classic, share, streams"},

	// Transactions.
	{"transaction.max.timeout.ms", "0", nil, "Invalid value 0 for configuration transaction.max.timeout.ms: Value must be at least 1"},
	{"transactional.id.expiration.ms", "0", nil, "Invalid value 0 for configuration transactional.id.expiration.ms: Value must be at least 1"},
	{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "0", nil, "Invalid value 0 for configuration transaction.abort.timed.out.transaction.cleanup.interval.ms: Value must be at least 1"},
	{"transaction.remove.expired.transaction.cleanup.interval.ms", "0", nil, "Invalid value 0 for configuration transaction.remove.expired.transaction.cleanup.interval.ms: Value must be at least 1"},
	{"transaction.state.log.num.partitions", "0", nil, "Invalid value 0 for configuration transaction.state.log.num.partitions: Value must be at least 1"},
	{"transaction.state.log.replication.factor", "0", nil, "Invalid value 0 for configuration transaction.state.log.replication.factor: Value must be at least 1"},
	{"transaction.state.log.min.isr", "0", nil, "Invalid value 0 for configuration transaction.state.log.min.isr: Value must be at least 1"},
	{"transaction.state.log.segment.bytes", "0", nil, "Invalid value 0 for configuration transaction.state.log.segment.bytes: Value must be at least 1"},
	{"transaction.state.log.load.buffer.size", "0", nil, "Invalid value 0 for configuration transaction.state.log.load.buffer.size: Value must be at least 1"},
}

// anyValueOfItsType are the keys Strait acts on whose every value of the
// key's type is valid, in Kafka as in Strait: for them only a value that does
// not parse as the type is refused (checked below for every key).
var anyValueOfItsType = []string{
	"auto.create.topics.enable", "delete.topic.enable", "log.preallocate", "unclean.leader.election.enable", "auto.leader.rebalance.enable",
	"log.cleaner.enable", "controlled.shutdown.enable", "transaction.partition.verification.enable",
	"log.retention.bytes",                                      // negative: unlimited
	"log.roll.jitter.ms",                                       // Kafka: no validator
	"log.flush.scheduler.interval.ms", "log.flush.interval.ms", // Kafka: no validator
	"log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor", // Kafka: no validator
	"log.cleaner.io.max.bytes.per.second",     // Kafka: no validator
	"broker.rack", "group.consumer.assignors", // unsupported assignors are dropped with a warning
	"etcd.endpoints", "etcd.name", "etcd.initial.cluster", "etcd.initial.cluster.token",
	"etcd.listen.peer.urls", "etcd.initial.advertise.peer.urls", "etcd.listen.client.urls", "etcd.advertise.client.urls",
}

// TestInvalidValueNamesTheKey: for every key Strait acts on, an invalid value
// stops Parse with a *ConfigError naming that key, in Kafka's words.
func TestInvalidValueNamesTheKey(t *testing.T) {
	for _, tc := range invalidCases {
		props := map[string]string{tc.key: tc.value}
		maps.Copy(props, tc.extra)
		_, _, err := Parse(props)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s=%q: error %v, want a *ConfigError", tc.key, tc.value, err)
			continue
		}
		if !strings.Contains(ce.Error(), tc.key) && ce.Key != tc.key {
			t.Errorf("%s=%q: error names neither the key: %s (key %s)", tc.key, tc.value, ce.Error(), ce.Key)
		}
		if ce.Error() != tc.msg {
			t.Errorf("%s=%q:\n got %s\nwant %s", tc.key, tc.value, ce.Error(), tc.msg)
		}
	}
}

// TestMalformedValueNamesTheKey: every key Strait acts on that has a type
// beyond STRING refuses a value that does not parse, naming the key.
func TestMalformedValueNamesTheKey(t *testing.T) {
	for _, key := range keysStraitActsOn(t) {
		typ, ok := knownBrokerKeys[key]
		if !ok {
			typ = straitKeys[key]
		}
		var want string
		switch typ {
		case typeBoolean:
			want = "Invalid value x1 for configuration " + key + ": Expected value to be either true or false"
		case typeInt, typeShort, typeLong, typeDouble:
			want = "Invalid value x1 for configuration " + key + ": Not a number of type " + typeName(typ)
		default:
			continue
		}
		_, _, err := Parse(map[string]string{key: "x1"})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != key || ce.Error() != want {
			t.Errorf("%s=x1: %v, want %s", key, err, want)
		}
	}
}

// keysStraitActsOn are the keys Parse reads.
func keysStraitActsOn(t *testing.T) []string {
	used := map[string]bool{}
	if _, _, err := parse(map[string]string{"log.roll.ms": "1", "log.retention.ms": "1", "log.retention.minutes": "1",
		"log.flush.interval.ms": "1", "broker.id": "1", "advertised.listeners": "PLAINTEXT://h:1", "log.dirs": "/d",
		"etcd.data.dir": "/e", "etcd.heartbeat.interval": "100", "etcd.election.timeout": "1000",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}, used); err != nil {
		t.Fatal(err)
	}
	if len(used) < 90 {
		t.Fatalf("only %d keys recorded", len(used))
	}
	return slices.Sorted(maps.Keys(used))
}

// TestEveryKeyStraitActsOnIsValidated: each key Parse reads has a case in
// invalidCases, or is listed as valid in every value of its type.
func TestEveryKeyStraitActsOnIsValidated(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range invalidCases {
		covered[tc.key] = true
	}
	for _, k := range anyValueOfItsType {
		covered[k] = true
	}
	for _, key := range keysStraitActsOn(t) {
		if !covered[key] {
			t.Errorf("Strait acts on %s, but no test gives it an invalid value", key)
		}
	}
}

// TestDynamicChangeGivesNewTypedValue: dynamic broker configs yield a new
// Config with the typed values changed, leaving the static one and the keys
// that are not applied at runtime as they were.
func TestDynamicChangeGivesNewTypedValue(t *testing.T) {
	static, _ := mustParse(t, map[string]string{"log.retention.hours": "1", "message.max.bytes": "2000", "num.partitions": "3"})
	layers := NewLayers(static, map[string]string{"log.retention.ms": "5000", "min.insync.replicas": "2"},
		map[string]string{"log.cleanup.policy": "compact", "message.max.bytes": "3000", "num.partitions": "9"})
	got, err := static.WithDynamic(layers)
	if err != nil {
		t.Fatal(err)
	}
	if got.Log.Defaults.RetentionMs != 5000 || !got.Log.Defaults.Compact || got.Log.Defaults.Delete ||
		got.Topics.MinInsyncReplicas != 2 || got.Topics.MessageMaxBytes != 3000 || got.Log.Defaults.MaxMessageBytes != 3000 {
		t.Errorf("dynamic: retention %d compact %v delete %v min.insync %d message.max %d/%d", got.Log.Defaults.RetentionMs,
			got.Log.Defaults.Compact, got.Log.Defaults.Delete, got.Topics.MinInsyncReplicas, got.Topics.MessageMaxBytes, got.Log.Defaults.MaxMessageBytes)
	}
	if got.Topics.NumPartitions != 3 {
		t.Errorf("num.partitions is not applied at runtime: got %d", got.Topics.NumPartitions)
	}
	if static.Log.Defaults.RetentionMs != int64(time.Hour/time.Millisecond) || static.Topics.MessageMaxBytes != 2000 || static.Topics.MinInsyncReplicas != 1 {
		t.Errorf("the static config changed: %+v", static.Log.Defaults)
	}
	// The cluster default applies where the broker sets nothing; the
	// broker's own value wins over it.
	layers = NewLayers(static, map[string]string{"message.max.bytes": "4000"}, map[string]string{"message.max.bytes": "5000"})
	if got, err := static.WithDynamic(layers); err != nil || got.Topics.MessageMaxBytes != 5000 {
		t.Errorf("broker over default: %d %v", got.Topics.MessageMaxBytes, err)
	}
	// Nothing dynamic: the same value.
	if got, err := static.WithDynamic(NewLayers(static, nil, map[string]string{"num.io.threads": "4"})); err != nil ||
		got.Log.Defaults != static.Log.Defaults || got.Topics.MessageMaxBytes != 2000 {
		t.Errorf("no dynamic log key: %+v %v", got.Log.Defaults, err)
	}
	// An invalid dynamic value is refused naming the key.
	_, err = static.WithDynamic(NewLayers(static, nil, map[string]string{"log.retention.ms": "0"}))
	if err == nil || !strings.Contains(err.Error(), "log.retention.ms") {
		t.Errorf("invalid dynamic value: %v", err)
	}
}

// TestTypedSettingsDefaults: the typed settings take Kafka's defaults from the
// catalog.
func TestTypedSettingsDefaults(t *testing.T) {
	c := Default()
	r := c.Replication
	if r.LagTimeMax != 30*time.Second || r.FetchBackoff != time.Second || r.FetchWaitMax != 500*time.Millisecond ||
		r.FetchMinBytes != 1 || r.FetchResponseMax != 10<<20 || r.FetchMaxBytes != 1<<20 ||
		r.HighWatermarkSync != 5*time.Second || r.RecoveryThreadsPerDataDir != 2 || r.SessionTimeout != 9*time.Second ||
		r.LeaseTTLSeconds() != 9 {
		t.Errorf("replication: %+v", r)
	}
	g := c.Groups
	if g.OffsetsTopicPartitions != 50 || g.OffsetsTopicReplication != 3 || g.OffsetsTopicSegmentBytes != 100<<20 ||
		g.OffsetsLoadBufferSize != 5<<20 || g.OffsetMetadataMaxBytes != 4096 || g.OffsetsRetention != 7*24*time.Hour ||
		g.OffsetsRetentionCheck != 10*time.Minute || g.InitialRebalanceDelay != 3*time.Second ||
		g.MinSessionTimeout != 6*time.Second || g.MaxSessionTimeout != 30*time.Minute || g.MaxSize != 1<<31-1 ||
		g.ConsumerSessionTimeout != 45*time.Second || g.ConsumerHeartbeatInterval != 5*time.Second ||
		g.ConsumerMaxSize != 1<<31-1 || !slices.Equal(g.ConsumerAssignors, []string{"uniform", "range"}) || !g.ConsumerProtocol {
		t.Errorf("groups: %+v", g)
	}
	x := c.Transactions
	if x.MaxTimeout != 15*time.Minute || x.TransactionalIDExpiration != 7*24*time.Hour ||
		x.AbortTimedOutInterval != 10*time.Second || x.RemoveExpiredInterval != time.Hour ||
		x.StateLogPartitions != 50 || x.StateLogReplication != 3 || x.StateLogMinISR != 2 ||
		x.StateLogSegmentBytes != 100<<20 || x.StateLogLoadBufferSize != 5<<20 || !x.PartitionVerification {
		t.Errorf("transactions: %+v", x)
	}
	if c.FetchSessions.CacheSlots != 1000 || !c.Shutdown.Controlled {
		t.Errorf("fetch sessions %+v, shutdown %+v", c.FetchSessions, c.Shutdown)
	}

	c, warnings := mustParse(t, map[string]string{
		"group.consumer.assignors":              "range,org.example.Sticky",
		"group.coordinator.rebalance.protocols": "classic",
		"controlled.shutdown.enable":            "false",
		"replica.lag.time.max.ms":               "10000",
		"broker.session.timeout.ms":             "2500",
	})
	if !slices.Equal(c.Groups.ConsumerAssignors, []string{"range"}) || c.Groups.ConsumerProtocol || c.Shutdown.Controlled ||
		c.Replication.LagTimeMax != 10*time.Second || c.Replication.LeaseTTLSeconds() != 3 {
		t.Errorf("parsed: %+v %+v %+v", c.Groups, c.Shutdown, c.Replication)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "org.example.Sticky") {
		t.Errorf("warnings %q", warnings)
	}
}
