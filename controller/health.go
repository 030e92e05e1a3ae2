package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Health is what a readiness probe and the metrics ask of the control
// plane, measured by one etcd read.
type Health struct {
	// RoundTrip is the time the read took; zero when it failed.
	RoundTrip time.Duration
	// Err is why the broker is not ready as far as etcd is concerned: etcd
	// unreachable, this broker not registered, or the metadata watch behind
	// the newest change under the cluster's prefix.
	Err error
	// Active is whether this broker is the active controller.
	Active bool
}

// Health reads the newest change under the cluster's prefix (keys only, one
// key) and compares it with the watch cache: the cache is caught up once it
// has applied that change's revision. A deletion is not seen by this read,
// so a cache behind only on deletions passes; the next write catches it.
func (c *Controller) Health(ctx context.Context) Health {
	h := Health{Active: c.active.Load()}
	if c.client == nil {
		h.Err = fmt.Errorf("controller not started")
		return h
	}
	start := time.Now()
	resp, err := c.client.Get(ctx, c.ks.root(), clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend))
	if err != nil {
		h.Err = fmt.Errorf("etcd unreachable: %w", err)
		return h
	}
	h.RoundTrip = time.Since(start)
	snap := c.cache.snapshot()
	if len(resp.Kvs) > 0 {
		if newest := resp.Kvs[0].ModRevision; snap.rev < newest {
			h.Err = fmt.Errorf("metadata watch at revision %d, behind etcd's %d", snap.rev, newest)
			return h
		}
	}
	if !slices.ContainsFunc(snap.brokers, func(b BrokerInfo) bool { return b.NodeID == c.cfg.NodeID }) {
		h.Err = fmt.Errorf("broker %d not registered", c.cfg.NodeID)
	}
	return h
}
