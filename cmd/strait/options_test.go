package main

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strait/strait/config"
)

func TestParseArgsTestBrokerOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want options
		err  string
	}{
		{[]string{"--ephemeral", "--test-defaults", "--ready-file", "/r"},
			options{ephemeral: true, testDefaults: true, readyFile: "/r"}, ""},
		{[]string{"--ephemeral=false", "--test-defaults=true", "--ready-file=/r"},
			options{testDefaults: true, readyFile: "/r"}, ""},
		{[]string{"--test-clock-file", "/c"}, options{testClockFile: "/c"}, ""},
		{[]string{"cluster"}, options{cluster: 3}, ""},
		{[]string{"cluster", "-n", "5", "--override", "a=1"}, options{cluster: 5, overrides: []string{"a=1"}}, ""},
		{[]string{"cluster", "--brokers=1", "s.props"}, options{cluster: 1, configFile: "s.props"}, ""},
		{[]string{"-n", "3"}, options{}, "option -n is for strait cluster"},
		{[]string{"cluster", "-n", "0"}, options{}, "wants a number of brokers from 1 to 9"},
		{[]string{"cluster", "-n", "x"}, options{}, "wants a number of brokers"},
		{[]string{"--ephemeral=maybe"}, options{}, "takes true or false"},
		{[]string{"s.props", "cluster"}, options{}, "Found non argument parameters: cluster"},
	} {
		got, err := parseArgs(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseArgs(%q) err = %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseArgs(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	var stderr syncBuffer
	run([]string{"-h"}, nil, &stderr, nil)
	for _, opt := range []string{"--config", "--override", "--log-level", "--log-format", "--ephemeral", "--test-defaults", "--ready-file", "--test-clock-file", "strait cluster", "--brokers N"} {
		if !strings.Contains(stderr.String(), opt) {
			t.Errorf("strait -h does not document %s", opt)
		}
	}
}

// TestRunTestDefaults: --test-defaults fills what the configuration leaves
// unset; the file, the environment and --override win over it.
func TestRunTestDefaults(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want func(c config.Config) bool
	}{
		{[]string{"--test-defaults"}, nil, func(c config.Config) bool {
			return c.Groups.InitialRebalanceDelay == 0 && c.Groups.OffsetsTopicPartitions == 1 &&
				c.Groups.OffsetsTopicReplication == 1 && c.Transactions.StateLogPartitions == 1 &&
				c.Transactions.StateLogReplication == 1 && c.Transactions.StateLogMinISR == 1 &&
				c.Groups.MinSessionTimeout == 250*time.Millisecond && c.Groups.ConsumerHeartbeatInterval == 500*time.Millisecond
		}},
		{[]string{"--test-defaults", "--override", "group.initial.rebalance.delay.ms=5"}, []string{"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS=7"},
			func(c config.Config) bool {
				return c.Groups.InitialRebalanceDelay == 5*time.Millisecond && c.Groups.OffsetsTopicPartitions == 7 &&
					c.Transactions.StateLogPartitions == 1
			}},
		{nil, nil, func(c config.Config) bool {
			return c.Groups.InitialRebalanceDelay == 3*time.Second && c.Groups.OffsetsTopicPartitions == 50
		}},
	} {
		srv := newFake()
		useFake(t, srv)
		var stderr syncBuffer
		signals := make(chan os.Signal, 1)
		code := runAsync(tc.args, tc.env, &stderr, signals)
		waitFor(t, "ready line", func() bool { return strings.Contains(stderr.String(), "strait ready") })
		signals <- syscall.SIGTERM
		if c := <-code; c != 0 {
			t.Fatalf("%v: exit %d:\n%s", tc.args, c, stderr.String())
		}
		if !tc.want(srv.cfg) {
			t.Errorf("%v %v: groups %+v transactions %+v", tc.args, tc.env, srv.cfg.Groups, srv.cfg.Transactions)
		}
	}
	// A cluster's internal topics are replicated up to three times.
	if d := testDefaults(3); d["offsets.topic.replication.factor"] != "3" || d["transaction.state.log.min.isr"] != "2" {
		t.Errorf("testDefaults(3) = %v", d)
	}
}

// TestRunSignalDuringStartup: a signal while Start runs stops strait with
// exit 0: after closing the broker if Start returns within the grace, else
// without waiting for it; a second signal exits 1 at once.
func TestRunSignalDuringStartup(t *testing.T) {
	setGrace := func(d time.Duration) {
		old := startupStopGrace
		startupStopGrace = d
		t.Cleanup(func() { startupStopGrace = old })
	}

	// Start returns within the grace: the broker is closed.
	setGrace(10 * time.Second)
	srv := newFake()
	srv.startGate = make(chan struct{})
	useFake(t, srv)
	var stderr syncBuffer
	signals := make(chan os.Signal, 2)
	code := runAsync(nil, nil, &stderr, signals)
	signals <- syscall.SIGTERM
	waitFor(t, "signal logged", func() bool { return strings.Contains(stderr.String(), "signal during start-up, stopping") })
	close(srv.startGate)
	if c := <-code; c != 0 || srv.closeCount() != 1 || strings.Contains(stderr.String(), "strait ready") {
		t.Fatalf("exit %d, Close called %d times:\n%s", c, srv.closeCount(), stderr.String())
	}

	// Start never returns: strait exits after the grace.
	setGrace(50 * time.Millisecond)
	srv = newFake()
	srv.startGate = make(chan struct{})
	defer close(srv.startGate)
	useFake(t, srv)
	stderr = syncBuffer{}
	code = runAsync(nil, nil, &stderr, signals)
	signals <- syscall.SIGINT
	select {
	case c := <-code:
		if c != 0 || !strings.Contains(stderr.String(), "start-up did not end in time") {
			t.Fatalf("exit %d:\n%s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
	}

	// A second signal: exit 1 at once.
	setGrace(time.Hour)
	srv2 := newFake()
	srv2.startGate = make(chan struct{})
	defer close(srv2.startGate)
	useFake(t, srv2)
	stderr = syncBuffer{}
	code = runAsync(nil, nil, &stderr, signals)
	signals <- syscall.SIGTERM
	signals <- syscall.SIGTERM
	select {
	case c := <-code:
		if c != 1 {
			t.Fatalf("exit %d:\n%s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return on the second signal")
	}
}

func TestReadyFile(t *testing.T) {
	srv := newFake() // binds 127.0.0.1:9092 and 127.0.0.1:9093
	nodes := []node{{srv: srv, cfg: config.Config{Network: config.Network{Listeners: []config.Listener{{Name: "PLAINTEXT"}, {Name: "EXTERNAL"}}}}}}
	path := filepath.Join(t.TempDir(), "ready")
	if err := writeReadyFile(path, nodes); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if want := "PLAINTEXT://127.0.0.1:9092\nEXTERNAL://127.0.0.1:9093\n"; err != nil || string(b) != want {
		t.Fatalf("ready file %q, %v; want %q", b, err, want)
	}
	if got := connectable(&net.TCPAddr{IP: net.IPv4zero, Port: 1}); got != "127.0.0.1:1" {
		t.Errorf("connectable(0.0.0.0:1) = %s", got)
	}
	if got := connectable(&net.TCPAddr{IP: net.IPv6loopback, Port: 2}); got != "[::1]:2" {
		t.Errorf("connectable([::1]:2) = %s", got)
	}
}

func TestClusterProps(t *testing.T) {
	base := map[string]string{"log.dirs": "/var/x", "advertised.listeners": "PLAINTEXT://h:1", "num.partitions": "4", "node.id": "9"}
	plans, err := clusterProps(base, 3, "/tmp/c")
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 3 {
		t.Fatalf("%d plans", len(plans))
	}
	peers := map[string]bool{}
	for i, p := range plans {
		id := string(rune('1' + i))
		if p["node.id"] != id || p["log.dirs"] != "/tmp/c/broker-"+id+"/logs" || p["etcd.data.dir"] != "/tmp/c/broker-"+id+"/etcd" ||
			p["listeners"] != "PLAINTEXT://127.0.0.1:0" || p["num.partitions"] != "4" || p["advertised.listeners"] != "" ||
			p["etcd.name"] != "b"+id || p["etcd.initial.cluster"] != plans[0]["etcd.initial.cluster"] ||
			!strings.Contains(p["etcd.initial.cluster"], "b"+id+"="+p["etcd.listen.peer.urls"]) {
			t.Errorf("broker %s: %v", id, p)
		}
		peers[p["etcd.listen.peer.urls"]] = true
		if _, _, err := config.Parse(p); err != nil {
			t.Errorf("broker %s: %v", id, err)
		}
	}
	if len(peers) != 3 || base["log.dirs"] != "/var/x" {
		t.Errorf("peers %v, base %v", peers, base)
	}
	// One broker: an embedded etcd without peers.
	one, err := clusterProps(base, 1, "/tmp/c")
	if err != nil || len(one) != 1 || one[0]["etcd.initial.cluster"] != "" || one[0]["etcd.listen.peer.urls"] != "" || one[0]["node.id"] != "1" {
		t.Errorf("cluster of one: %v %v", one, err)
	}
	if _, err := clusterProps(map[string]string{"etcd.endpoints": "http://127.0.0.1:2379"}, 3, "/tmp/c"); err == nil {
		t.Error("a cluster over an external etcd was planned")
	}
}
