package controller

// Client metrics subscriptions (CLIENT_METRICS config resources, KIP-714:
// `kafka-client-metrics`), one key per subscription beside the group configs:
//
//	<prefix>/configs/client_metrics/<subscription name>    {"metrics":"...",...}
//
// As with group configs the metadata cache keeps every subscription in its
// snapshots, so GetTelemetrySubscriptions and PushTelemetry match a client
// against them without an etcd round trip, on every broker.

import (
	"context"
	"maps"
	"slices"
	"strings"
)

const clientMetricsSegment = "configs/client_metrics/"

func (k keyspace) clientMetrics(name string) string { return k.root() + clientMetricsSegment + name }

// parseClientMetricsKey classifies rest (a key without the root) under
// configs/client_metrics/; the subscription name goes in parsedKey.group.
func parseClientMetricsKey(rest string) parsedKey {
	name, ok := strings.CutPrefix(rest, clientMetricsSegment)
	if !ok || name == "" {
		return parsedKey{}
	}
	return parsedKey{kind: keyClientMetrics, group: name}
}

// ClientMetricsConfigs returns the configs of subscription name (nil: none).
// The map is shared with the cache: read it, do not modify it.
func (c *Controller) ClientMetricsConfigs(name string) map[string]string {
	return c.cache.snapshot().clientMetrics[name]
}

// ClientMetricsSubscriptions returns every subscription's configs, by name.
// The maps are shared with the cache: read them, do not modify them. The
// result is the same map until a subscription changes, so a caller may use
// its identity to tell whether to recompute what it derives from it.
func (c *Controller) ClientMetricsSubscriptions() map[string]map[string]string {
	return c.cache.snapshot().clientMetrics
}

// ClientMetricsNames returns the subscriptions' names, sorted.
func (c *Controller) ClientMetricsNames() []string {
	return slices.Sorted(maps.Keys(c.cache.snapshot().clientMetrics))
}

// UpdateClientMetricsConfigs replaces the configs of subscription name by
// what update returns for the current ones, as UpdateGroupConfigs does: an
// empty result deletes the subscription.
func (c *Controller) UpdateClientMetricsConfigs(ctx context.Context, name string, update ConfigUpdate) error {
	return c.updateNamedConfigs(ctx, c.ks.clientMetrics(name), "client metrics subscription", name, update)
}
