package config

// Dynamic broker configs (KIP-226): what AlterConfigs may set at runtime and
// where (Validate), and the configuration a broker runs with once they are
// applied (WithDynamic).

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Replication throttle keys (QuotaConfig.brokerQuotaConfigs, part of
// DynamicConfig.Broker): LONG, at least 0, Long.MAX_VALUE by default. They
// exist only as dynamic configs: the static properties do not know them.
const (
	LeaderReplicationThrottledRate   = "leader.replication.throttled.rate"
	FollowerReplicationThrottledRate = "follower.replication.throttled.rate"
	// ReplicaAlterLogDirsIOMaxBytesPerSecond bounds the bytes copied into
	// future logs by AlterReplicaLogDirs moves (Kafka's
	// ReplicaAlterLogDirsThread quota).
	ReplicaAlterLogDirsIOMaxBytesPerSecond = "replica.alter.log.dirs.io.max.bytes.per.second"
)

var throttleRateKeys = map[string]bool{
	LeaderReplicationThrottledRate:         true,
	FollowerReplicationThrottledRate:       true,
	ReplicaAlterLogDirsIOMaxBytesPerSecond: true,
}

// IsThrottleRateKey reports whether name is one of the replication
// throttle rates, dynamic broker keys that the catalog (KafkaConfig's keys)
// does not hold.
func IsThrottleRateKey(name string) bool { return throttleRateKeys[name] }

// throttledRate is the rate key's value for this broker: its own dynamic
// config, else the cluster default's, else unlimited (Kafka's
// BrokerConfigHandler.getOrDefault).
func (b *Layers) throttledRate(key string) int64 {
	for _, m := range []map[string]string{b.DynamicBroker, b.DynamicDefault} {
		if v, ok := m[key]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
				return n
			}
		}
	}
	return math.MaxInt64
}

// dynamicLogKeys are the dynamic broker keys Strait applies at runtime
// (DynamicLogConfig's, the broker synonyms of the topic configs, and
// producer.id.expiration.ms).
var dynamicLogKeys = func() map[string]bool {
	m := map[string]bool{"producer.id.expiration.ms": true}
	for _, k := range topicCatalog {
		if k.brokerSynonym != "" {
			m[k.brokerSynonym] = true
		}
	}
	return m
}()

// dynamicConnectionKeys are the connection limits applied at runtime, with
// listener.name.<l>.max.connections (Kafka's DynamicListenerConfig and
// DynamicConnectionQuota).
var dynamicConnectionKeys = map[string]bool{"max.connections": true, "max.connections.per.ip": true}

// WithDynamic returns c with the dynamic configs of l that Strait applies at
// runtime: the static properties with the dynamic log keys on top (the
// cluster default, then this broker's), parsed once, give the new
// Log.Defaults (message timestamp bounds included), Topics.MinInsyncReplicas,
// Topics.MessageMaxBytes and the connection limits (max.connections,
// max.connections.per.ip, listener.name.<l>.max.connections), and the listeners' TLS settings when a listener's
// key or trust store was changed; the replication throttle rates are this
// broker's dynamic value, else the cluster default's; every other field
// stays c's. Without any dynamic log or store key, nothing is parsed.
func (c Config) WithDynamic(l *Layers) (Config, error) {
	c.Replication.LeaderThrottledRate = l.throttledRate(LeaderReplicationThrottledRate)
	c.Replication.FollowerThrottledRate = l.throttledRate(FollowerReplicationThrottledRate)
	c.Replication.AlterLogDirsIORate = l.throttledRate(ReplicaAlterLogDirsIOMaxBytesPerSecond)
	props := maps.Clone(c.Props)
	if props == nil {
		props = map[string]string{}
	}
	dynamic, stores := false, false
	for _, m := range []map[string]string{l.DynamicDefault, l.DynamicBroker} {
		for k, v := range m {
			if dynamicLogKeys[k] || dynamicConnectionKeys[k] {
				props[k] = v
				dynamic = true
			}
			if base, ok := listenerConfigName(k); ok && base == "max.connections" {
				props[k] = v
				dynamic = true
			}
			// A listener's key and trust stores (listener.name.<l>.ssl.keystore.*,
			// ...): Kafka reloads them without a restart.
			if base, ok := listenerConfigName(k); ok && dynamicSecurityConfigs[base] {
				props[k] = v
				stores = true
			}
		}
	}
	if !dynamic && !stores {
		return c, nil
	}
	with, _, err := Parse(props)
	if err != nil {
		return Config{}, err
	}
	out := c
	out.Log.Defaults = with.Log.Defaults
	out.Topics.MinInsyncReplicas = with.Topics.MinInsyncReplicas
	out.Topics.MessageMaxBytes = with.Topics.MessageMaxBytes
	out.Limits.MaxConnections = with.Limits.MaxConnections
	out.Limits.MaxConnectionsPerIP = with.Limits.MaxConnectionsPerIP
	out.Limits.ListenerMaxConnections = with.Limits.ListenerMaxConnections
	if stores {
		out.Security.Listeners = maps.Clone(c.Security.Listeners)
		for name, ls := range out.Security.Listeners {
			if ls.TLS != nil {
				ls.TLS = with.Security.Listeners[name].TLS
				out.Security.Listeners[name] = ls
			}
		}
	}
	return out, nil
}

// clusterLevelListenerConfigs are listener configs that may be set for the
// whole cluster even with a listener prefix.
var clusterLevelListenerConfigs = []string{"max.connections", "max.connection.creation.rate", "num.network.threads"}

// Validate is DynamicBrokerConfig.validate for an entity's whole new set of
// dynamic configs (perBrokerEntity: a broker's, else the cluster default):
// what may be set dynamically and where, the values' types and ranges, and
// the configuration the broker would run with. The error's message is
// Kafka's; Kafka answers every such failure with INVALID_REQUEST
// (KAFKA-13609).
func (b *Layers) Validate(props map[string]string, perBrokerEntity bool) error {
	names := slices.Sorted(maps.Keys(props))
	var nonDynamic, security, perBrokerOnly []string
	for _, n := range names {
		if nonDynamicBrokerConfigs[n] {
			nonDynamic = append(nonDynamic, n)
		}
		if dynamicSecurityConfigs[n] {
			security = append(security, n)
		}
		if k := brokerCatalogByName[n]; k != nil && k.mode == perBroker {
			perBrokerOnly = append(perBrokerOnly, n)
		} else if base, ok := listenerConfigName(n); ok && !slices.Contains(clusterLevelListenerConfigs, base) {
			perBrokerOnly = append(perBrokerOnly, n)
		}
	}
	if len(nonDynamic) > 0 {
		return errors.New("Cannot update these configs dynamically: " + javaSetString(nonDynamic, len(props)*4/3+1))
	}
	if len(security) > 0 {
		return errors.New("These security configs can be dynamically updated only per-listener using the listener prefix: " +
			javaSetString(security, 0))
	}
	for _, n := range names {
		base := n
		if b, ok := listenerConfigName(n); ok {
			base = b
		}
		if k := brokerCatalogByName[base]; k != nil {
			if err := checkType(base, props[n], k.typ); err != nil {
				return err
			}
		}
		if throttleRateKeys[n] {
			if err := checkType(n, props[n], typeLong); err != nil {
				return err
			}
			if v, _ := strconv.ParseInt(strings.TrimSpace(props[n]), 10, 64); v < 0 {
				return invalidValue(n, strings.TrimSpace(props[n]), "Value must be at least 0")
			}
		}
	}
	if !perBrokerEntity && len(perBrokerOnly) > 0 {
		return errors.New("Cannot update these configs at default cluster level, broker id must be specified: " +
			javaSetString(perBrokerOnly, 0))
	}
	// The configuration this broker would run with: its own dynamic
	// configs over the cluster default over the static ones.
	merged := maps.Clone(b.Static)
	if perBrokerEntity {
		maps.Copy(merged, b.DynamicDefault)
		maps.Copy(merged, props)
	} else {
		maps.Copy(merged, props)
		maps.Copy(merged, b.DynamicBroker)
	}
	if _, _, err := Parse(merged); err != nil {
		return err
	}
	return nil
}

// Key is what AlterConfigs' APPEND and SUBTRACT need of a catalog key.
type Key struct {
	List    bool    // its type is LIST
	Default *string // its default as DescribeConfigs renders it; nil: none
}

// TopicKey describes the topic config name; false if Kafka has none.
func TopicKey(name string) (Key, bool) {
	k := topicCatalogByName[name]
	if k == nil {
		return Key{}, false
	}
	return Key{List: k.typ == typeList, Default: k.def}, true
}

// BrokerKey describes the broker config name; false if Kafka has none.
func BrokerKey(name string) (Key, bool) {
	k := brokerCatalogByName[name]
	if k == nil {
		return Key{}, false
	}
	return Key{List: k.typ == typeList, Default: k.def}, true
}

// JavaSplit is Java's String.split(","): trailing empty strings dropped, but
// "" gives one empty string.
func JavaSplit(s string) []string {
	if s == "" {
		return []string{""}
	}
	parts := strings.Split(s, ",")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// javaSetString renders names as a java.util.HashSet of them prints,
// "[a, b]", in its iteration order: by hash bucket of a table of at least
// minCapacity (16 by default) grown at a load factor of 0.75. Kafka's error
// messages print such sets.
func javaSetString(names []string, minCapacity int) string {
	capacity := 16
	for capacity < minCapacity {
		capacity *= 2
	}
	for float64(len(names)) > 0.75*float64(capacity) {
		capacity *= 2
	}
	bucket := func(s string) uint32 {
		var h int32
		for _, r := range s {
			if r >= 0x10000 { // a surrogate pair in Java's UTF-16
				r -= 0x10000
				h = 31*h + int32(0xD800+(r>>10))
				h = 31*h + int32(0xDC00+(r&0x3FF))
				continue
			}
			h = 31*h + int32(r)
		}
		u := uint32(h)
		return (u ^ u>>16) & uint32(capacity-1)
	}
	sorted := slices.Clone(names)
	slices.SortStableFunc(sorted, func(a, b string) int { return int(bucket(a)) - int(bucket(b)) })
	return "[" + strings.Join(sorted, ", ") + "]"
}
