// Package broker is Strait's Kafka broker: it owns the listeners, the client
// connections (a read goroutine each; responses are written in order by the
// goroutine that completes them, see conn.go), the dispatch of requests to
// one handler per API (one file per API, each opening with its behaviour and
// versions); the partitions this node hosts and their replication are
// package replication's, wired in replication.go.
//
// Lifecycle, modelled on etcd's embed: New validates the configuration, Start
// binds the listeners, starts (or connects to) etcd, registers the broker and
// opens its partition logs, then accepts connections; Ready is closed once the
// broker answers requests; Err reports a fatal error (a listener that stops
// for good, the embedded etcd failing, every log dir gone: lifecycle.go),
// after which the owner calls Close; Close shuts down cleanly (stop
// accepting, finish in-flight requests, close the logs) and returns once
// every goroutine the broker started has returned (bg.Go).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/share"
	"github.com/strait/strait/internal/background"
	"github.com/strait/strait/internal/clock"
	"github.com/strait/strait/internal/loglimit"
	"github.com/strait/strait/metrics"
	"github.com/strait/strait/metrics/telemetry"
	"github.com/strait/strait/protocol"
	"github.com/strait/strait/quota"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/security/acl"
)

// Server is one Strait broker.
type Server struct {
	cfg      config.Config
	logger   *slog.Logger
	reqBytes requestBudget // queued.max.request.bytes (limits.go)

	listeners []*listener
	// metrics is this broker's registry (metrics.go); http serves it with
	// the health probes when strait.http.listener is set. parkedProduces
	// and parkedFetches count the requests waiting (Kafka's purgatories).
	metrics                       *metrics.Metrics
	telemetry                     *telemetry.Manager // client telemetry, KIP-714 (clientmetrics.go)
	http                          *metrics.Server
	parkedProduces, parkedFetches atomic.Int64
	lagEnds                       lagEnds // other leaders' high watermarks, for consumer lag (metrics_lag.go)
	// acceptErrors counts the accepts that failed and were retried (out of
	// descriptors or memory, a connection aborted early): AcceptErrors.
	acceptErrors atomic.Int64
	// dirLocks are the .lock files of the log dirs and the embedded etcd's
	// data dir, held from Start to the end of Close (logdir_lock.go).
	dirLocks []*os.File
	ctrl     *controller.Controller
	// authz is the authorizer (authorize.go): nil without
	// authorizer.class.name, when every request is allowed.
	authz *acl.Standard
	// replicas hosts this broker's partitions and replicates them
	// (package replication; created in Start, closed by Close).
	replicas *replication.Manager
	handlers handlerTable
	versions protocol.VersionTable
	// featureFrames answer ApiVersions from frames encoded once per version
	// and epoch of the finalized features (apiVersionFrames).
	featureFrames atomic.Pointer[featureFrames]

	ready     chan struct{}
	errc      chan error
	closing   chan struct{} // closed when Close starts: wakes parked fetches
	closeOnce sync.Once
	closeErr  error
	// ctx ends when Close starts, with closing: long waits (etcd calls,
	// the dynamic config watch) take it.
	ctx    context.Context
	cancel context.CancelFunc

	// dynCfg follows the dynamic broker configs in etcd; groupSvc and
	// txnSvc are the group and transaction coordinators (started in Start,
	// stopped when closing begins).
	dynCfg   *dynamicConfigs
	groupSvc *groupService
	// shareCoord is the share groups and share-partitions (share_service.go).
	shareCoord *share.Coordinator
	// shareStateSvc is __share_group_state (sharestate.go), made on first use.
	shareStateOnce sync.Once
	shareStateSvc  *shareStateService
	shareStateLog  loglimit.Limiter
	txnSvc         *txnService
	// interBroker holds the clients for requests to other brokers.
	interBroker interBrokerClients
	// fetchSessions holds the incremental fetch sessions (KIP-227).
	fetchSessions *fetchSessionCache
	// producerIDs hands idempotent producers their ids (InitProducerId
	// without a transactional id) from this broker's block.
	producerIDs *producerIDPool

	// security holds how each non-PLAINTEXT listener authenticates, by
	// listener name (conn_auth.go); refusedLog limits the lines about
	// connections refused for bad input.
	security   map[string]*listenerSecurity
	refusedLog loglimit.Limiter
	// clientErrLog and produceErrLog limit the lines about requests
	// refused for their content and about failed appends (clientlog.go).
	clientErrLog        loglimit.Limiter
	produceErrLog       loglimit.Limiter
	tlsHandshakeTimeout time.Duration

	connsMu sync.Mutex
	conns   map[*conn]struct{}
	// quotas enforces max.connections and max.connections.per.ip.
	quotas *connQuotas
	// fds keeps strait.fd.reserve descriptors from client connections.
	fds *fdGuard
	// clientQuotas enforces the client quotas (clientquotas.go).
	clientQuotas *clientQuotas
	// leaderQuota and followerQuota are the replication throttles, their
	// bounds set from the dynamic configs (replication.go).
	leaderQuota, followerQuota *quota.Replication
	alterLogDirsQuota          *quota.Replication // replica.alter.log.dirs.io.max.bytes.per.second
	// coarseNow (UnixNano) is advanced by the connection sweeper, which
	// closes connections idle past connections.max.idle.ms (idleExpired
	// counts them) and those whose write stalled for stallLimit (ns) at the
	// segment file bound (stalledClosed; idleconns.go).
	coarseNow     atomic.Int64
	idleExpired   atomic.Int64
	stallLimit    atomic.Int64
	stalledClosed atomic.Int64
	stalledLog    loglimit.Limiter
	connWG        sync.WaitGroup
	// bg holds the goroutines the broker started (as nats-server's
	// startGoRoutine), which Close waits for once the connections have
	// drained; only then does bg.Go refuse, running nothing, so a caller
	// whose work must still happen does it itself. A goroutine started
	// after closing began must see closing (or s.ctx) and return soon.
	bg background.Group
	// offlineDirs are the log dirs found gone or unwritable (watchLogDirs,
	// which checkLogDirsSoon wakes).
	offlineDirs  map[string]bool
	offlineDirN  atomic.Int32 // len(offlineDirs), for /readyz
	logDirsCheck chan struct{}

	// hooks are the fault-injection hooks of tests (testhooks.go).
	hooks hooksState
	// clock is the wall clock the broker and what it builds read
	// (config.Config.Clock, else the system's; tests jump it: JumpClock).
	clock clock.Clock
}

type listener struct {
	cfg config.Listener
	ln  net.Listener
	sec *listenerSecurity // nil: PLAINTEXT
}

// New validates cfg and returns a broker that is not started yet.
func New(cfg config.Config) (*Server, error) {
	if len(cfg.Network.Listeners) == 0 {
		return nil, errors.New("broker: no listeners configured")
	}
	if len(cfg.Log.Dirs) == 0 {
		return nil, errors.New("broker: no log.dirs configured")
	}
	if cfg.Network.SocketRequestMaxBytes <= 0 {
		return nil, fmt.Errorf("broker: invalid socket.request.max.bytes %d", cfg.Network.SocketRequestMaxBytes)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	raiseFileLimitOnce(logger)
	s := &Server{
		cfg:     cfg,
		logger:  logger,
		ready:   make(chan struct{}),
		errc:    make(chan error, 1),
		closing: make(chan struct{}),
		conns:   make(map[*conn]struct{}),
		quotas:  newConnQuotas(&cfg, logger),
		clock:   clock.Or(cfg.Clock),
		fds:     newFDGuard(cfg.Limits.FDReserve, logger),

		offlineDirs:  make(map[string]bool),
		logDirsCheck: make(chan struct{}, 1),
	}
	s.coarseNow.Store(time.Now().UnixNano())
	s.stallLimit.Store(int64(stalledWriteLimit))
	s.metrics = metrics.New()
	s.metrics.Registry.MustRegister(stateCollector{s})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.handlers = registered // read-only: shared by every Server
	s.versions = s.handlers.versionTable()
	s.featureFrames.Store(&featureFrames{frames: s.newApiVersionFrames(s.features())}) // updatefeatures.go
	s.dynCfg = newDynamicConfigs(s)
	s.fetchSessions = newFetchSessionCache(cfg.FetchSessions.CacheSlots)
	s.clientQuotas = newClientQuotas(&cfg)
	s.newReplicationQuotas()
	s.fetchSessions.now = func() int64 { return s.clock.Now().UnixMilli() }
	s.producerIDs = newProducerIDPool()
	s.authz = newAuthorizer(s)
	// Keystores, truststores and JAAS configs load here, so that a bad
	// one stops the broker before it binds anything.
	if err := s.buildListenerSecurity(); err != nil {
		return nil, err
	}
	if err := s.setupInterBroker(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start binds the listeners, joins the cluster and begins serving. It returns
// once the broker accepts requests; Ready is closed at the same moment.
func (s *Server) Start() error {
	if err := s.start(); err != nil {
		s.Close()
		return err
	}
	return nil
}

func (s *Server) start() error {
	started := time.Now()
	if err := s.lockDataDirs(); err != nil { // before etcd, which would wait on its own lock
		return err
	}
	// First, so that /healthz answers (and /readyz says why not) while the
	// logs load and etcd starts.
	if err := s.startHTTP(); err != nil {
		return err
	}
	for _, l := range s.cfg.Network.Listeners {
		addr := net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("broker: listen %s on %s: %w", l.Name, addr, err)
		}
		s.listeners = append(s.listeners, &listener{cfg: l, ln: ln, sec: s.security[l.Name]})
	}

	ctrl, err := controller.New(controller.Config{
		NodeID:        s.cfg.NodeID,
		Rack:          s.cfg.Rack,
		Endpoints:     s.advertisedEndpoints(),
		DataDir:       s.cfg.Etcd.DataDir,
		EtcdEndpoints: s.cfg.Etcd.Endpoints,
		Prefix:        s.cfg.Etcd.Prefix,

		// broker.session.timeout.ms (Kafka's 9 s) is the registration
		// lease: a broker silent for that long loses its leaderships.
		LeaseTTLSeconds: s.cfg.Replication.LeaseTTLSeconds(),

		DefaultNumPartitions:     s.cfg.Topics.NumPartitions,
		DefaultReplicationFactor: s.cfg.Topics.DefaultReplicationFactor,

		EtcdName:                     s.cfg.Etcd.Name,
		EtcdInitialCluster:           s.cfg.Etcd.InitialCluster,
		EtcdInitialClusterState:      s.cfg.Etcd.InitialClusterState,
		EtcdInitialClusterToken:      s.cfg.Etcd.InitialClusterToken,
		EtcdListenPeerURLs:           s.cfg.Etcd.ListenPeerURLs,
		EtcdInitialAdvertisePeerURLs: s.cfg.Etcd.InitialAdvertisePeerURLs,
		EtcdListenClientURLs:         s.cfg.Etcd.ListenClientURLs,
		EtcdAdvertiseClientURLs:      s.cfg.Etcd.AdvertiseClientURLs,
		EtcdHeartbeatIntervalMs:      s.cfg.Etcd.HeartbeatIntervalMs,
		EtcdElectionTimeoutMs:        s.cfg.Etcd.ElectionTimeoutMs,
		EtcdSecurity:                 controllerEtcdSecurity(s.cfg.Etcd.Security),            // credentials.go
		DelegationTokens:             controllerTokenConfig(s.cfg.Security.DelegationTokens), // credentials.go

		UncleanLeaderElectionEnable:  s.cfg.Controller.UncleanLeaderElectionEnable,
		MinInsyncReplicas:            s.cfg.Topics.MinInsyncReplicas,
		AutoLeaderRebalanceEnable:    &s.cfg.Controller.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval: time.Duration(s.cfg.Controller.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		Logger:                       s.logger,
		Now:                          s.clock.Now,
	})
	if err != nil {
		return fmt.Errorf("broker: controller: %w", err)
	}
	s.ctrl = ctrl
	s.newTelemetry() // clientmetrics.go
	if err := ctrl.Start(s.ctx); err != nil {
		return fmt.Errorf("broker: controller start: %w", err)
	}
	s.bg.Go(s.watchController)
	ctrl.Listen(func(ch controller.TopicChange) {
		if ch.Deleted {
			s.metrics.ForgetTopic(ch.Topic.Name)
		}
	})

	// Dynamic broker configs before the logs open, so they take their
	// defaults; the partition manager exists first because a config change
	// reapplies to it from the watch's goroutine.
	s.replicas = s.newReplicaManager()
	s.dynCfg.start()
	if err := s.replicas.Start(); err != nil {
		return err
	}
	// The group coordinator loads __consumer_offsets before clients come.
	// The share coordinator first: the group coordinator's loads hand it
	// the share groups' records.
	s.shareCoord = s.startShareCoordinator()
	s.groupSvc = s.startGroupService()
	s.startTxnService()

	for _, l := range s.listeners {
		s.bg.Go(func() { s.acceptLoop(l) })
	}
	s.bg.Go(s.watchLogDirs)
	s.bg.Go(s.sweepConns)

	s.logger.Debug("broker started", "took", time.Since(started))
	close(s.ready)
	return nil
}

// advertisedEndpoints resolves advertised.listeners against the bound ports:
// a port 0 (or a listener without an advertised entry) takes the bound port.
func (s *Server) advertisedEndpoints() []controller.Endpoint {
	bound := make(map[string]*listener, len(s.listeners))
	for _, l := range s.listeners {
		bound[l.cfg.Name] = l
	}
	adv := s.cfg.Network.Advertised
	if len(adv) == 0 {
		adv = s.cfg.Network.Listeners
	}
	out := make([]controller.Endpoint, 0, len(adv))
	for _, a := range adv {
		host, port := a.Host, a.Port
		if l, ok := bound[a.Name]; ok {
			tcp := l.ln.Addr().(*net.TCPAddr)
			if port == 0 {
				port = int32(tcp.Port)
			}
			if host == "" || host == "0.0.0.0" || host == "::" {
				host = tcp.IP.String()
				if tcp.IP.IsUnspecified() {
					host = "127.0.0.1"
				}
			}
		}
		proto := a.SecurityProtocol
		if proto == "" {
			proto = "PLAINTEXT"
		}
		out = append(out, controller.Endpoint{Name: a.Name, Host: host, Port: port, SecurityProtocol: proto})
	}
	return out
}

// acceptLogInterval is the least time between two log lines about failed
// accepts on one listener.
const acceptLogInterval = 10 * time.Second

// AcceptErrors is the number of accepts that failed and were retried since
// the broker started (EMFILE, ENFILE, ENOMEM, ECONNABORTED, ...).
func (s *Server) AcceptErrors() int64 { return s.acceptErrors.Load() }

// acceptLoop accepts connections until Close. A temporary failure (out of
// descriptors or memory, a connection aborted before it was accepted) is
// counted and retried after a backoff growing from 5 ms to 1 s, and logged
// at most once per acceptLogInterval with the count since the last line:
// a broker out of descriptors keeps its listener and takes connections
// again once some close. Any other failure means the listener stopped for
// good, which is fatal (Err): the broker no longer takes connections.
func (s *Server) acceptLoop(l *listener) {
	var backoff time.Duration
	var lastLog time.Time
	var unlogged int64
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return
			default:
			}
			if !temporaryAcceptError(err) {
				s.logger.Error("listener stopped accepting connections", "listener", l.cfg.Name, "err", err)
				s.fail(fmt.Errorf("broker: listener %s stopped accepting connections: %w", l.cfg.Name, err))
				return
			}
			s.acceptErrors.Add(1)
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff < time.Second {
				backoff = min(2*backoff, time.Second)
			}
			unlogged++
			if now := time.Now(); now.Sub(lastLog) >= acceptLogInterval {
				s.logger.Warn("accept failed; retrying", "listener", l.cfg.Name, "err", err, "failures", unlogged, "retry_in", backoff)
				lastLog, unlogged = now, 0
			}
			select {
			case <-time.After(backoff):
			case <-s.closing:
				return
			}
			continue
		}
		backoff = 0
		// Descriptors kept for etcd, segments and checkpoints come
		// before any client (fdreserve.go).
		s.connsMu.Lock()
		clients := len(s.conns)
		s.connsMu.Unlock()
		if ok, open := s.fds.admit(clients); !ok {
			nc.Close()
			s.fds.logRefused(s.logger, l.cfg.Name, open)
			continue
		}
		// As Kafka's Acceptor: a connection past max.connections waits
		// (holding the accept loop) for one to close; one past its
		// address's limit is closed at once.
		if !s.waitConnectionRate(l.cfg.Name) || !s.quotas.waitSlot(l.cfg.Name, s.closing) {
			nc.Close()
			return
		}
		ip := remoteIP(nc)
		if s.throttleConnection(nc, l.cfg.Name, ip) { // connection_creation_rate (clientquotas.go)
			continue
		}
		if !s.quotas.inc(ip, l.cfg.Name) {
			nc.Close()
			s.quotas.logRefused(s.logger, l.cfg.Name, ip, "max.connections.per.ip")
			continue
		}
		c := newConn(s, nc, l.cfg.Name, l.sec)
		c.ip = ip
		c.lastActive.Store(time.Now().UnixNano())
		s.connsMu.Lock()
		select {
		case <-s.closing:
			s.connsMu.Unlock()
			nc.Close()
			s.quotas.dec(ip, l.cfg.Name)
			return
		default:
		}
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.connsMu.Unlock()
		go c.start()
	}
}

func (s *Server) removeConn(c *conn) {
	s.connsMu.Lock()
	delete(s.conns, c)
	s.connsMu.Unlock()
	s.quotas.dec(c.ip, c.listener)
	s.connWG.Done()
}

// Ready is closed once the broker accepts requests.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Err delivers the first fatal error after Start: the broker can no longer
// serve (a listener stopped, the embedded etcd failed, every log dir is
// offline) and should be closed. A clean Close delivers nothing.
func (s *Server) Err() <-chan error { return s.errc }

// Addrs returns the bound address of each listener, in configuration order.
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, 0, len(s.listeners))
	for _, l := range s.listeners {
		out = append(out, l.ln.Addr())
	}
	return out
}

// Addr is the first listener's bound address as host:port, handy for tests.
func (s *Server) Addr() string {
	if len(s.listeners) == 0 {
		return ""
	}
	return s.listeners[0].ln.Addr().String()
}

// ClusterID is the cluster's id as stored in etcd.
func (s *Server) ClusterID() string {
	if s.ctrl == nil {
		return ""
	}
	return s.ctrl.ClusterID()
}

// NodeID is this broker's node.id.
func (s *Server) NodeID() int32 { return s.cfg.NodeID }

// Close stops accepting connections, lets in-flight requests finish, closes
// every connection, deregisters the broker and closes the partition logs.
// It returns once every goroutine the broker started has returned.
func (s *Server) Close() error { return s.close(false) }

// Kill stops the broker as a crash would, for tests (straittest's Kill):
// no controlled shutdown, every connection closed at once without its
// pending responses, the registration lease left to expire
// (broker.session.timeout.ms) so that the cluster moves this broker's
// leaderships only then, and the embedded etcd member stopped without
// handing its leadership over. Unlike a crash it still releases what the
// process holds, so that the broker can be started again in the same
// process: the logs are closed, the data directories unlocked, and Kill
// returns once every goroutine the broker started has returned. Data the
// logs wrote is in the page cache, as after a process crash. After Close
// or Kill, either does nothing.
func (s *Server) Kill() error { return s.close(true) }

func (s *Server) close(kill bool) error {
	s.closeOnce.Do(func() {
		if !kill {
			s.controlledShutdown()
		}
		close(s.closing)
		s.cancel()
		for _, l := range s.listeners {
			l.ln.Close()
		}
		if s.http != nil {
			s.http.Close()
		}
		// The coordinators answer their parked requests (JoinGroup,
		// SyncGroup) as they close, so that connections can drain.
		if s.groupSvc != nil {
			s.groupSvc.coord.Close()
		}
		if s.txnSvc != nil {
			s.txnSvc.coord.Close()
		}
		s.connsMu.Lock()
		for c := range s.conns {
			if kill {
				c.teardown()
			} else {
				c.stopReading()
			}
		}
		s.connsMu.Unlock()
		if !waitTimeout(&s.connWG, connDrainTimeout) {
			// A client that does not read its responses: drop them.
			s.connsMu.Lock()
			n := len(s.conns)
			for c := range s.conns {
				c.teardown()
			}
			s.connsMu.Unlock()
			s.logger.Warn("closed connections whose responses were not taken in time", "connections", n, "after", connDrainTimeout)
			s.connWG.Wait()
		}
		if s.replicas != nil {
			s.replicas.Stop()
		}
		s.bg.Wait()
		var errs []error
		if s.ctrl != nil {
			closeCtrl := s.ctrl.Close
			if kill {
				closeCtrl = s.ctrl.Kill
			}
			if err := closeCtrl(); err != nil {
				errs = append(errs, err)
			}
		}
		if s.replicas != nil {
			if err := s.replicas.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeInterBrokerClients()
		s.unlockDataDirs()
		s.closeErr = errors.Join(errs...)
		if kill {
			s.logger.Info("broker killed", "node.id", s.cfg.NodeID)
		} else {
			s.logger.Info("broker stopped", "node.id", s.cfg.NodeID)
		}
	})
	return s.closeErr
}

// controlledShutdown moves leadership of this broker's partitions to other
// in-sync replicas while the broker still serves, so that clients and
// followers switch over without waiting for the lease to expire (Kafka's
// controlled.shutdown). With no other live broker there is nowhere to go.
func (s *Server) controlledShutdown() {
	if s.ctrl == nil || !s.cfg.Shutdown.Controlled {
		return
	}
	select {
	case <-s.ready:
	default:
		return // never started
	}
	others := false
	for _, b := range s.ctrl.Brokers() {
		if b.NodeID != s.cfg.NodeID && !b.Fenced && !b.InControlledShutdown {
			others = true
		}
	}
	if !others {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.ctrl.ControlledShutdown(ctx); err != nil {
		s.logger.Warn("controlled shutdown failed; leadership moves when the lease expires", "err", err)
		return
	}
	s.logger.Info("controlled shutdown complete", "took", time.Since(start))
}

// connDrainTimeout bounds how long Close lets connections write the
// responses of the requests already read.
var connDrainTimeout = 10 * time.Second

// fail reports a fatal error on Err once.
func (s *Server) fail(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// watchController reports the control plane's fatal error (the embedded
// etcd failing) on Err.
func (s *Server) watchController() {
	select {
	case err := <-s.ctrl.Err():
		s.logger.Error("control plane failed", "err", err)
		s.fail(fmt.Errorf("broker: %w", err))
	case <-s.closing:
	}
}

// waitTimeout waits for wg at most d. On timeout the waiting goroutine goes
// on until wg is done: the caller must make it so (Close tears the
// connections down and waits again).
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
