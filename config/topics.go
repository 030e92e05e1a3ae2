package config

// Topic-level configs: LogConfig's keys (topicCatalog in catalog.go, the
// one list of them), their validation as Kafka validates CreateTopics and
// AlterConfigs, and a topic's log configuration resolved over the broker's
// defaults.

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/storage"
)

// compressionTypes is BrokerCompressionType.names().
var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

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

// topicValidators are LogConfig's validators of the topic keys that have
// one, applied after the type check. The keys themselves, their types and
// the order Kafka validates them in (hence which error a request with
// several bad values gets) are topicCatalog's, the one list of them.
var topicValidators = map[string]func(key, raw string) error{
	"segment.bytes":                  atLeast(minSegmentBytes),
	"segment.ms":                     atLeast(1),
	"segment.jitter.ms":              atLeast(0),
	"segment.index.bytes":            atLeast(4),
	"flush.messages":                 atLeast(1),
	"flush.ms":                       atLeast(0),
	"retention.ms":                   atLeast(-1),
	"max.message.bytes":              atLeast(0),
	"max.decompressed.message.bytes": between(1, math.MaxInt32-8),
	"index.interval.bytes":           atLeast(0),
	"delete.retention.ms":            atLeast(0),
	"min.compaction.lag.ms":          atLeast(0),
	"max.compaction.lag.ms":          atLeast(1),
	"file.delete.delay.ms":           atLeast(0),
	"min.cleanable.dirty.ratio": func(key, raw string) error {
		f, _ := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if f < 0 {
			return invalidValue(key, raw, "Value must be at least 0")
		}
		if f > 1 {
			return invalidValue(key, raw, "Value must be no more than 1")
		}
		return nil
	},
	"cleanup.policy": func(key, raw string) error {
		for _, p := range parseList(raw) {
			if err := validIn(key, p, "compact", "delete"); err != nil {
				return err
			}
		}
		return nil
	},
	"min.insync.replicas":                     atLeast(1),
	"compression.type":                        oneOf(compressionTypes...),
	"compression.gzip.level":                  validGzipLevel,
	"compression.lz4.level":                   between(1, 17),
	"compression.zstd.level":                  between(-131072, 22),
	"message.timestamp.type":                  oneOf("CreateTime", "LogAppendTime"),
	"message.timestamp.before.max.ms":         atLeast(0),
	"message.timestamp.after.max.ms":          atLeast(0),
	"leader.replication.throttled.replicas":   validThrottledReplicas,
	"follower.replication.throttled.replicas": validThrottledReplicas,
	"local.retention.ms":                      atLeast(-2),
	"local.retention.bytes":                   atLeast(-2),
	"remote.copy.lag.ms":                      atLeast(-1),
	"remote.copy.lag.bytes":                   atLeast(-1),
}

// validGzipLevel is GzipCompression's level validator: -1 (the codec's
// default) or 1-9.
func validGzipLevel(key, raw string) error {
	n, _ := strconv.Atoi(strings.TrimSpace(raw))
	if n > 9 || (n < 1 && n != -1) {
		return invalidValue(key, raw, "Value must be between 1 and 9 or equal to -1")
	}
	return nil
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

// The topic configs naming the replicas whose replication is throttled.
const (
	LeaderReplicationThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerReplicationThrottledReplicas = "follower.replication.throttled.replicas"
)

// ThrottledPartitions is Kafka's parseThrottledPartitions: of a
// *.replication.throttled.replicas value, the partitions throttled on
// broker node ("partition:node" entries), or all of them ("*"). A value
// that does not validate throttles nothing.
func ThrottledPartitions(raw string, node int32) (all bool, partitions []int32) {
	raw = strings.TrimSpace(raw)
	if raw == "" || validThrottledReplicas("", raw) != nil {
		return false, nil
	}
	list := parseList(raw)
	if strings.Join(list, "") == "*" {
		return true, nil
	}
	for _, e := range list {
		p, b, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		pi, err1 := strconv.ParseInt(p, 10, 32)
		bi, err2 := strconv.ParseInt(b, 10, 32)
		if err1 == nil && err2 == nil && int32(bi) == node {
			partitions = append(partitions, int32(pi))
		}
	}
	return false, partitions
}

// ValidateTopicConfigs checks CreateTopics (or AlterConfigs) topic configs as
// Kafka's LogConfig.validate does: names first ("Unknown topic config name: x"),
// then each value in definition order, then the cross-key rules. The error is a
// *TopicConfigError wrapping kerr.InvalidConfig.
func ValidateTopicConfigs(configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if topicCatalogByName[name] == nil {
			return &TopicConfigError{Err: kerr.InvalidConfig, Key: name, Message: "Unknown topic config name: " + name}
		}
	}
	for _, k := range topicCatalog {
		raw, ok := configs[k.name]
		if !ok {
			continue
		}
		err := checkType(k.name, raw, k.typ)
		if v := topicValidators[k.name]; err == nil && v != nil {
			err = v(k.name, raw)
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
	lc := c.Log.Defaults
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
	if v, ok := topicConfigs["preallocate"]; ok {
		lc.Preallocate = strings.EqualFold(strings.TrimSpace(v), "true")
	}
	if n, ok := num("segment.jitter.ms"); ok {
		lc.SegmentJitterMs = n
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
	if v, ok := topicConfigs["compression.type"]; ok {
		lc.CompressionType = strings.TrimSpace(v)
	}
	for key, field := range map[string]*int32{
		"compression.gzip.level": &lc.GzipLevel,
		"compression.lz4.level":  &lc.LZ4Level,
		"compression.zstd.level": &lc.ZstdLevel,
	} {
		if n, ok := num(key); ok {
			*field = int32(n)
		}
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
	return c.Topics.MinInsyncReplicas, nil
}
