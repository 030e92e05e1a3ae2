package controller

// Configuration overrides in etcd: topic configs (AlterConfigs and
// IncrementalAlterConfigs on TOPIC resources) and dynamic broker configs
// (KIP-226: BROKER resources).
//
// A topic's configs are a field of its topics/<name> record, so changing them
// is one compare-and-swap on that key (on its mod revision). The watch cache
// then delivers the topic with its new configs to the listeners like any
// other change, which is how the brokers' open logs pick them up.
//
// Dynamic broker configs live beside the topics, as Kafka kept them in
// ZooKeeper under /config/brokers:
//
//	<prefix>/configs/brokers/<node id>    {"key":"value",...}  one broker's overrides
//	<prefix>/configs/brokers/<default>    {"key":"value",...}  the cluster-wide default
//
// The metadata cache ignores these keys; a broker follows them with
// WatchBrokerConfigs. Values are stored as given (passwords included, as
// Kafka's KRaft metadata log stores them).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxConfigCASAttempts bounds the read-modify-write retries of a config
// update that keeps losing to concurrent writers of the same key.
const maxConfigCASAttempts = 16

// DefaultBrokerConfigEntity is the entity name of the cluster-wide dynamic
// broker config: the empty resource name of a BROKER config resource.
const DefaultBrokerConfigEntity = ""

const (
	brokerConfigsSegment = "configs/brokers/"
	defaultEntityKey     = "<default>"
)

func (k keyspace) brokerConfigs() string { return k.root() + brokerConfigsSegment }

// brokerConfigEntity is the key of one entity: a node id or "" for the default.
func (k keyspace) brokerConfigEntity(entity string) string {
	if entity == DefaultBrokerConfigEntity {
		return k.brokerConfigs() + defaultEntityKey
	}
	return k.brokerConfigs() + entity
}

// parseBrokerConfigEntity returns the entity of a key under brokerConfigs.
func (k keyspace) parseBrokerConfigEntity(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, k.brokerConfigs())
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	if rest == defaultEntityKey {
		return DefaultBrokerConfigEntity, true
	}
	if _, err := strconv.ParseInt(rest, 10, 32); err != nil {
		return "", false
	}
	return rest, true
}

// ConfigUpdate computes an entity's new configs from its current ones (a
// copy, never nil, which it may modify and return). Returning an error aborts
// the update with that error.
type ConfigUpdate func(current map[string]string) (map[string]string, error)

// UpdateTopicConfigs replaces the configs of topic name by what update
// returns for the current ones, as one compare-and-swap on the topic's key
// (retried, with update called again, when another writer got there first),
// and returns once this controller's cache and listeners have applied it.
// Nothing is written when update returns the current configs unchanged. A
// missing topic is UNKNOWN_TOPIC_OR_PARTITION with Kafka's message.
func (c *Controller) UpdateTopicConfigs(ctx context.Context, name string, update ConfigUpdate) error {
	if !c.running() {
		return ErrNotStarted
	}
	key := c.ks.topic(name)
	for range maxConfigCASAttempts {
		resp, err := c.client.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("controller: reading topic %s: %w", name, err)
		}
		if len(resp.Kvs) == 0 {
			return apiError(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
		}
		kv := resp.Kvs[0]
		// The record is rewritten field by field so that fields this file
		// does not know about survive.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(kv.Value, &fields); err != nil {
			return fmt.Errorf("controller: decoding topic %s: %w", name, err)
		}
		current := map[string]string{}
		if raw, ok := fields["configs"]; ok {
			if err := json.Unmarshal(raw, &current); err != nil {
				return fmt.Errorf("controller: decoding the configs of topic %s: %w", name, err)
			}
			if current == nil {
				current = map[string]string{}
			}
		}
		next, err := update(maps.Clone(current))
		if err != nil {
			return err
		}
		if maps.Equal(next, current) {
			return nil
		}
		if len(next) == 0 {
			delete(fields, "configs")
		} else {
			fields["configs"], _ = json.Marshal(next) // a string map always encodes
		}
		value, _ := json.Marshal(fields)
		txn, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, string(value))).
			Commit()
		if err != nil {
			return fmt.Errorf("controller: writing the configs of topic %s: %w", name, err)
		}
		if !txn.Succeeded {
			continue // changed since read: start over from the new value
		}
		if err := c.cache.waitForRevision(ctx, c.stop, txn.Header.Revision); err != nil {
			return fmt.Errorf("controller: configs of topic %s written, waiting for the metadata cache: %w", name, err)
		}
		c.log.Info("altered topic configs", "topic", name, "revision", txn.Header.Revision)
		if current[minInsyncReplicasConfig] != next[minInsyncReplicasConfig] {
			return c.clearELRs(ctx, name)
		}
		return nil
	}
	return apiError(kerr.ConcurrentTransactions, "The configs of topic %s kept changing during the update; try again.", name)
}

// BrokerConfigSet is every dynamic broker config entity with its configs,
// keyed by entity (a node id in decimal, or DefaultBrokerConfigEntity).
type BrokerConfigSet map[string]map[string]string

// UpdateBrokerConfigs replaces the dynamic configs of entity (a node id in
// decimal, or DefaultBrokerConfigEntity) by what update returns for the
// current ones, as one compare-and-swap (retried on conflict). An empty
// result deletes the entity's key. It returns the etcd revision of the write
// (0 when nothing changed), which WatchBrokerConfigs reports once applied.
func (c *Controller) UpdateBrokerConfigs(ctx context.Context, entity string, update ConfigUpdate) (int64, error) {
	rev, err := c.updateConfigMap(ctx, c.ks.brokerConfigEntity(entity), fmt.Sprintf("broker configs %q", entity), update)
	if errors.Is(err, errConfigsKeptChanging) {
		return 0, apiError(kerr.ConcurrentTransactions, "The dynamic configs of broker %s kept changing during the update; try again.", entityName(entity))
	}
	if err == nil && rev != 0 {
		c.log.Info("altered dynamic broker configs", "entity", entityName(entity), "revision", rev)
	}
	return rev, err
}

// errConfigsKeptChanging is updateConfigMap's answer when every attempt lost
// to another writer; each caller words it for its entity.
var errConfigsKeptChanging = errors.New("controller: configs kept changing during the update")

// updateConfigMap replaces the string map stored as JSON at key (absent:
// empty) by what update returns for it, as one compare-and-swap retried up
// to maxConfigCASAttempts times; an empty result deletes the key. It returns
// the etcd revision of the write, 0 when update changed nothing. what names
// the entity in errors.
func (c *Controller) updateConfigMap(ctx context.Context, key, what string, update ConfigUpdate) (int64, error) {
	if !c.running() {
		return 0, ErrNotStarted
	}
	for range maxConfigCASAttempts {
		resp, err := c.client.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("controller: reading %s: %w", what, err)
		}
		current := map[string]string{}
		var modRev int64
		if len(resp.Kvs) > 0 {
			modRev = resp.Kvs[0].ModRevision
			if err := json.Unmarshal(resp.Kvs[0].Value, &current); err != nil {
				return 0, fmt.Errorf("controller: decoding %s: %w", what, err)
			}
			if current == nil {
				current = map[string]string{}
			}
		}
		next, err := update(maps.Clone(current))
		if err != nil {
			return 0, err
		}
		if maps.Equal(next, current) {
			return 0, nil
		}
		op := clientv3.OpDelete(key)
		if len(next) > 0 {
			value, _ := json.Marshal(next) // a string map always encodes
			op = clientv3.OpPut(key, string(value))
		}
		// ModRevision 0 means "absent", so the same comparison guards a
		// creation against a concurrent one.
		txn, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(op).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("controller: writing %s: %w", what, err)
		}
		if txn.Succeeded {
			return txn.Header.Revision, nil
		}
	}
	return 0, errConfigsKeptChanging
}

func entityName(entity string) string {
	if entity == DefaultBrokerConfigEntity {
		return defaultEntityKey
	}
	return entity
}

// WatchBrokerConfigs loads every dynamic broker config entity, calls fn with
// them and the etcd revision they were read at, and then, on a goroutine of
// its own until ctx ends or the controller closes, calls fn again after each
// change with the whole new set. fn is called from one goroutine at a time and
// owns the set it is given. The first load happens before WatchBrokerConfigs
// returns, within loadTimeout; its error is returned and nothing is watched.
func (c *Controller) WatchBrokerConfigs(ctx context.Context, loadTimeout time.Duration, fn func(set BrokerConfigSet, rev int64)) error {
	if !c.running() {
		return ErrNotStarted
	}
	lctx, cancel := context.WithTimeout(ctx, loadTimeout)
	set, rev, err := c.loadBrokerConfigs(lctx)
	cancel()
	if err != nil {
		return err
	}
	fn(set, rev)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.runCtx, cancel)
	if !c.bg.Go(func() {
		defer stop()
		defer cancel()
		c.watchBrokerConfigs(wctx, set, rev, fn)
	}) {
		stop()
		cancel()
		return ErrNotStarted
	}
	return nil
}

func (c *Controller) loadBrokerConfigs(ctx context.Context) (BrokerConfigSet, int64, error) {
	resp, err := c.client.Get(ctx, c.ks.brokerConfigs(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("controller: loading dynamic broker configs: %w", err)
	}
	set := BrokerConfigSet{}
	for _, kv := range resp.Kvs {
		c.applyBrokerConfigKey(set, string(kv.Key), kv.Value)
	}
	return set, resp.Header.Revision, nil
}

// applyBrokerConfigKey puts one key's value (nil: deleted) into set.
func (c *Controller) applyBrokerConfigKey(set BrokerConfigSet, key string, value []byte) {
	entity, ok := c.ks.parseBrokerConfigEntity(key)
	if !ok {
		return
	}
	if value == nil {
		delete(set, entity)
		return
	}
	configs := map[string]string{}
	if err := json.Unmarshal(value, &configs); err != nil {
		c.log.Warn("ignoring undecodable dynamic broker configs", "key", key, "err", err)
		return
	}
	set[entity] = configs
}

// watchBrokerConfigs follows the broker config keys after rev until ctx ends,
// reloading everything when the watch fails (compaction, lost connection).
func (c *Controller) watchBrokerConfigs(ctx context.Context, set BrokerConfigSet, rev int64, fn func(BrokerConfigSet, int64)) {
	clone := func(s BrokerConfigSet) BrokerConfigSet {
		out := make(BrokerConfigSet, len(s))
		for k, v := range s {
			out[k] = maps.Clone(v)
		}
		return out
	}
	set = clone(set) // fn owns the one it was given
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for resp := range c.client.Watch(wctx, c.ks.brokerConfigs(), clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if resp.Err() != nil || resp.Canceled {
				if ctx.Err() == nil {
					c.log.Warn("dynamic broker config watch failed; reloading", "err", resp.Err(), "revision", rev)
				}
				break
			}
			for _, ev := range resp.Events {
				var value []byte
				if ev.Type != clientv3.EventTypeDelete {
					value = ev.Kv.Value
				}
				c.applyBrokerConfigKey(set, string(ev.Kv.Key), value)
			}
			if len(resp.Events) > 0 {
				rev = resp.Events[len(resp.Events)-1].Kv.ModRevision
				fn(clone(set), rev)
			}
		}
		cancel()
		for backoff := 50 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 2*time.Second) {
			loaded, loadedRev, err := c.loadBrokerConfigs(ctx)
			if err == nil {
				set, rev = loaded, loadedRev
				fn(clone(set), rev)
				break
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
		}
	}
}
