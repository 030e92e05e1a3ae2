package main

// The property layers strait adds itself: --test-defaults, --ephemeral's
// directories, and the per-broker properties of strait cluster.

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strait/strait/internal/freeport"
)

// maxClusterSize bounds strait cluster -n: each broker is a whole broker
// with its own etcd member.
const maxClusterSize = 9

// testDefaults are --test-defaults' properties for a process of n brokers:
// what testcontainers' Kafka modules set (no rebalance delay, one partition
// and replication factor 1 for the internal topics), and group session
// timeouts a test may shorten. Only keys Strait reads.
func testDefaults(n int) map[string]string {
	rf := min(n, 3)
	minISR := 1
	if n >= 3 {
		minISR = 2 // Kafka's default, once there are 3 replicas
	}
	return map[string]string{
		"group.initial.rebalance.delay.ms":         "0",
		"offsets.topic.num.partitions":             "1",
		"offsets.topic.replication.factor":         strconv.Itoa(rf),
		"transaction.state.log.num.partitions":     "1",
		"transaction.state.log.replication.factor": strconv.Itoa(rf),
		"transaction.state.log.min.isr":            strconv.Itoa(minISR),
		// A classic consumer may ask for a session as short as this
		// (Kafka: 6 s), so a test sees a dead member leave quickly.
		"group.min.session.timeout.ms": "250",
		// KIP-848 consumers heartbeat this often (Kafka: 5 s): an
		// assignment reaches them sooner.
		"group.consumer.heartbeat.interval.ms": "500",
	}
}

// applyTestDefaults sets each test default that props do not set already:
// the configuration's own values win.
func applyTestDefaults(props map[string]string, n int) {
	for k, v := range testDefaults(n) {
		if _, ok := props[k]; !ok {
			props[k] = v
		}
	}
}

// ephemeralProps puts the log dir and the embedded etcd's data under tmp.
func ephemeralProps(props map[string]string, tmp string) {
	delete(props, "log.dir")
	props["log.dirs"] = filepath.Join(tmp, "logs")
	props["etcd.data.dir"] = filepath.Join(tmp, "etcd")
}

// clusterProps returns the properties of n brokers over base: node.id 1 to
// n, a listener on a free loopback port, directories under tmp, and
// embedded etcd members b1..bn forming one cluster on free loopback peer
// ports (below the ephemeral range: internal/freeport).
func clusterProps(base map[string]string, n int, tmp string) ([]map[string]string, error) {
	if base["etcd.endpoints"] != "" {
		return nil, fmt.Errorf("strait cluster embeds its etcd members: etcd.endpoints is set")
	}
	ports, err := freeport.Ports(n)
	if err != nil {
		return nil, err
	}
	peers := make([]string, n)
	initial := make([]string, n)
	for i := range n {
		peers[i] = "http://127.0.0.1:" + strconv.Itoa(ports[i])
		initial[i] = fmt.Sprintf("b%d=%s", i+1, peers[i])
	}
	out := make([]map[string]string, n)
	for i := range n {
		p := maps.Clone(base)
		delete(p, "broker.id")
		delete(p, "advertised.listeners")
		delete(p, "listener.security.protocol.map")
		delete(p, "inter.broker.listener.name")
		delete(p, "security.inter.broker.protocol")
		dir := filepath.Join(tmp, "broker-"+strconv.Itoa(i+1))
		ephemeralProps(p, dir)
		p["node.id"] = strconv.Itoa(i + 1)
		p["listeners"] = "PLAINTEXT://127.0.0.1:0"
		delete(p, "etcd.initial.advertise.peer.urls")
		delete(p, "etcd.initial.cluster.state")
		if n > 1 { // one member needs no peers, and starts and stops faster without
			p["etcd.name"] = fmt.Sprintf("b%d", i+1)
			p["etcd.initial.cluster"] = strings.Join(initial, ",")
			p["etcd.listen.peer.urls"] = peers[i]
		}
		out[i] = p
	}
	return out, nil
}
