package controller

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// establishSession grants a lease, registers the broker under it (fenced),
// unfences it (rejoin) and starts campaigning for controller with it. It
// returns the revision at which the broker is registered and unfenced.
func (c *Controller) establishSession(ctx context.Context) (int64, error) {
	// The lease is granted here rather than by NewSession, whose grant would
	// ignore ctx (it uses the session's long-lived context).
	lease, err := c.client.Grant(ctx, c.cfg.LeaseTTLSeconds)
	if err != nil {
		return 0, fmt.Errorf("controller: granting the registration lease: %w", err)
	}
	session, err := concurrency.NewSession(c.client, concurrency.WithLease(lease.ID),
		concurrency.WithTTL(int(c.cfg.LeaseTTLSeconds)), concurrency.WithContext(c.runCtx))
	if err != nil {
		c.revoke(lease.ID)
		return 0, fmt.Errorf("controller: keeping the registration lease alive: %w", err)
	}
	rev, err := c.register(ctx, lease.ID)
	if err == nil {
		rev, err = c.rejoin(ctx, rev)
	}
	if err != nil {
		session.Orphan()
		c.revoke(lease.ID)
		return 0, err
	}
	campaignCtx, cancelCampaign := context.WithCancel(c.runCtx)
	c.sessionMu.Lock()
	if c.state.Load() == stateClosed {
		c.sessionMu.Unlock()
		cancelCampaign()
		session.Orphan()
		c.revoke(lease.ID)
		return 0, ErrNotStarted
	}
	c.session, c.cancelCampaign = session, cancelCampaign
	// Refused only once Close has begun, whose shutdown then revokes the
	// session stored here.
	c.bg.Go(func() { c.campaign(campaignCtx, session) })
	c.sessionMu.Unlock()
	return rev, nil
}

func (c *Controller) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.client.Revoke(ctx, lease); err != nil {
		c.log.Warn("revoking lease failed; it will expire", "lease", int64(lease), "err", err)
	}
}

// register puts brokers/<id> under lease if no live broker holds that id, as
// Kafka refuses a second registration of a live broker id. An existing
// registration in an embedded etcd without peers can only be this broker's
// own from before a crash (nobody else can have used this private etcd under
// our id), so its lease is revoked at once; in a shared etcd (external, or an
// embedded member of a cluster) we wait for it to expire.
func (c *Controller) register(ctx context.Context, lease clientv3.LeaseID) (int64, error) {
	key := c.ks.broker(c.cfg.NodeID)
	// Registered fenced, as Kafka registers brokers: rejoin unfences it.
	value := encodeBroker(BrokerInfo{NodeID: c.cfg.NodeID, Rack: c.cfg.Rack, Endpoints: c.cfg.Endpoints,
		Fenced: true, InControlledShutdown: c.shuttingDown.Load(), TruncatesOnFetch: true})
	for {
		resp, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, value, clientv3.WithLease(lease))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("controller: registering broker %d: %w", c.cfg.NodeID, err)
		}
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // deleted in between
		}
		existing := kvs[0]
		if c.etcd != nil && !c.cfg.member.hasPeers() && existing.Lease != 0 {
			c.log.Info("revoking this broker's registration left by a previous run", "node.id", c.cfg.NodeID)
			if _, err := c.client.Revoke(ctx, clientv3.LeaseID(existing.Lease)); err != nil {
				return 0, fmt.Errorf("controller: revoking the stale registration of broker %d: %w", c.cfg.NodeID, err)
			}
			continue
		}
		c.log.Warn("another broker is registered with this broker id; waiting for its registration to expire",
			"node.id", c.cfg.NodeID)
		if err := c.waitDeleted(ctx, key, existing.ModRevision); err != nil {
			return 0, fmt.Errorf("controller: broker %d: another broker is registered with that broker id: %w",
				c.cfg.NodeID, err)
		}
	}
}

// waitDeleted returns once key, last modified at rev, is deleted.
func (c *Controller) waitDeleted(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range c.client.Watch(wctx, key, clientv3.WithRev(rev+1)) {
		if err := resp.Err(); err != nil {
			return err
		}
		for _, ev := range resp.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
	}
	return ctx.Err()
}

// campaign runs for controller under session until ctx ends: once elected it
// performs the active controller's duties (runActive) for as long as it holds
// the election key. ControllerID is read from the cache, which sees every
// candidate.
func (c *Controller) campaign(ctx context.Context, session *concurrency.Session) {
	election := concurrency.NewElection(session, c.ks.election())
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := election.Campaign(ctx, strconv.Itoa(int(c.cfg.NodeID)))
		if err == nil {
			c.log.Info("this broker is the active controller", "node.id", c.cfg.NodeID)
			err = c.runActive(ctx, election)
			backoff = 100 * time.Millisecond
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-session.Done():
			return
		default:
		}
		c.log.Warn("not the active controller any more or election failed; campaigning again",
			"node.id", c.cfg.NodeID, "err", err, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
	}
}

// superviseSession re-establishes the registration whenever its lease is lost
// (etcd unreachable for longer than the TTL), until Close.
func (c *Controller) superviseSession() {
	for {
		c.sessionMu.Lock()
		session := c.session
		c.sessionMu.Unlock()
		if session == nil {
			return
		}
		select {
		case <-session.Done():
		case <-c.stop:
			return
		}
		select {
		case <-c.stop:
			return
		default:
		}
		if !c.awaitResume(session.Lease()) { // tests only: Pause
			return
		}
		c.log.Warn("the registration lease was lost; registering again", "node.id", c.cfg.NodeID)
		c.sessionMu.Lock()
		if c.cancelCampaign != nil {
			c.cancelCampaign()
		}
		c.sessionMu.Unlock()
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			ctx, cancel := context.WithTimeout(c.runCtx, startTimeout)
			_, err := c.establishSession(ctx)
			cancel()
			if err == nil {
				break
			}
			c.log.Warn("registering again failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-c.stop:
				return
			}
		}
	}
}
