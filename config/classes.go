package config

import (
	"maps"
	"slices"
	"strings"
)

// pluginClasses are the keys that name Java classes for Kafka to load,
// with the value Kafka uses when the key is unset ("" when it loads
// nothing). Strait cannot load classes: a key set to anything else would be
// silently ignored, so it stops the broker instead (keys whose classes
// Strait does recognise, authorizer.class.name and the OAUTHBEARER
// callback handler, are checked where they are parsed; pluginClassesBuiltIn
// lists the other classes Strait implements).
var pluginClasses = map[string]string{
	"principal.builder.class":                         "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
	"client.quota.callback.class":                     "",
	"create.topic.policy.class.name":                  "",
	"alter.config.policy.class.name":                  "",
	"ssl.engine.factory.class":                        "",
	"sasl.server.callback.handler.class":              "",
	"group.streams.topology.description.plugin.class": "",
	"metric.reporters":                                "",
	"kafka.metrics.reporters":                         "",
	"replica.selector.class":                          "",
}

// pluginClassesBuiltIn are the further values a plugin class key accepts:
// Kafka's own classes whose behaviour Strait implements.
var pluginClassesBuiltIn = map[string][]string{
	// KIP-392: LeaderSelector is Kafka's explicit form of the default (the
	// leader serves every fetch); RackAwareReplicaSelector sends a
	// consumer to an in-sync replica in its rack (replication.Partition's
	// PreferredReadReplica).
	"replica.selector.class": {LeaderSelector, RackAwareReplicaSelector},
	// KIP-1331: Kafka's in-memory plugin; the group coordinator keeps the
	// streams groups' topology descriptions (coordinator/group).
	"group.streams.topology.description.plugin.class": {InMemoryTopologyDescriptionPlugin},
}

// Kafka's ReplicaSelector implementations.
const (
	LeaderSelector           = "org.apache.kafka.common.replica.LeaderSelector"
	RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
)

// InMemoryTopologyDescriptionPlugin is Kafka's StreamsGroupTopologyDescriptionPlugin
// that keeps the descriptions in the broker's memory.
const InMemoryTopologyDescriptionPlugin = "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"

// checkPluginClasses fails on the first plugin class key (in sorted order,
// so the error is stable) set to a class Strait would ignore.
func checkPluginClasses(p *props) {
	for _, key := range slices.Sorted(maps.Keys(pluginClasses)) {
		if !p.has(key) {
			continue
		}
		v := strings.TrimSpace(p.raw(key))
		if v == "" || v == pluginClasses[key] || slices.Contains(pluginClassesBuiltIn[key], v) {
			continue
		}
		p.fail(invalidValue(key, v, "Strait cannot load classes, and ignoring this one would change what the broker does; remove the key"))
		return
	}
}
