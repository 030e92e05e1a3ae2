package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
)

// How a request reaches its handler: each API's file (named after the API:
// produce.go, createtopics.go, ...; the group APIs share groups.go)
// registers its handler with the versions it serves in an init function
// beside the handler, e.g.
//
//	func init() { register(kmsg.Fetch, 4, 18, handleFetch) }
//
// That registration is the one place an API's served versions are written;
// ApiVersions answers from the table the registrations build, and the
// protocol layer refuses versions outside it. A new API is a new file with a
// handler and its registration.

// handlerFunc handles one request. It runs on the connection's read
// goroutine and must complete x exactly once, now or later.
type handlerFunc func(c *conn, x *exchange)

type handler struct {
	versions protocol.VersionRange
	fn       handlerFunc
}

// handlerTable maps API keys to their handler and served versions.
type handlerTable map[int16]handler

// registered is filled by the handler files' init functions; read-only after
// package initialisation. Handlers keep no state of their own: what they
// need per broker hangs off the Server.
var registered = handlerTable{}

// register declares that the broker serves key at versions min through max
// with fn.
func register(key kmsg.Key, min, max int16, fn handlerFunc) {
	registerVersions(key, protocol.VersionRange{Min: min, Max: max}, fn)
}

// registerAdvertised is register for an API whose ApiVersions entry starts
// at advertisedMin, below min, the lowest version served (only Produce, as
// in Kafka 4: KAFKA-18659); the protocol layer refuses the versions between.
func registerAdvertised(key kmsg.Key, advertisedMin, min, max int16, fn handlerFunc) {
	registerVersions(key, protocol.VersionRange{Min: advertisedMin, MinAccepted: min, Max: max}, fn)
}

// registerVersions records a registration. It panics, at package
// initialisation and so in every test, when key is registered twice or its
// range is empty or outside what Apache Kafka 4 serves
// (protocol.KafkaVersions): Strait never advertises a version Kafka does not.
func registerVersions(key kmsg.Key, vr protocol.VersionRange, fn handlerFunc) {
	kafka, ok := protocol.KafkaVersions[int16(key)]
	switch {
	case !ok:
		panic("broker: no Kafka version range for " + key.Name())
	case vr.Min < kafka.Min || vr.Max > kafka.Max || vr.Min > vr.Max || vr.MinAccepted > vr.Max:
		panic("broker: " + key.Name() + " registered outside Kafka's version range")
	case registered[int16(key)].fn != nil:
		panic("broker: " + key.Name() + " registered twice")
	}
	registered[int16(key)] = handler{versions: vr, fn: fn}
}

func (t handlerTable) versionTable() protocol.VersionTable {
	vt := make(protocol.VersionTable, len(t))
	for k, h := range t {
		vt[k] = h.versions
	}
	return vt
}
