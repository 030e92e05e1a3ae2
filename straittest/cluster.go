package straittest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/clock"
	"github.com/strait/strait/internal/freeport"
)

// setupTimeout bounds each wait of Start and StartCluster after the brokers
// started: the brokers seeing each other, seeded topics getting leaders.
const setupTimeout = 30 * time.Second

// portAttempts is how often Start picks new ports when one it picked was
// taken meanwhile by another process (freeport's ports are free a moment
// before the broker binds them).
const portAttempts = 3

// Cluster is one or more brokers started for a test. Its methods may be
// called from any goroutine, except those documented to fail the test,
// which follow testing.TB's rules (the test's goroutine only).
type Cluster struct {
	tb      testing.TB
	opts    options
	log     *testLog
	brokers []*Broker // by id - 1

	// etcdEndpoint and etcdPrefix locate the cluster's metadata in the
	// shared etcd (the default); empty: each broker embeds a member (WithEmbeddedEtcd).
	etcdEndpoint, etcdPrefix string

	// faults are the interceptions and isolated brokers (faults.go).
	faults faultState

	closeOnce sync.Once
	adminOnce sync.Once
	admin     *kadm.Client
	adminCl   *kgo.Client
	adminErr  error
}

// Broker is one broker of a Cluster. Its id, port and directory stay the
// same across Stop and Restart.
type Broker struct {
	c    *Cluster
	id   int32
	port int
	// peerURL is the etcd member's peer URL; empty for a single broker.
	peerURL string
	dir     string
	props   map[string]string
	disk    *Disk
	// clock is the broker's wall clock, the host's: it keeps its offset
	// across Stop and Restart (JumpClock).
	clock *clock.Offset
	// etcdProxy stands between the broker and the shared etcd
	// (nil with WithEmbeddedEtcd), for IsolateEtcd.
	etcdProxy *tcpProxy

	mu      sync.Mutex
	srv     *broker.Server // nil while stopped
	paused  bool           // between Pause and Resume (faults.go)
	etcdCut bool           // between IsolateEtcd and Heal: its metadata is stale
}

// Start starts one broker for t and returns it as a Cluster of one: see
// StartCluster.
func Start(tb testing.TB, opts ...Option) *Cluster {
	tb.Helper()
	return StartCluster(tb, 1, opts...)
}

// StartCluster starts n brokers, ids 1..n, whose embedded etcd members form
// one etcd cluster (or, by default, which share the test process's etcd),
// and returns once every broker serves, sees the others,
// and the topics of WithTopic have a leader for each partition on every
// broker. Each broker has its own temporary directory (t.TempDir) and a free
// port of 127.0.0.1 chosen up front, which it keeps across Restart. The
// brokers log through t.Log at Info (WithLogLevel) and are closed when the
// test ends (t.Cleanup). A failure to start fails the test.
func StartCluster(tb testing.TB, n int, opts ...Option) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("straittest: a cluster of %d brokers", n)
	}
	o := options{config: map[string]string{}, brokerCfg: map[int32]map[string]string{}, logLevel: slog.LevelInfo}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Cluster{tb: tb, opts: o, log: &testLog{tb: tb}}
	// The directories are removed after the brokers are closed: cleanups
	// run last registered first.
	root := tb.TempDir()
	tb.Cleanup(c.close)

	if !o.embeddedEtcd {
		endpoint, prefix, err := acquireSharedEtcd()
		if err != nil {
			tb.Fatalf("straittest: %v", err)
		}
		c.etcdEndpoint, c.etcdPrefix = endpoint, prefix
	}

	var err error
	for attempt := range portAttempts {
		dir := filepath.Join(root, "attempt"+strconv.Itoa(attempt+1))
		if err = c.setUp(n, dir); err == nil || !addrInUse(err) {
			break
		}
		tb.Logf("straittest: a port was taken meanwhile, starting again on others: %v", err)
		c.closeAll()
		c.closeProxies()
	}
	if err != nil {
		tb.Fatalf("straittest: %v", err)
	}
	if err := c.await(); err != nil {
		tb.Fatalf("straittest: %v", err)
	}
	return c
}

// setUp picks ports and directories for n brokers and starts them
// together: a broker's Start returns once its etcd member is in a cluster
// with a leader, which needs a majority of the members started.
func (c *Cluster) setUp(n int, dir string) error {
	ports, err := freeport.Ports(2 * n)
	if err != nil {
		return err
	}
	c.brokers = make([]*Broker, n)
	var initial []string
	for i := range n {
		b := &Broker{c: c, id: int32(i + 1), port: ports[i], dir: filepath.Join(dir, fmt.Sprintf("broker%d", i+1)),
			clock: clock.NewOffset()}
		if n > 1 && c.etcdEndpoint == "" {
			b.peerURL = "http://127.0.0.1:" + strconv.Itoa(ports[n+i])
			initial = append(initial, fmt.Sprintf("b%d=%s", b.id, b.peerURL))
		}
		if c.opts.faultyDisks {
			b.disk = newDisk(c.opts.powerLoss)
		}
		c.brokers[i] = b
	}
	for _, b := range c.brokers {
		// The broker does not create a missing log dir: its log-dir
		// watcher would take it for a failed disk.
		for _, d := range b.LogDirs() {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		props := Defaults(n)
		props["node.id"] = strconv.Itoa(int(b.id))
		props["listeners"] = "PLAINTEXT://127.0.0.1:" + strconv.Itoa(b.port)
		props["log.dirs"] = strings.Join(b.LogDirs(), ",")
		props["etcd.data.dir"] = filepath.Join(b.dir, "etcd")
		if c.etcdEndpoint != "" {
			p, err := newTCPProxy(strings.TrimPrefix(c.etcdEndpoint, "http://"))
			if err != nil {
				return err
			}
			b.etcdProxy = p
			props["etcd.endpoints"] = "http://" + p.addr()
			props["etcd.prefix"] = c.etcdPrefix
			delete(props, "etcd.data.dir")
			delete(props, "etcd.heartbeat.interval")
			delete(props, "etcd.election.timeout")
		} else if n > 1 {
			props["etcd.name"] = fmt.Sprintf("b%d", b.id)
			props["etcd.initial.cluster"] = strings.Join(initial, ",")
			props["etcd.listen.peer.urls"] = b.peerURL
		}
		maps.Copy(props, c.opts.config)
		maps.Copy(props, c.opts.brokerCfg[b.id])
		b.props = props
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.brokers {
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			errs[i] = b.start()
		})
		if i < n-1 && b.peerURL != "" {
			b.awaitPeerServing(done)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// awaitPeerServing waits until b's etcd member answers on its peer URL, or
// its Start returned (done), or setupTimeout passed.
//
// Why: a new etcd member first asks every other member of its initial
// cluster whether it was bootstrapped already, waiting up to a second for
// each (etcd's bootstrap timeout, which embed does not expose). Started all
// at once, the members have bound their peer ports but do not answer yet,
// so each waits the full second per peer (2 s for three brokers). Started
// one after the other, a member asks members that either answer (started)
// or refuse the connection at once (not bound yet). The brokers still
// start concurrently: a broker's Start returns only once etcd has a
// quorum, which the later ones complete.
func (b *Broker) awaitPeerServing(done <-chan struct{}) {
	hc := &http.Client{Timeout: 100 * time.Millisecond}
	deadline := time.Now().Add(setupTimeout)
	for time.Now().Before(deadline) {
		resp, err := hc.Get(b.peerURL + "/members")
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-done:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// addrInUse reports whether err is a bind to a port in use. The etcd
// errors do not all wrap the syscall error, hence the text as well.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// start makes a broker of b's properties and starts it.
func (b *Broker) start() error {
	cfg, warnings, err := config.Parse(b.props)
	if err != nil {
		return fmt.Errorf("broker %d: %w", b.id, err)
	}
	for _, w := range warnings {
		b.c.log.write(fmt.Sprintf("broker %d config: %s", b.id, w))
	}
	var h slog.Handler = newTBHandler(b.c.log, b.c.opts.logLevel)
	if len(b.c.opts.logTo) > 0 {
		h = append(fanout{h}, b.c.opts.logTo...)
	}
	cfg.Logger = slog.New(h).With("broker", b.id)
	if b.disk != nil {
		cfg.StorageFS = b.disk.FS()
	}
	cfg.Clock = b.clock
	srv, err := broker.New(cfg)
	if err != nil {
		return fmt.Errorf("broker %d: %w", b.id, err)
	}
	b.c.installHooks(b.id, srv)
	if err := srv.Start(); err != nil {
		return fmt.Errorf("broker %d: %w", b.id, err)
	}
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	return nil
}

// await waits until every broker's Metadata lists every broker, then
// creates the seeded topics and waits until each broker knows a leader for
// each of their partitions.
func (c *Cluster) await() error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if len(c.brokers) > 1 {
		if err := c.awaitMetadata(ctx, func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == len(c.brokers) }); err != nil {
			return fmt.Errorf("brokers not seeing each other: %w", err)
		}
	}
	if len(c.opts.topics) == 0 {
		return nil
	}
	adm, err := c.adminClient()
	if err != nil {
		return err
	}
	for _, tp := range c.opts.topics {
		cfgs := make(map[string]*string, len(tp.Configs))
		for k, v := range tp.Configs {
			cfgs[k] = &v
		}
		resp, err := adm.CreateTopic(ctx, tp.Partitions, tp.ReplicationFactor, cfgs, tp.Name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("creating topic %s: %w", tp.Name, err)
		}
	}
	return c.awaitMetadata(ctx, func(m *kmsg.MetadataResponse) bool {
		for _, tp := range c.opts.topics {
			if !topicLed(m, tp) {
				return false
			}
		}
		return true
	})
}

// topicLed reports whether m lists tp with all its partitions, each with a
// leader.
func topicLed(m *kmsg.MetadataResponse, tp Topic) bool {
	for _, t := range m.Topics {
		if t.Topic == nil || *t.Topic != tp.Name {
			continue
		}
		if t.ErrorCode != 0 || len(t.Partitions) != int(tp.Partitions) {
			return false
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false
			}
		}
		return true
	}
	return false
}

// awaitMetadata polls each running broker's own Metadata until ok holds for
// every one of them (their caches follow etcd each at its own pace). The
// requests go to the broker itself, past the client's metadata cache.
func (c *Cluster) awaitMetadata(ctx context.Context, ok func(*kmsg.MetadataResponse) bool) error {
	if _, err := c.adminClient(); err != nil {
		return err
	}
	for _, b := range c.brokers {
		if !b.answering() {
			continue
		}
		var last error
		for {
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.adminCl.Broker(int(b.id)))
			if err == nil && ok(resp) {
				break
			}
			last = err
			select {
			case <-ctx.Done():
				return fmt.Errorf("broker %d: %w (last error: %v)", b.id, ctx.Err(), last)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

// Close closes every running broker, as the test's cleanup does,
// and returns when they have all stopped. A test calls it to close the
// cluster before it ends; calling it again does nothing.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		if c.adminCl != nil {
			c.adminCl.Close()
		}
		c.closeAll()
	})
}

// close is the cleanup: Close, then stop logging to the test.
func (c *Cluster) close() {
	c.Close()
	c.closeProxies()
	if c.etcdEndpoint != "" {
		releaseSharedEtcd()
	}
	c.log.close()
}

// closeAll closes every running broker, one after the other.
//
// Not concurrently, although that looks faster: measured on three brokers,
// one after the other takes about 5 s (1 s for each of the first two, the
// time etcd's Close gives its peers' open streams to end; 3 s for the last,
// whose lease revocation waits 2 s for a quorum that is gone), while all at
// once takes 5.4 to 6.7 s: the etcd leader's Close hands leadership to a
// member that is closing too and waits etcd's request timeout (5 s + two
// election timeouts) for it. A fast teardown needs a broker hook (a close
// without lease revocation and without etcd's leadership transfer).
func (c *Cluster) closeAll() {
	for _, b := range c.brokers {
		if b == nil {
			continue
		}
		if err := b.stop(); err != nil {
			c.log.write(fmt.Sprintf("straittest: closing broker %d: %v", b.id, err))
		}
	}
}

// closeProxies closes the brokers' etcd proxies (after the brokers).
func (c *Cluster) closeProxies() {
	for _, b := range c.brokers {
		if b != nil && b.etcdProxy != nil {
			b.etcdProxy.close()
		}
	}
}

// stop closes the broker if it runs.
func (b *Broker) stop() error {
	b.mu.Lock()
	srv := b.srv
	b.srv, b.paused = nil, false
	b.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// Brokers returns the brokers, by id.
func (c *Cluster) Brokers() []*Broker { return slices.Clone(c.brokers) }

// Broker returns the broker with this node.id (1..n); the test fails if
// there is none.
func (c *Cluster) Broker(id int32) *Broker {
	if id < 1 || int(id) > len(c.brokers) {
		c.tb.Fatalf("straittest: no broker %d (the cluster has 1..%d)", id, len(c.brokers))
	}
	return c.brokers[id-1]
}

// Addrs returns every broker's host:port, by id, running or not: a
// stopped broker comes back on the same address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.Addr()
	}
	return out
}

// Seeds is Addrs joined with commas, as bootstrap.servers and KGO_SEEDS
// take them.
func (c *Cluster) Seeds() string { return strings.Join(c.Addrs(), ",") }

// ClusterID is the cluster's id, from a running broker ("" if none runs).
func (c *Cluster) ClusterID() string {
	for _, b := range c.brokers {
		if srv := b.Server(); srv != nil {
			return srv.ClusterID()
		}
	}
	return ""
}

// Stop closes broker id the way a stopping broker does (controlled
// shutdown: its leaderships move to other in-sync replicas first). It
// keeps its directory and port for Restart. The test fails if Close fails.
func (c *Cluster) Stop(id int32) {
	c.tb.Helper()
	if err := c.Broker(id).stop(); err != nil {
		c.tb.Fatalf("straittest: stopping broker %d: %v", id, err)
	}
}

// Restart stops broker id if it runs (as Stop) and starts it again on the
// same directory, port and configuration, so that clients that knew it
// reconnect to it. It returns once the broker serves again.
func (c *Cluster) Restart(id int32) {
	c.tb.Helper()
	b := c.Broker(id)
	if err := b.stop(); err != nil {
		c.tb.Fatalf("straittest: stopping broker %d: %v", id, err)
	}
	if err := b.start(); err != nil {
		c.tb.Fatalf("straittest: restarting broker %d: %v", id, err)
	}
}

// ID is the broker's node.id.
func (b *Broker) ID() int32 { return b.id }

// Addr is the broker's host:port, the same across restarts.
func (b *Broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.port) }

// Dir is the broker's directory: its log dir (logs/) and etcd data (etcd/).
func (b *Broker) Dir() string { return b.dir }

// LogDirs are the broker's log dirs: logs/ in Dir, then logs2/ ... with
// WithLogDirs.
func (b *Broker) LogDirs() []string {
	dirs := []string{filepath.Join(b.dir, "logs")}
	for i := 2; i <= b.c.opts.logDirs; i++ {
		dirs = append(dirs, filepath.Join(b.dir, fmt.Sprintf("logs%d", i)))
	}
	return dirs
}

// Disk is the broker's Disk (WithFaultyDisks), nil without that option.
func (b *Broker) Disk() *Disk { return b.disk }

// Running reports whether the broker runs (not stopped).
func (b *Broker) Running() bool { return b.Server() != nil }

// Paused reports whether the broker is paused (Pause).
func (b *Broker) Paused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.paused
}

// answering reports whether the broker runs, is not paused and not cut
// off from etcd: the state accessors ask only those.
func (b *Broker) answering() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srv != nil && !b.paused && !b.etcdCut
}

// Server is the running broker, nil while it is stopped. Its Err reports a
// fatal error; closing it is the package's (Stop, the cleanup).
func (b *Broker) Server() *broker.Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srv
}

// Config returns the properties the broker was started with.
func (b *Broker) Config() map[string]string { return maps.Clone(b.props) }
