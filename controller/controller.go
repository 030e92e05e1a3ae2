package controller

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/strait/strait/internal/background"
)

// Lifecycle states of a Controller.
const (
	stateNew int32 = iota
	stateStarting
	stateRunning
	stateClosed
)

// startTimeout bounds Start when its context has no deadline (an unreachable
// external etcd would otherwise block it forever); the registration may wait
// one lease TTL on top for a previous incarnation's registration to expire.
const startTimeout = 30 * time.Second

// Controller is one broker's handle on the control plane: New validates the
// configuration, Start connects (or embeds etcd), loads the metadata and
// registers the broker, Close undoes it all. Its read methods are safe for
// concurrent use and take no lock.
type Controller struct {
	cfg   Config
	ks    keyspace
	log   *slog.Logger
	cache *metadataCache

	state     atomic.Int32
	clusterID atomic.Pointer[string]
	// etcdQuiet demotes etcd's error logs (and the client's warnings) while
	// the controller shuts down.
	etcdQuiet atomic.Bool

	// Set by Start, read-only afterwards.
	etcd   *embed.Etcd // nil with external etcd
	client *clientv3.Client

	runCtx    context.Context // ends at Close: the watch, campaigns, keepalives
	cancelRun context.CancelFunc
	stop      chan struct{} // closed at Close
	// bg holds the goroutines the controller started (bg.Go): Close
	// refuses new ones at once and waits for them once the session is gone.
	bg        background.Group
	closeOnce sync.Once
	closeErr  error
	// errc carries the fatal error of the embedded etcd (see Err).
	errc chan error

	// createMu serializes this controller's topic creations, so validation
	// (name collisions) and the transaction see each other's results.
	createMu sync.Mutex

	sessionMu      sync.Mutex
	session        *concurrency.Session // the lease the registration and candidacy hang on
	cancelCampaign context.CancelFunc
	// paused is non-nil between Pause and Resume (faults.go, tests only).
	paused chan struct{}

	// incarnation is what rejoin knows of this process's registrations
	// (elr.go).
	incarnation incarnation
	// shuttingDown is set by ControlledShutdown; a registration made after it
	// (the lease was lost meanwhile) keeps the mark.
	shuttingDown atomic.Bool
	// active is true while this broker performs the active controller's duties.
	active atomic.Bool
}

// New validates cfg and returns a Controller to Start.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ks := keyspace{prefix: cfg.Prefix}
	runCtx, cancel := context.WithCancel(context.Background())
	c := &Controller{
		cfg:       cfg,
		ks:        ks,
		log:       cfg.Logger,
		cache:     newMetadataCache(ks, cfg.Logger),
		runCtx:    runCtx,
		cancelRun: cancel,
		stop:      make(chan struct{}),
		errc:      make(chan error, 1),
	}
	c.cache.auth.secret = []byte(cfg.DelegationTokens.SecretKey)
	empty := ""
	c.clusterID.Store(&empty)
	return c, nil
}

// Start connects to etcd (starting the embedded one without EtcdEndpoints),
// creates the cluster id if it is new, loads the metadata into the cache,
// registers this broker and enters the controller election. It returns once
// the cache shows this broker registered and a controller elected. On error
// everything started is stopped again; the Controller cannot be restarted.
func (c *Controller) Start(ctx context.Context) error {
	if !c.state.CompareAndSwap(stateNew, stateStarting) {
		return errors.New("controller: Start called twice or after Close")
	}
	began := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout+time.Duration(c.cfg.LeaseTTLSeconds)*time.Second)
		defer cancel()
	}
	if err := c.start(ctx); err != nil {
		_ = c.Close()
		return err
	}
	if !c.state.CompareAndSwap(stateStarting, stateRunning) {
		return ErrNotStarted // closed concurrently
	}
	c.log.Info("controller ready", "node.id", c.cfg.NodeID, "cluster.id", c.ClusterID(),
		"controller.id", c.ControllerID(), "embedded.etcd", c.etcd != nil, "elapsed", time.Since(began))
	return nil
}

func (c *Controller) start(ctx context.Context) error {
	var err error
	if len(c.cfg.EtcdEndpoints) == 0 {
		c.etcd, c.client, err = startEmbeddedMember(ctx, c.cfg.DataDir, c.cfg.member, c.cfg.EtcdSecurity, c.log, &c.etcdQuiet)
		if err == nil {
			c.log.Debug("embedded etcd ready", "client.url", embeddedClientURL(c.etcd))
			c.bg.Go(c.watchEmbeddedEtcd)
		}
	} else {
		c.client, err = connectEtcd(c.cfg.EtcdEndpoints, c.cfg.EtcdSecurity, c.log, &c.etcdQuiet)
	}
	if err != nil {
		return err
	}
	id, err := c.ensureClusterID(ctx)
	if err != nil {
		return err
	}
	c.clusterID.Store(&id)
	if err := c.recordEmbeddedMember(ctx); err != nil {
		return err
	}

	resp, err := c.client.Get(ctx, c.ks.root(), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("controller: loading metadata: %w", err)
	}
	c.cache.load(resp.Kvs, resp.Header.Revision)
	c.bg.Go(func() { c.cache.run(c.runCtx, c.client, resp.Header.Revision) })

	regRev, err := c.establishSession(ctx)
	if err != nil {
		return err
	}
	if !c.bg.Go(c.superviseSession) {
		return ErrNotStarted
	}
	return c.cache.waitFor(ctx, c.stop, func(s *metadataSnapshot) bool {
		return s.rev >= regRev && s.controllerID >= 0
	})
}

// Err delivers a fatal error of the control plane: the embedded etcd
// member failed (a listener of it stopped serving) or stopped by itself.
// Nothing more works without it, so the broker stops (Kafka halts a broker
// whose metadata log fails). An external etcd being unreachable is not
// fatal: the client reconnects.
func (c *Controller) Err() <-chan error { return c.errc }

func (c *Controller) fail(err error) {
	select {
	case c.errc <- err:
	default:
	}
}

// watchEmbeddedEtcd reports on Err the embedded member's failure for as
// long as the controller runs.
func (c *Controller) watchEmbeddedEtcd() {
	select {
	case <-c.stop:
	case err := <-c.etcd.Err():
		select {
		case <-c.stop:
		default:
			c.log.Error("embedded etcd failed", "err", err)
			c.fail(fmt.Errorf("controller: embedded etcd failed: %w", err))
		}
	case <-c.etcd.Server.StopNotify():
		select {
		case <-c.stop:
		default:
			c.log.Error("embedded etcd stopped")
			c.fail(errors.New("controller: embedded etcd stopped"))
		}
	}
}

// ensureClusterID returns the cluster id, creating it if this is a new cluster.
func (c *Controller) ensureClusterID(ctx context.Context) (string, error) {
	key := c.ks.clusterID()
	fresh := FormatUUID(NewKafkaUUID())
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, fresh)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return "", fmt.Errorf("controller: reading the cluster id: %w", err)
	}
	if resp.Succeeded {
		c.log.Info("created a new cluster", "cluster.id", fresh)
		return fresh, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return "", errors.New("controller: the cluster id vanished while being read")
	}
	return string(kvs[0].Value), nil
}

// Close makes a controlled shutdown when other active brokers exist (see
// ControlledShutdown), leaves the election, revokes the registration lease (so
// the broker disappears from other brokers' caches at once), stops the watch
// and closes the etcd client and the embedded etcd. It is idempotent.
func (c *Controller) Close() error { return c.closeWith(c.shutdown) }

// closeWith stops the controller's goroutines and ends it with end (a
// controlled shutdown, or Kill's abandon), once: the first of Close and
// Kill decides.
func (c *Controller) closeWith(end func() error) error {
	c.closeOnce.Do(func() {
		c.state.Store(stateClosed)
		close(c.stop)
		c.bg.Close()
		c.closeErr = end()
	})
	return c.closeErr
}

func (c *Controller) shutdown() error {
	c.sessionMu.Lock()
	registered := c.session != nil
	c.sessionMu.Unlock()
	if registered && c.otherActiveBrokers() {
		// Hand leadership over before deregistering; beyond one lease TTL
		// the active controller would do the same after the lease expires.
		ctx, cancel := context.WithTimeout(context.Background(), max(5*time.Second, time.Duration(c.cfg.LeaseTTLSeconds)*time.Second))
		if err := c.controlledShutdown(ctx, true); err != nil {
			c.log.Warn("controlled shutdown failed; the lease expiry will move leadership instead", "err", err)
		}
		cancel()
	}
	// From here on, requests cancelled by the shutdown are expected.
	c.etcdQuiet.Store(true)
	c.sessionMu.Lock()
	session, cancelCampaign := c.session, c.cancelCampaign
	c.session, c.cancelCampaign = nil, nil
	c.sessionMu.Unlock()
	if cancelCampaign != nil {
		cancelCampaign()
	}
	var errs []error
	if session != nil {
		session.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		// Replication has stopped (the broker stops its replica manager
		// first): the next registration may keep this one's ELR places.
		if err := c.writeCleanShutdown(ctx, c.BrokerEpoch()); err != nil {
			c.log.Warn("the next start will count as after an unclean shutdown", "err", err)
		}
		if _, err := c.client.Revoke(ctx, session.Lease()); err != nil {
			// Not an error of this broker's shutdown: the lease expires on
			// its own (etcd without quorum, the last broker of a cluster
			// stopping).
			c.log.Warn("could not revoke the registration lease; it expires by itself", "err", err)
		}
		cancel()
	}
	c.cancelRun()
	c.bg.Wait()
	c.etcdQuiet.Store(true)
	if c.client != nil {
		if err := c.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	if c.etcd != nil {
		c.etcd.Close()
	}
	return errors.Join(errs...)
}

// running reports whether writes are possible.
func (c *Controller) running() bool { return c.state.Load() == stateRunning }

// ClusterID returns the cluster id ("" before Start).
func (c *Controller) ClusterID() string { return *c.clusterID.Load() }

// ControllerID returns the node id of the active controller, -1 if none is
// known.
func (c *Controller) ControllerID() int32 { return c.cache.snapshot().controllerID }

// Brokers returns the registered (live) brokers sorted by node id.
func (c *Controller) Brokers() []BrokerInfo { return slices.Clone(c.cache.snapshot().brokers) }

// Topics returns every topic sorted by name.
func (c *Controller) Topics() []TopicInfo {
	list := c.cache.snapshot().topicList()
	out := make([]TopicInfo, len(list))
	for i, t := range list {
		out[i] = *t
	}
	return out
}

// TopicsFrom yields the topics whose names are >= from, in name order, from
// one snapshot, without copying the others (a page of DescribeTopicPartitions
// costs its page, not every topic).
func (c *Controller) TopicsFrom(from string) iter.Seq[TopicInfo] {
	x := c.cache.snapshot().tix
	return func(yield func(TopicInfo) bool) {
		for name := range x.names.from(from) {
			if t := x.get(name); t != nil && !yield(*t) {
				return
			}
		}
	}
}

// Topic returns the topic called name.
func (c *Controller) Topic(name string) (TopicInfo, bool) {
	t := c.cache.snapshot().topic(name)
	if t == nil {
		return TopicInfo{}, false
	}
	return *t, true
}

// TopicByID returns the topic with the given id.
func (c *Controller) TopicByID(id [16]byte) (TopicInfo, bool) {
	t := c.cache.snapshot().topicByID(id)
	if t == nil {
		return TopicInfo{}, false
	}
	return *t, true
}

// Listen registers fn to be called for every topic created, changed or
// deleted, in etcd revision order, with the full TopicInfo. At registration fn
// is first called with every existing topic (as a creation), under the same
// lock that applying changes takes: a listener sees each change exactly once
// and needs no separate call to Topics. Listen may be called before Start
// (fn then sees the topics loaded at start as creations).
//
// fn runs on the cache's goroutine, which waits for it: it must not block for
// long and must not call Listen, CreateTopic or DeleteTopic (those wait for
// the cache and would deadlock). Reading methods (Topic, Topics, ...) are
// fine and already reflect the change.
func (c *Controller) Listen(fn func(TopicChange)) { c.cache.listen(fn) }
