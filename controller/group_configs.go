package controller

// Group configs (GROUP config resources: `kafka-configs --entity-type
// groups`), one key per group beside the dynamic broker configs:
//
//	<prefix>/configs/groups/<group id>    {"key":"value",...}
//
// A group id may contain '/': everything after configs/groups/ is the id.
// A group need not exist to have configs (Kafka lets them be set first).
// The metadata cache keeps every group's configs in its snapshots, so the
// group coordinator reads them on each heartbeat without an etcd round trip
// and sees a change as soon as the watch applies it, on every broker.

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

const groupConfigsSegment = "configs/groups/"

func (k keyspace) groupConfigs(group string) string { return k.root() + groupConfigsSegment + group }

// parseGroupConfigKey classifies rest (a key without the root) under configs/groups/.
func parseGroupConfigKey(rest string) parsedKey {
	group, ok := strings.CutPrefix(rest, groupConfigsSegment)
	if !ok || group == "" {
		return parsedKey{}
	}
	return parsedKey{kind: keyGroupConfig, group: group}
}

// namedConfigs is the applier's copy of configs stored one key per name
// (group configs here, client metrics subscriptions); the snapshot shares it
// until the next change (copy on write).
type namedConfigs struct {
	what    string // what a name is, for the log: "group", "client metrics subscription"
	configs map[string]map[string]string
	dirty   bool
}

func (s *namedConfigs) reset() {
	s.configs = map[string]map[string]string{}
	s.dirty = true
}

func (s *namedConfigs) put(pk parsedKey, kv *mvccpb.KeyValue, c *metadataCache) {
	configs := map[string]string{}
	if err := json.Unmarshal(kv.Value, &configs); err != nil {
		c.log.Warn("ignoring undecodable configs", "of", s.what, "name", pk.group, "err", err)
		return
	}
	if s.configs == nil {
		s.configs = map[string]map[string]string{}
	}
	s.configs[pk.group] = configs
	s.dirty = true
}

func (s *namedConfigs) delete(pk parsedKey) {
	delete(s.configs, pk.group)
	s.dirty = true
}

// snapshot returns a copy for a metadataSnapshot (the inner maps are never
// modified once stored, so they are shared) and clears dirty.
func (s *namedConfigs) snapshot() map[string]map[string]string {
	s.dirty = false
	return maps.Clone(s.configs)
}

// updateNamedConfigs replaces the configs at key (those of name, a what) by
// what update returns for the current ones, as one compare-and-swap
// (retried on conflict), and returns once this controller's cache has
// applied it. An empty result deletes the key; an unchanged one writes
// nothing.
func (c *Controller) updateNamedConfigs(ctx context.Context, key, what, name string, update ConfigUpdate) error {
	rev, err := c.updateConfigMap(ctx, key, "the configs of "+what+" "+name, update)
	switch {
	case errors.Is(err, errConfigsKeptChanging):
		return apiError(kerr.ConcurrentTransactions, "The configs of %s %s kept changing during the update; try again.", what, name)
	case err != nil || rev == 0:
		return err
	}
	if err := c.cache.waitForRevision(ctx, c.stop, rev); err != nil {
		return fmt.Errorf("controller: configs of %s %s written, waiting for the metadata cache: %w", what, name, err)
	}
	c.log.Info("altered configs", "of", what, "name", name, "revision", rev)
	return nil
}

// GroupConfigs returns the configs set on group (nil: none). The map is
// shared with the cache: read it, do not modify it.
func (c *Controller) GroupConfigs(group string) map[string]string {
	return c.cache.snapshot().groupConfigs[group]
}

// UpdateGroupConfigs replaces the configs of group by what update returns
// for the current ones (updateNamedConfigs).
func (c *Controller) UpdateGroupConfigs(ctx context.Context, group string, update ConfigUpdate) error {
	return c.updateNamedConfigs(ctx, c.ks.groupConfigs(group), "group", group, update)
}

// GroupConfigIDs returns the groups that have configs, sorted.
func (c *Controller) GroupConfigIDs() []string {
	return slices.Sorted(maps.Keys(c.cache.snapshot().groupConfigs))
}
