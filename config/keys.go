package config

import "maps"

// knownBrokerKeys are Apache Kafka's broker configuration keys, public and
// internal, with the type Kafka parses each as: KafkaConfig's ConfigDef as
// generated into catalog.go (ZooKeeper's keys are gone, as Kafka 4
// removed them). Strait acts on a few of them (see Parse); the rest are
// accepted, type-checked and otherwise ignored, so a stock server.properties
// gives no "unknown config" warning.
var knownBrokerKeys = func() map[string]configType {
	m := maps.Clone(internalBrokerConfigs)
	for _, k := range brokerCatalog {
		m[k.name] = k.typ
	}
	return m
}()

// straitKeys are the keys Strait adds to Kafka's.
var straitKeys = map[string]configType{
	"etcd.endpoints": typeList,   // external etcd cluster; empty = embedded etcd
	"etcd.data.dir":  typeString, // embedded etcd's data directory (default <first log dir>/etcd)
	"etcd.prefix":    typeString, // key prefix of Strait's metadata in etcd (default /strait)

	// Cap on the bytes a produced batch's records may decompress to
	// (0 = none, the default); storage.LogConfig.MaxDecompressedBatchBytes.
	"strait.max.decompressed.batch.bytes": typeLong,
	// File descriptors client connections may never take (default 256);
	// Limits.FDReserve.
	"strait.fd.reserve": typeInt,
	// Sealed segments' log files kept open while idle (default 4096);
	// Log.SegmentOpenFilesMax.
	"strait.log.segment.open.files.max": typeInt,
	// Share-partition states and state batches a broker's share
	// coordinator holds (default 2,000,000); Groups.ShareState.MaxEntries.
	"strait.share.coordinator.max.state.entries": typeLong,
	// Strait's HTTP listener (metrics, health probes); HTTP.Listener.
	"strait.http.listener": typeString,
	// The embedded etcd as one member of a cluster, in the style of etcd's
	// own flags (--name, --initial-cluster, ...); see controller.Config.
	"etcd.name":                        typeString,
	"etcd.initial.cluster":             typeString,
	"etcd.initial.cluster.state":       typeString,
	"etcd.initial.cluster.token":       typeString,
	"etcd.listen.peer.urls":            typeList,
	"etcd.initial.advertise.peer.urls": typeList,
	"etcd.listen.client.urls":          typeList,
	"etcd.advertise.client.urls":       typeList,
	"etcd.heartbeat.interval":          typeInt,
	"etcd.election.timeout":            typeInt,
	// TLS and authentication towards etcd (see etcd_security.go): the
	// embedded etcd's, named after etcd's flags, and a client's of
	// etcd.endpoints.
	"etcd.cert.file":              typeString,
	"etcd.key.file":               typeString,
	"etcd.trusted.ca.file":        typeString,
	"etcd.client.cert.auth":       typeBoolean,
	"etcd.peer.cert.file":         typeString,
	"etcd.peer.key.file":          typeString,
	"etcd.peer.trusted.ca.file":   typeString,
	"etcd.peer.client.cert.auth":  typeBoolean,
	"etcd.client.cert.file":       typeString,
	"etcd.client.key.file":        typeString,
	"etcd.client.trusted.ca.file": typeString,
	"etcd.username":               typeString,
	"etcd.password":               typePassword,
}
