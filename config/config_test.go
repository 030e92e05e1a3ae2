package config

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/storage"
)

func mustParse(t *testing.T, props map[string]string) (Config, []string) {
	t.Helper()
	c, warnings, err := Parse(props)
	if err != nil {
		t.Fatalf("Parse(%v): %v", props, err)
	}
	return c, warnings
}

func parseErr(t *testing.T, props map[string]string) *ConfigError {
	t.Helper()
	_, _, err := Parse(props)
	if err == nil {
		t.Fatalf("Parse(%v) succeeded, want an error", props)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Parse(%v) error %T %v, want *ConfigError", props, err, err)
	}
	return ce
}

func TestParseConfigEmptyIsDefault(t *testing.T) {
	c, warnings := mustParse(t, nil)
	if len(warnings) != 0 {
		t.Fatalf("warnings = %v", warnings)
	}
	want := Default()
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("Parse(nil) =\n%+v\nDefaultConfig() =\n%+v", c, want)
	}
	if c.NodeID != 1 || c.Topics.NumPartitions != 1 || c.Topics.DefaultReplicationFactor != 1 || !c.Topics.AutoCreateEnable ||
		c.Topics.MessageMaxBytes != 1048588 || c.Network.SocketRequestMaxBytes != 104857600 || c.Etcd.Prefix != "/strait" ||
		c.Etcd.DataDir != "/tmp/strait-logs/etcd" || len(c.Etcd.Endpoints) != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	if got := c.Network.Listeners; len(got) != 1 || got[0] != (Listener{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"}) {
		t.Fatalf("listeners = %+v", got)
	}
	ld := c.Log.Defaults
	wantLD := storage.LogConfig{
		SegmentBytes: 1 << 30, SegmentMs: 604800000, SegmentIndexBytes: 10485760, IndexIntervalBytes: 4096,
		MaxMessageBytes: 1048588, TimestampType: storage.CreateTime, RetentionMs: 604800000, RetentionBytes: -1,
		FlushMessages: math.MaxInt64, FlushMs: math.MaxInt64, Delete: true,
		MinCleanableDirtyRatio: 0.5, MaxCompactionLagMs: math.MaxInt64, DeleteRetentionMs: 86400000,
		TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: 3600000, FileDeleteDelayMs: 60000,
		ProducerIDExpirationMs: 86400000,
		CompressionType:        "producer", GzipLevel: -1, LZ4Level: 9, ZstdLevel: 3,
	}
	if ld != wantLD {
		t.Fatalf("LogDefaults = %+v, want %+v", ld, wantLD)
	}
}

// A Kafka 4 KRaft combined-mode server.properties, as shipped in config/server.properties.
var kafkaServerProperties = map[string]string{
	"process.roles":                                    "broker,controller",
	"node.id":                                          "1",
	"controller.quorum.bootstrap.servers":              "localhost:9093",
	"controller.quorum.voters":                         "1@localhost:9093",
	"listeners":                                        "PLAINTEXT://:9092,CONTROLLER://:9093",
	"inter.broker.listener.name":                       "PLAINTEXT",
	"advertised.listeners":                             "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
	"controller.listener.names":                        "CONTROLLER",
	"listener.security.protocol.map":                   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
	"num.network.threads":                              "3",
	"num.io.threads":                                   "8",
	"socket.send.buffer.bytes":                         "102400",
	"socket.receive.buffer.bytes":                      "102400",
	"socket.request.max.bytes":                         "104857600",
	"log.dirs":                                         "/tmp/kraft-combined-logs",
	"num.partitions":                                   "3",
	"num.recovery.threads.per.data.dir":                "1",
	"offsets.topic.replication.factor":                 "1",
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
	"transaction.state.log.replication.factor":         "1",
	"transaction.state.log.min.isr":                    "1",
	"log.retention.hours":                              "168",
	"log.segment.bytes":                                "1073741824",
	"log.retention.check.interval.ms":                  "300000",
	"group.initial.rebalance.delay.ms":                 "0",
}

func TestParseConfigKafkaServerProperties(t *testing.T) {
	c, warnings := mustParse(t, kafkaServerProperties)
	if len(warnings) != 0 {
		t.Fatalf("a stock server.properties gave warnings: %v", warnings)
	}
	// The CONTROLLER listener is Kafka's KRaft quorum: Strait leaves it out.
	wantL := []Listener{{"PLAINTEXT", "", 9092, "PLAINTEXT"}}
	if !reflect.DeepEqual(c.Network.Listeners, wantL) {
		t.Fatalf("Listeners = %+v, want %+v", c.Network.Listeners, wantL)
	}
	wantA := []Listener{{"PLAINTEXT", "localhost", 9092, "PLAINTEXT"}}
	if !reflect.DeepEqual(c.Network.Advertised, wantA) {
		t.Fatalf("AdvertisedListeners = %+v, want %+v", c.Network.Advertised, wantA)
	}
	if !reflect.DeepEqual(c.Network.ControllerListenerNames, []string{"CONTROLLER"}) || c.Network.InterBrokerListenerName != "PLAINTEXT" {
		t.Fatalf("controller names %v, inter-broker %q", c.Network.ControllerListenerNames, c.Network.InterBrokerListenerName)
	}
	if c.Topics.NumPartitions != 3 || !reflect.DeepEqual(c.Log.Dirs, []string{"/tmp/kraft-combined-logs"}) ||
		c.Etcd.DataDir != "/tmp/kraft-combined-logs/etcd" {
		t.Fatalf("parsed %+v", c)
	}
	if c.Props["num.io.threads"] != "8" {
		t.Fatalf("Props not kept: %v", c.Props)
	}
	// Props is a copy: changing the input does not change the config.
	in := map[string]string{"num.partitions": "2"}
	c2, _ := mustParse(t, in)
	in["num.partitions"] = "5"
	if c2.Props["num.partitions"] != "2" {
		t.Fatal("Props aliases the input map")
	}
}

func TestParseConfigKRaftDefaultControllerProtocol(t *testing.T) {
	// Without listener.security.protocol.map, controller listener names map to PLAINTEXT.
	c, _ := mustParse(t, map[string]string{
		"listeners":                 "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.listener.names": "CONTROLLER",
	})
	if len(c.Network.Listeners) != 1 || c.Network.Listeners[0].Name != "PLAINTEXT" || c.Network.Listeners[0].Port != 0 {
		t.Fatalf("Listeners = %+v", c.Network.Listeners)
	}
}

func TestParseConfigUnknownKeyWarns(t *testing.T) {
	c, warnings := mustParse(t, map[string]string{
		"no.such.key":                   "1",
		"another.unknown":               "x",
		"listener.name.plaintext.foo":   "bar", // per-listener overrides are not unknown
		"etcd.endpoints":                "http://a:2379, http://b:2379",
		"etcd.prefix":                   "/p",
		"etcd.data.dir":                 "/var/etcd",
		"num.replica.fetchers":          "2",
		"transaction.state.log.min.isr": "1",
	})
	want := []string{
		"The configuration 'another.unknown' was supplied but isn't a known config.",
		"The configuration 'no.such.key' was supplied but isn't a known config.",
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Fatalf("warnings = %q, want %q", warnings, want)
	}
	if !reflect.DeepEqual(c.Etcd.Endpoints, []string{"http://a:2379", "http://b:2379"}) || c.Etcd.Prefix != "/p" || c.Etcd.DataDir != "/var/etcd" {
		t.Fatalf("etcd: %v %q %q", c.Etcd.Endpoints, c.Etcd.Prefix, c.Etcd.DataDir)
	}
}

func TestParseConfigValues(t *testing.T) {
	c, _ := mustParse(t, map[string]string{
		"broker.id":                  "7",
		"num.partitions":             " 4 ",
		"default.replication.factor": "3",
		"auto.create.topics.enable":  "FALSE",
		"message.max.bytes":          "2000000",
		"socket.request.max.bytes":   "5000000",
		"broker.rack":                "r1",
		"log.dir":                    "/a",
		"min.insync.replicas":        "2",
		"compression.type":           "zstd",
	})
	if c.NodeID != 7 || c.Topics.NumPartitions != 4 || c.Topics.DefaultReplicationFactor != 3 || c.Topics.AutoCreateEnable ||
		c.Topics.MessageMaxBytes != 2000000 || c.Log.Defaults.MaxMessageBytes != 2000000 || c.Network.SocketRequestMaxBytes != 5000000 ||
		c.Rack != "r1" || !reflect.DeepEqual(c.Log.Dirs, []string{"/a"}) || c.Etcd.DataDir != "/a/etcd" ||
		c.Topics.MinInsyncReplicas != 2 || c.Topics.CompressionType != "zstd" {
		t.Fatalf("parsed %+v", c)
	}
	// log.dirs wins over log.dir.
	c, _ = mustParse(t, map[string]string{"log.dir": "/a", "log.dirs": "/b, /c"})
	if !reflect.DeepEqual(c.Log.Dirs, []string{"/b", "/c"}) {
		t.Fatalf("LogDirs = %v", c.Log.Dirs)
	}
}

func TestParseConfigLogDefaults(t *testing.T) {
	cases := []struct {
		props map[string]string
		check func(storage.LogConfig) bool
	}{
		{map[string]string{"log.retention.hours": "1"}, func(l storage.LogConfig) bool { return l.RetentionMs == 3600000 }},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"}, func(l storage.LogConfig) bool { return l.RetentionMs == 120000 }},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, func(l storage.LogConfig) bool { return l.RetentionMs == 5 }},
		{map[string]string{"log.retention.ms": "-1"}, func(l storage.LogConfig) bool { return l.RetentionMs == -1 }},
		{map[string]string{"log.retention.hours": "-5"}, func(l storage.LogConfig) bool { return l.RetentionMs == -1 }},
		{map[string]string{"log.retention.bytes": "12345"}, func(l storage.LogConfig) bool { return l.RetentionBytes == 12345 }},
		{map[string]string{}, func(l storage.LogConfig) bool { return l.MaxDecompressedBatchBytes == 0 }},
		{map[string]string{"strait.max.decompressed.batch.bytes": "268435456"}, func(l storage.LogConfig) bool { return l.MaxDecompressedBatchBytes == 256<<20 }},
		{map[string]string{"log.roll.hours": "2"}, func(l storage.LogConfig) bool { return l.SegmentMs == 7200000 }},
		{map[string]string{"log.roll.hours": "2", "log.roll.ms": "1000"}, func(l storage.LogConfig) bool { return l.SegmentMs == 1000 }},
		{map[string]string{"log.segment.bytes": "1048576"}, func(l storage.LogConfig) bool { return l.SegmentBytes == 1048576 }},
		{map[string]string{"log.index.size.max.bytes": "4096"}, func(l storage.LogConfig) bool { return l.SegmentIndexBytes == 4096 }},
		{map[string]string{"log.index.interval.bytes": "1"}, func(l storage.LogConfig) bool { return l.IndexIntervalBytes == 1 }},
		{map[string]string{"log.flush.interval.messages": "10"}, func(l storage.LogConfig) bool { return l.FlushMessages == 10 }},
		{map[string]string{"log.flush.scheduler.interval.ms": "50"}, func(l storage.LogConfig) bool { return l.FlushMs == 50 }},
		{map[string]string{"log.flush.scheduler.interval.ms": "50", "log.flush.interval.ms": "20"}, func(l storage.LogConfig) bool { return l.FlushMs == 20 }},
		{map[string]string{"log.message.timestamp.type": "LogAppendTime"}, func(l storage.LogConfig) bool { return l.TimestampType == storage.LogAppendTime }},
		{map[string]string{"log.cleanup.policy": "compact, delete"}, func(l storage.LogConfig) bool { return l.Compact }},
		{map[string]string{"log.cleanup.policy": "delete"}, func(l storage.LogConfig) bool { return !l.Compact }},
	}
	for _, tc := range cases {
		c, _ := mustParse(t, tc.props)
		if !tc.check(c.Log.Defaults) {
			t.Errorf("%v: LogDefaults = %+v", tc.props, c.Log.Defaults)
		}
	}
	c, _ := mustParse(t, map[string]string{"log.message.timestamp.before.max.ms": "10", "log.message.timestamp.after.max.ms": "20"})
	if c.Log.Defaults.TimestampBeforeMaxMs != 10 || c.Log.Defaults.TimestampAfterMaxMs != 20 {
		t.Fatalf("timestamp bounds %d %d", c.Log.Defaults.TimestampBeforeMaxMs, c.Log.Defaults.TimestampAfterMaxMs)
	}
	if d := Default(); d.Log.Defaults.TimestampBeforeMaxMs != math.MaxInt64 || d.Log.Defaults.TimestampAfterMaxMs != 3600000 {
		t.Fatalf("timestamp bound defaults %d %d", d.Log.Defaults.TimestampBeforeMaxMs, d.Log.Defaults.TimestampAfterMaxMs)
	}
}

func TestParseConfigInvalid(t *testing.T) {
	cases := []struct {
		props map[string]string
		key   string
		msg   string
	}{
		{map[string]string{"num.partitions": "abc"}, "num.partitions", "Invalid value abc for configuration num.partitions: Not a number of type INT"},
		{map[string]string{"num.partitions": "0"}, "num.partitions", "Invalid value 0 for configuration num.partitions: Value must be at least 1"},
		{map[string]string{"num.io.threads": "many"}, "num.io.threads", "Invalid value many for configuration num.io.threads: Not a number of type INT"},
		{map[string]string{"log.retention.ms": "9223372036854775808"}, "log.retention.ms", "Invalid value 9223372036854775808 for configuration log.retention.ms: Not a number of type LONG"},
		{map[string]string{"auto.create.topics.enable": "yes"}, "auto.create.topics.enable", "Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"},
		{map[string]string{"node.id": "-1"}, "node.id", "Invalid value -1 for configuration node.id: Value must be at least 0"},
		{map[string]string{"strait.max.decompressed.batch.bytes": "-1"}, "strait.max.decompressed.batch.bytes", "Invalid value -1 for configuration strait.max.decompressed.batch.bytes: Value must be at least 0"},
		{map[string]string{"node.id": "1", "broker.id": "2"}, "node.id", "You must set `node.id` to the same value as `broker.id`."},
		{map[string]string{"log.segment.bytes": "1000"}, "log.segment.bytes", "Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576"},
		{map[string]string{"log.retention.ms": "0"}, "log.retention.ms", "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{map[string]string{"log.roll.ms": "0"}, "log.roll.ms", "log.roll.ms must be greater than or equal to 1"},
		{map[string]string{"log.cleanup.policy": "delete,shred"}, "log.cleanup.policy", "Invalid value shred for configuration log.cleanup.policy: String must be one of: compact, delete"},
		{map[string]string{"log.message.timestamp.type": "createtime"}, "log.message.timestamp.type", "Invalid value createtime for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{map[string]string{"compression.type": "brotli"}, "compression.type", "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{map[string]string{"log.dirs": " , "}, "log.dirs", "At least one log directory must be defined via log.dirs or log.dir."},
		{map[string]string{"socket.request.max.bytes": "0"}, "socket.request.max.bytes", "Invalid value 0 for configuration socket.request.max.bytes: Value must be at least 1"},
		// Listeners.
		{map[string]string{"listeners": "localhost:9092"}, "listeners", "Invalid value localhost:9092 for configuration listeners: Unable to parse localhost:9092 to a broker endpoint"},
		{map[string]string{"listeners": "FOO://:9092"}, "listeners", "Invalid value FOO://:9092 for configuration listeners: No security protocol defined for listener FOO"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,plaintext://:9093"}, "listeners",
			"Invalid value PLAINTEXT://:9092,plaintext://:9093 for configuration listeners: Each listener must have a different name, listeners: PLAINTEXT://:9092,plaintext://:9093"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "listeners",
			"Invalid value PLAINTEXT://:9092,SSL://:9092 for configuration listeners: Each listener must have a different port, listeners: PLAINTEXT://:9092,SSL://:9092"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://10.0.0.1:9092"}, "listeners",
			"Invalid value PLAINTEXT://127.0.0.1:9092,SSL://10.0.0.1:9092 for configuration listeners: If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: PLAINTEXT://127.0.0.1:9092,SSL://10.0.0.1:9092, port: 9092"},
		{map[string]string{"listeners": "PLAINTEXT://:99999"}, "listeners", "Invalid value PLAINTEXT://:99999 for configuration listeners: Invalid port 99999 in PLAINTEXT://:99999"},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:TLS"}, "listener.security.protocol.map", "Invalid security protocol `TLS` defined in listener.security.protocol.map"},
		{map[string]string{"listeners": "INTERNAL://:9092", "listener.security.protocol.map": "INTERNAL:PLAINTEXT"}, "inter.broker.listener.name",
			"inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are INTERNAL"},
		{map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "advertised.listeners",
			"advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."},
		{map[string]string{"advertised.listeners": "PLAINTEXT://h:9092,SSL://h:9093"}, "advertised.listeners",
			"advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found PLAINTEXT,SSL. The valid options based on the current configuration are PLAINTEXT"},
		{map[string]string{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "inter.broker.listener.name",
			"Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."},
		{map[string]string{"etcd.prefix": "strait"}, "etcd.prefix", "Invalid value strait for configuration etcd.prefix: Value must start with /"},
	}
	for _, tc := range cases {
		ce := parseErr(t, tc.props)
		if ce.Key != tc.key || ce.Error() != tc.msg {
			t.Errorf("%v:\n got key %q: %s\nwant key %q: %s", tc.props, ce.Key, ce.Error(), tc.key, tc.msg)
		}
	}
}

func TestParseListeners(t *testing.T) {
	c, _ := mustParse(t, map[string]string{
		"listeners":                      "internal://0.0.0.0:0 , EXTERNAL://[::1]:9094,PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092",
		"advertised.listeners":           "INTERNAL://broker1:0,EXTERNAL://example.com:19094",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT, EXTERNAL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL",
		"inter.broker.listener.name":     "internal",
		// EXTERNAL is SASL_SSL: Kafka's default mechanism (GSSAPI) is refused.
		"listener.name.external.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.external.plain.sasl.jaas.config":  "org.apache.kafka.common.security.plain.PlainLoginModule required;",
	})
	want := []Listener{
		{"INTERNAL", "0.0.0.0", 0, "PLAINTEXT"},
		{"EXTERNAL", "::1", 9094, "SASL_SSL"},
		{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"},
		{"SSL", "::1", 9092, "SSL"}, // one IPv4 and one IPv6 listener may share a port
	}
	if !reflect.DeepEqual(c.Network.Listeners, want) {
		t.Fatalf("Listeners = %+v\nwant %+v", c.Network.Listeners, want)
	}
	wantA := []Listener{{"INTERNAL", "broker1", 0, "PLAINTEXT"}, {"EXTERNAL", "example.com", 19094, "SASL_SSL"}}
	if !reflect.DeepEqual(c.Network.Advertised, wantA) {
		t.Fatalf("AdvertisedListeners = %+v", c.Network.Advertised)
	}
	if c.Network.InterBrokerListenerName != "INTERNAL" {
		t.Fatalf("InterBrokerListenerName = %q", c.Network.InterBrokerListenerName)
	}
	if s := c.Network.Listeners[1].String(); s != "EXTERNAL://[::1]:9094" {
		t.Fatalf("String() = %q", s)
	}
	// Several port-0 listeners are fine: each gets its own port.
	mustParse(t, map[string]string{"listeners": "PLAINTEXT://:0,SSL://:0"})
	// Advertised listeners may share ports (different hosts behind a proxy).
	mustParse(t, map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093", "advertised.listeners": "PLAINTEXT://a:9092,SSL://b:9092"})
}

func TestValidateTopicConfigs(t *testing.T) {
	ok := map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1", "segment.bytes": "1048576",
		"segment.ms": "1", "max.message.bytes": "0", "message.timestamp.type": "LogAppendTime", "min.insync.replicas": "2",
		"compression.type": "lz4", "compression.gzip.level": "-1", "compression.zstd.level": "-5",
		"message.timestamp.before.max.ms": "0", "message.timestamp.after.max.ms": "100",
		"leader.replication.throttled.replicas": "0:1, 1:2", "follower.replication.throttled.replicas": "*",
		"min.cleanable.dirty.ratio": "0.5", "unclean.leader.election.enable": "true", "flush.messages": "1", "flush.ms": "0",
	}
	if err := ValidateTopicConfigs(ok); err != nil {
		t.Fatalf("valid configs rejected: %v", err)
	}
	if err := ValidateTopicConfigs(nil); err != nil {
		t.Fatalf("nil configs rejected: %v", err)
	}
	cases := []struct {
		configs map[string]string
		msg     string
	}{
		{map[string]string{"retention.ms": "1000", "bogus": "1"}, "Unknown topic config name: bogus"},
		{map[string]string{"log.retention.ms": "1000"}, "Unknown topic config name: log.retention.ms"},
		{map[string]string{"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{map[string]string{"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{map[string]string{"segment.bytes": "100"}, "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"},
		{map[string]string{"segment.bytes": "3000000000"}, "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT"},
		{map[string]string{"cleanup.policy": "compact,Delete"}, "Invalid value Delete for configuration cleanup.policy: String must be one of: compact, delete"},
		{map[string]string{"message.timestamp.type": "Now"}, "Invalid value Now for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{map[string]string{"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{map[string]string{"unclean.leader.election.enable": "1"}, "Invalid value 1 for configuration unclean.leader.election.enable: Expected value to be either true or false"},
		{map[string]string{"compression.gzip.level": "0"}, "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{map[string]string{"compression.lz4.level": "18"}, "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"},
		{map[string]string{"min.cleanable.dirty.ratio": "1.5"}, "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{map[string]string{"leader.replication.throttled.replicas": "a:b"}, "Invalid value [a:b] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"},
		// Definition order decides which of several bad values is reported.
		{map[string]string{"retention.ms": "x", "segment.ms": "y"}, "Invalid value y for configuration segment.ms: Not a number of type LONG"},
	}
	for _, tc := range cases {
		err := ValidateTopicConfigs(tc.configs)
		if err == nil {
			t.Errorf("%v accepted", tc.configs)
			continue
		}
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%v: error %v does not wrap kerr.InvalidConfig", tc.configs, err)
		}
		var te *TopicConfigError
		if !errors.As(err, &te) || te.Err != kerr.InvalidConfig {
			t.Errorf("%v: error %T", tc.configs, err)
		}
		if err.Error() != tc.msg {
			t.Errorf("%v:\n got %s\nwant %s", tc.configs, err.Error(), tc.msg)
		}
	}
}

func TestTopicLogConfig(t *testing.T) {
	c, _ := mustParse(t, map[string]string{"log.retention.hours": "1", "log.cleanup.policy": "compact", "message.max.bytes": "5000"})
	lc, err := c.TopicLogConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if lc != c.Log.Defaults || lc.RetentionMs != 3600000 || !lc.Compact || lc.MaxMessageBytes != 5000 {
		t.Fatalf("no topic configs: %+v, defaults %+v", lc, c.Log.Defaults)
	}
	lc, err = c.TopicLogConfig(map[string]string{
		"segment.bytes": "2097152", "segment.ms": "1000", "segment.index.bytes": "8192", "index.interval.bytes": "100",
		"max.message.bytes": "300", "message.timestamp.type": "LogAppendTime", "retention.ms": "-1", "retention.bytes": "999",
		"flush.messages": "7", "flush.ms": "8", "cleanup.policy": "delete",
		"segment.jitter.ms": "500", "preallocate": "true", "compression.type": "zstd", "compression.gzip.level": "2", "compression.lz4.level": "3", "compression.zstd.level": "-4",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := storage.DefaultLogConfig()
	want.SegmentBytes, want.SegmentMs, want.SegmentIndexBytes, want.IndexIntervalBytes = 2097152, 1000, 8192, 100
	want.MaxMessageBytes, want.TimestampType, want.RetentionMs, want.RetentionBytes = 300, storage.LogAppendTime, -1, 999
	want.FlushMessages, want.FlushMs, want.Compact, want.Delete = 7, 8, false, true
	want.SegmentJitterMs, want.Preallocate = 500, true
	want.CompressionType, want.GzipLevel, want.LZ4Level, want.ZstdLevel = "zstd", 2, 3, -4
	if lc != want {
		t.Fatalf("TopicLogConfig = %+v\nwant %+v", lc, want)
	}
	if _, err := c.TopicLogConfig(map[string]string{"retention.ms": "soon"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("bad topic config: err = %v", err)
	}
	n, err := c.TopicMinInsyncReplicas(map[string]string{"min.insync.replicas": "2"})
	if err != nil || n != 2 {
		t.Fatalf("TopicMinInsyncReplicas = %d, %v", n, err)
	}
	if n, _ := c.TopicMinInsyncReplicas(nil); n != 1 {
		t.Fatalf("TopicMinInsyncReplicas default = %d", n)
	}
}

func TestKnownKeysCoverTopicSynonyms(t *testing.T) {
	// Every broker-level synonym Strait reads must be a known key, or Parse
	// would warn about keys it uses.
	for _, k := range []string{
		"node.id", "broker.id", "listeners", "advertised.listeners", "listener.security.protocol.map", "log.dirs", "log.dir",
		"num.partitions", "default.replication.factor", "auto.create.topics.enable", "message.max.bytes",
		"socket.request.max.bytes", "broker.rack", "log.segment.bytes", "log.roll.ms", "log.roll.hours",
		"log.index.size.max.bytes", "log.index.interval.bytes", "log.retention.ms", "log.retention.minutes",
		"log.retention.hours", "log.retention.bytes", "log.flush.interval.messages", "log.flush.interval.ms",
		"log.flush.scheduler.interval.ms", "log.message.timestamp.type", "log.cleanup.policy", "min.insync.replicas",
		"compression.type", "controller.listener.names", "inter.broker.listener.name", "security.inter.broker.protocol",
		"log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
	} {
		if _, ok := knownBrokerKeys[k]; !ok {
			t.Errorf("%s is not in knownBrokerKeys", k)
		}
	}
	// Every topic validator belongs to a topic key of the catalog.
	for name := range topicValidators {
		if !IsTopicKey(name) {
			t.Errorf("topicValidators has %s, which is not a topic key of Kafka %s", name, kafkaVersionOfCatalog)
		}
	}
}

// logField reads an int64 field of storage.LogConfig by name; ok is false while
// storage.LogConfig does not have it.
func logField(lc storage.LogConfig, name string) (int64, bool) {
	f := reflect.ValueOf(lc).FieldByName(name)
	if !f.IsValid() {
		return 0, false
	}
	return f.Int(), true
}

func TestLogConfigPendingFields(t *testing.T) {
	check := func(what string, lc storage.LogConfig, name string, want int64) {
		t.Helper()
		if got, ok := logField(lc, name); ok && got != want {
			t.Errorf("%s: %s = %d, want %d", what, name, got, want)
		}
	}
	d := Default().Log.Defaults
	check("default", d, "TimestampBeforeMaxMs", math.MaxInt64)
	check("default", d, "TimestampAfterMaxMs", 3600000)
	check("default", d, "FileDeleteDelayMs", 60000)

	c, _ := mustParse(t, map[string]string{
		"log.message.timestamp.before.max.ms": "11", "log.message.timestamp.after.max.ms": "22", "log.segment.delete.delay.ms": "33",
	})
	check("broker", c.Log.Defaults, "TimestampBeforeMaxMs", 11)
	check("broker", c.Log.Defaults, "TimestampAfterMaxMs", 22)
	check("broker", c.Log.Defaults, "FileDeleteDelayMs", 33)

	lc, err := c.TopicLogConfig(map[string]string{
		"message.timestamp.before.max.ms": "44", "message.timestamp.after.max.ms": "55", "file.delete.delay.ms": "66",
	})
	if err != nil {
		t.Fatal(err)
	}
	check("topic", lc, "TimestampBeforeMaxMs", 44)
	check("topic", lc, "TimestampAfterMaxMs", 55)
	check("topic", lc, "FileDeleteDelayMs", 66)

	if _, _, err := Parse(map[string]string{"log.segment.delete.delay.ms": "-1"}); err == nil ||
		err.Error() != "Invalid value -1 for configuration log.segment.delete.delay.ms: Value must be at least 0" {
		t.Fatalf("negative delete delay: %v", err)
	}
}

// log.roll.jitter.ms wins over log.roll.jitter.hours, as
// KafkaConfig.logRollTimeJitterMillis; the topic's segment.jitter.ms over both.
func TestRollJitterSynonyms(t *testing.T) {
	c, _ := mustParse(t, map[string]string{"log.roll.jitter.hours": "2"})
	if c.Log.Defaults.SegmentJitterMs != 7200000 {
		t.Fatalf("hours: %d", c.Log.Defaults.SegmentJitterMs)
	}
	c, _ = mustParse(t, map[string]string{"log.roll.jitter.hours": "2", "log.roll.jitter.ms": "1234"})
	if c.Log.Defaults.SegmentJitterMs != 1234 {
		t.Fatalf("ms: %d", c.Log.Defaults.SegmentJitterMs)
	}
	lc, err := c.TopicLogConfig(map[string]string{"segment.jitter.ms": "99"})
	if err != nil || lc.SegmentJitterMs != 99 {
		t.Fatalf("topic: %d, %v", lc.SegmentJitterMs, err)
	}
}

// The keys that act on the log take a dynamic broker change too, as Kafka's
// DynamicLogConfig: compression.type and its levels, the roll jitter,
// preallocate.
func TestDynamicLogKeysThatAct(t *testing.T) {
	static, _ := mustParse(t, nil)
	layers := NewLayers(static, map[string]string{"compression.type": "gzip", "compression.gzip.level": "4"},
		map[string]string{"log.roll.jitter.ms": "250", "log.preallocate": "true"})
	got, err := static.WithDynamic(layers)
	if err != nil {
		t.Fatal(err)
	}
	ld := got.Log.Defaults
	if ld.CompressionType != "gzip" || ld.GzipLevel != 4 || ld.SegmentJitterMs != 250 || !ld.Preallocate {
		t.Fatalf("dynamic: compression %s level %d, jitter %d, preallocate %v", ld.CompressionType, ld.GzipLevel, ld.SegmentJitterMs, ld.Preallocate)
	}
}
