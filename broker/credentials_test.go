package broker

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security"
)

// listeningPorts are the TCP ports this process listens on (Linux /proc:
// sockets in LISTEN state whose inode is one of our descriptors).
func listeningPorts(t *testing.T) map[int]bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("this test reads /proc: %v", err)
	}
	ours := map[string]bool{}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, "socket:[") {
			ours[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !ours[fields[9]] { // 0A: LISTEN
				continue
			}
			if i := strings.LastIndexByte(fields[1], ':'); i > 0 {
				if p, err := strconv.ParseInt(fields[1][i+1:], 16, 32); err == nil {
					ports[int(p)] = true
				}
			}
		}
		f.Close()
	}
	return ports
}

// A broker with the default configuration listens on its Kafka listener
// only: its embedded etcd has no client (nor peer) TCP listener; the
// broker talks to it in process. SASL mechanisms read the controller's
// credentials.
func TestDefaultBrokerHasNoEtcdListener(t *testing.T) {
	before := listeningPorts(t)
	srv := startTestBroker(t)
	defer srv.Close()
	after := listeningPorts(t)
	_, portStr, _ := net.SplitHostPort(srv.Addr())
	kafkaPort, _ := strconv.Atoi(portStr)
	if !after[kafkaPort] {
		t.Fatalf("the Kafka listener %d is not among the listening ports %v", kafkaPort, after)
	}
	for p := range after {
		if !before[p] && p != kafkaPort {
			t.Errorf("the broker listens on port %d besides its Kafka listener %d", p, kafkaPort)
		}
	}
	if u := srv.ctrl.EmbeddedClientURL(); u != "" {
		t.Errorf("embedded etcd client URL %q", u)
	}
	if _, ok := srv.credentials().(*controller.Controller); !ok {
		t.Errorf("credentials are %T, want the controller's cache", srv.credentials())
	}
	if _, ok := srv.credentials().ScramCredential(security.ScramSHA256, "nobody"); ok {
		t.Error("a credential for nobody")
	}

	// The check sees an etcd listener when one is asked for.
	withURL := startTestBroker(t, map[string]string{"etcd.listen.client.urls": "http://127.0.0.1:0"})
	defer withURL.Close()
	u := withURL.ctrl.EmbeddedClientURL()
	_, etcdPort, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatalf("client URL %q: %v", u, err)
	}
	if p, _ := strconv.Atoi(etcdPort); !listeningPorts(t)[p] {
		t.Errorf("the requested etcd client listener %s is not seen listening", u)
	}
}
