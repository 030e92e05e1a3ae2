package straittest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"

	"github.com/strait/strait/internal/freeport"
)

// walSegmentBytes is the size each embedded etcd preallocates per WAL
// segment in a test binary that imports this package, instead of etcd's
// 64 MB (it keeps two: the current segment and the next). A test cluster's
// metadata is a few kilobytes; 64 MB per segment made twenty parallel
// tests' brokers hold 2.5 GB of disk.
const walSegmentBytes = 1 << 20

// etcd exports the segment size for tests to set ("so that tests can set a
// different segment size"); there is no per-member setting, so it is set
// for the whole process before any test starts a broker.
func init() { wal.SegmentSizeBytes = walSegmentBytes }

// sharedEtcd is the etcd brokers share unless WithEmbeddedEtcd: one single-member etcd for the
// clusters of the test process that ask for it, each under its own key
// prefix. It starts with the first such cluster and closes with the last,
// removing its directory, so nothing outlives the test binary. It never
// fsyncs: its data lives as long as the tests.
var sharedEtcd struct {
	mu    sync.Mutex
	users int
	etcd  *embed.Etcd
	dir   string
	url   string
}

// prefixSeq numbers the clusters' key prefixes in the shared etcd.
var prefixSeq atomic.Int64

// acquireSharedEtcd returns the shared etcd's client URL and a key prefix
// of the caller's own, starting the etcd if no cluster uses it now.
func acquireSharedEtcd() (endpoint, prefix string, err error) {
	s := &sharedEtcd
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etcd == nil {
		if err := startSharedEtcd(); err != nil {
			return "", "", err
		}
	}
	s.users++
	return s.url, "/straittest/" + strconv.FormatInt(prefixSeq.Add(1), 10), nil
}

// releaseSharedEtcd closes the shared etcd when its last user is done.
func releaseSharedEtcd() {
	s := &sharedEtcd
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users > 0 || s.etcd == nil {
		return
	}
	s.etcd.Close()
	os.RemoveAll(s.dir)
	s.etcd, s.dir, s.url = nil, "", ""
}

func startSharedEtcd() error {
	s := &sharedEtcd
	ports, err := freeport.Ports(1)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "straittest-etcd-")
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "straittest"
	client := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[0])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	// No peers: the peer URL is only advertised, never listened on.
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = nil, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.TickMs, cfg.ElectionMs = 10, 50
	cfg.UnsafeNoFsync = true
	cfg.EnableGRPCGateway = false
	// As the brokers' embedded etcd: a topic is one transaction of up to
	// 10,000 operations.
	cfg.MaxTxnOps = 10016
	cfg.MaxRequestBytes = 16 << 20
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("shared etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err = <-e.Err():
	case <-time.After(setupTimeout):
		err = errors.New("not ready in time")
	}
	if err != nil {
		e.Close()
		os.RemoveAll(dir)
		return fmt.Errorf("shared etcd: %w", err)
	}
	s.etcd, s.dir, s.url = e, dir, client.String()
	return nil
}
