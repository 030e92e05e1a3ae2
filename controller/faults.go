package controller

// Kill, Pause and Resume exist for tests (the broker's Kill, Pause and
// Resume, used by package straittest): a controller that goes away as a
// crashed process does, and one that stops keeping its lease alive as a
// SIGSTOP'd one does. Nothing in production calls them.

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Kill stops the controller as a crash would: no controlled shutdown, no
// resignation from the election, the registration lease not revoked (it
// expires after its TTL, broker.session.timeout.ms, and the active
// controller then fences the broker and moves its leaderships), and the
// embedded etcd member stopped at once, without handing its leadership to
// a peer. Unlike a crash, it returns only once every goroutine the
// controller started has ended and the embedded member released its data
// dir, so that a new Controller may use it in the same process. After
// Close or Kill, either does nothing.
func (c *Controller) Kill() error { return c.closeWith(c.abandon) }

func (c *Controller) abandon() error {
	c.etcdQuiet.Store(true)
	// Cut the control plane off first, so that nothing below (a campaign
	// resigning as its context ends) reaches etcd: the client closes, the
	// goroutines' contexts end, and the embedded member stops (HardStop:
	// no leadership transfer; its peers see it gone).
	var errs []error
	if c.client != nil {
		if err := c.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	c.sessionMu.Lock()
	session, cancelCampaign := c.session, c.cancelCampaign
	c.session, c.cancelCampaign = nil, nil
	c.sessionMu.Unlock()
	if cancelCampaign != nil {
		cancelCampaign()
	}
	if session != nil {
		session.Orphan() // stops the keepalives, revokes nothing
	}
	c.cancelRun()
	if c.etcd != nil {
		c.etcd.Server.HardStop()
	}
	c.bg.Wait()
	if c.etcd != nil {
		c.etcd.Close() // the member is stopped: this closes its listeners and files
	}
	return errors.Join(errs...)
}

// Pause stops the registration lease's keepalives without revoking the
// lease, as a stopped process's would stop: the lease expires after its
// TTL and the active controller fences the broker. The controller does not
// register again until Resume. Pausing twice does nothing.
func (c *Controller) Pause() {
	c.sessionMu.Lock()
	if c.paused != nil {
		c.sessionMu.Unlock()
		return
	}
	c.paused = make(chan struct{})
	session := c.session
	c.sessionMu.Unlock()
	c.log.Info("paused: the registration lease is no longer kept alive", "node.id", c.cfg.NodeID)
	if session != nil {
		session.Orphan()
	}
}

// Resume lets the controller register again after Pause: the paused
// lease is revoked if it has not expired yet, and a new one registers the
// broker (superviseSession).
func (c *Controller) Resume() {
	c.sessionMu.Lock()
	defer c.sessionMu.Unlock()
	if c.paused != nil {
		close(c.paused)
		c.paused = nil
	}
}

// awaitResume waits while the controller is paused, then revokes the
// lease that lapsed during the pause (if it has not expired yet). It
// returns false once Close or Kill began.
func (c *Controller) awaitResume(lease clientv3.LeaseID) bool {
	c.sessionMu.Lock()
	paused := c.paused
	c.sessionMu.Unlock()
	if paused == nil {
		return true
	}
	select {
	case <-paused:
	case <-c.stop:
		return false
	}
	ctx, cancel := context.WithTimeout(c.runCtx, 2*time.Second)
	defer cancel()
	if _, err := c.client.Revoke(ctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		c.log.Warn("revoking the lease of the pause failed; it expires by itself", "err", err)
	}
	return true
}
