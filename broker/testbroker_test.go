package broker

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/freeport"
)

// Helpers of the internal tests (package broker) that start brokers: one
// broker, or n brokers whose embedded etcd members form one etcd cluster,
// and that watch Err. The external tests (package broker_test) cannot see
// these; theirs is startBroker in integration_test.go.

// testProps is a listener on a free port of 127.0.0.1 with layers over it,
// a later layer winning over an earlier one.
func testProps(layers ...map[string]string) map[string]string {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}
	for _, l := range layers {
		maps.Copy(props, l)
	}
	return props
}

// newTestServer parses props and makes a broker of them, not started.
func newTestServer(t *testing.T, props map[string]string) (*Server, config.Config) {
	t.Helper()
	cfg, _, err := config.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, cfg
}

// startTestBroker starts one broker listening on a free port of 127.0.0.1,
// with layers over that (testProps) and its logs and etcd in a new
// temporary directory unless a layer sets log.dirs. It is closed when the
// test ends, before that directory is removed (an embedded etcd whose data
// dir vanishes ends the test process); closing it earlier is the caller's
// choice (Close is idempotent).
func startTestBroker(t *testing.T, layers ...map[string]string) *Server {
	t.Helper()
	props := testProps(layers...)
	if _, ok := props["log.dirs"]; !ok {
		props["log.dirs"] = t.TempDir()
	}
	srv, _ := newTestServer(t, props)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// freeURL is http://127.0.0.1:<a free port>, for an etcd listener a test
// names (internal/freeport: a port no :0 listener is handed meanwhile).
func freeURL(t *testing.T) string {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + strconv.Itoa(ports[0])
}

// startEtcdCluster starts n brokers at once whose embedded etcd members
// form one etcd cluster: broker i+1 has node.id i+1, the etcd member b<i+1>
// on a free peer port, a listener on a free port and its own temporary log
// dir, with layers over those. If one does not start it closes them all and
// fails the test; else closing them is the caller's. It returns the brokers
// and their configs.
func startEtcdCluster(t *testing.T, n int, layers ...map[string]string) ([]*Server, []config.Config) {
	t.Helper()
	peers := make([]string, n)
	var initial []string
	for i := range peers {
		peers[i] = freeURL(t)
		initial = append(initial, fmt.Sprintf("b%d=%s", i+1, peers[i]))
	}
	srvs := make([]*Server, n)
	cfgs := make([]config.Config, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		member := map[string]string{
			"node.id":               fmt.Sprint(i + 1),
			"log.dirs":              t.TempDir(),
			"etcd.name":             fmt.Sprintf("b%d", i+1),
			"etcd.initial.cluster":  strings.Join(initial, ","),
			"etcd.listen.peer.urls": peers[i],
		}
		srv, cfg := newTestServer(t, testProps(append([]map[string]string{member}, layers...)...))
		srvs[i], cfgs[i] = srv, cfg
		wg.Go(func() { errs[i] = srv.Start() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, s := range srvs {
				s.Close()
			}
			t.Fatalf("broker %d: %v", i+1, err)
		}
	}
	return srvs, cfgs
}

// setForTest sets *p to v until the test ends.
func setForTest[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// awaitErr waits up to d for srv's Err and returns what it reports; the
// test fails if it reports nothing by then.
func awaitErr(t *testing.T, srv *Server, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-srv.Err():
		return err
	case <-time.After(d):
		t.Fatalf("Err did not report %s within %v", what, d)
		return nil
	}
}

// noErr fails the test if srv's Err reports now or, for d > 0, within d.
func noErr(t *testing.T, srv *Server, d time.Duration, when string) {
	t.Helper()
	select {
	case err := <-srv.Err():
		t.Fatalf("Err %s: %v", when, err)
	default:
	}
	if d <= 0 {
		return
	}
	select {
	case err := <-srv.Err():
		t.Fatalf("Err %s: %v", when, err)
	case <-time.After(d):
	}
}
