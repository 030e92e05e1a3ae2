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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/etcd/api/v3/mvccpb"
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

// clientMetricsState is the applier's copy of every subscription; the
// snapshot shares it until the next change (copy on write).
type clientMetricsState struct {
	configs map[string]map[string]string
	dirty   bool
}

func (s *clientMetricsState) reset() {
	s.configs = map[string]map[string]string{}
	s.dirty = true
}

func (s *clientMetricsState) put(pk parsedKey, kv *mvccpb.KeyValue, c *metadataCache) {
	configs := map[string]string{}
	if err := json.Unmarshal(kv.Value, &configs); err != nil {
		c.log.Warn("ignoring undecodable client metrics subscription", "name", pk.group, "err", err)
		return
	}
	if s.configs == nil {
		s.configs = map[string]map[string]string{}
	}
	s.configs[pk.group] = configs
	s.dirty = true
}

func (s *clientMetricsState) delete(pk parsedKey) {
	delete(s.configs, pk.group)
	s.dirty = true
}

func (s *clientMetricsState) snapshot() map[string]map[string]string {
	s.dirty = false
	return maps.Clone(s.configs)
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
	rev, err := c.updateConfigMap(ctx, c.ks.clientMetrics(name), "the client metrics subscription "+name, update)
	switch {
	case errors.Is(err, errConfigsKeptChanging):
		return apiError(kerr.ConcurrentTransactions, "The configs of client metrics subscription %s kept changing during the update; try again.", name)
	case err != nil || rev == 0:
		return err
	}
	if err := c.cache.waitForRevision(ctx, c.stop, rev); err != nil {
		return fmt.Errorf("controller: client metrics subscription %s written, waiting for the metadata cache: %w", name, err)
	}
	c.log.Info("altered client metrics subscription", "name", name, "revision", rev)
	return nil
}
