package controller

// Finalized feature levels (UpdateFeatures, `kafka-features
// upgrade/downgrade`), one key holding the levels that updates set over the
// ones the broker advertises by default:
//
//	<prefix>/features    {"group.version":0,"eligible.leader.replicas.version":1}
//
// Kafka keeps them as FeatureLevelRecords in the metadata log and reports
// the offset of the image they come from as the finalized features epoch;
// Strait reports the key's mod revision (0 while no update was ever made).
// The metadata cache keeps them in its snapshots, so every broker's
// ApiVersions reads them without an etcd round trip.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const featuresSegment = "features"

func (k keyspace) features() string { return k.root() + featuresSegment }

// FinalizedFeatures is what UpdateFeatures stored: levels by feature name
// (read-only, shared with the cache) and the epoch, the etcd revision they
// were written at (0: never).
type FinalizedFeatures struct {
	Levels map[string]int16
	Epoch  int64
}

// FinalizedFeatures returns the stored feature levels.
func (c *Controller) FinalizedFeatures() FinalizedFeatures { return c.cache.snapshot().features }

// errFeaturesKeptChanging: the compare-and-swap lost every attempt.
var errFeaturesKeptChanging = errors.New("controller: the finalized features kept changing during the update")

// UpdateFeatures replaces the stored levels by what update returns for the
// current ones (a copy), with a compare-and-swap on the key, and waits for
// the metadata cache to hold the result. An error from update is returned
// as is, and nothing is written; neither is a result equal to the current
// levels.
func (c *Controller) UpdateFeatures(ctx context.Context, update func(current FinalizedFeatures) (map[string]int16, error)) error {
	if !c.running() {
		return ErrNotStarted
	}
	key := c.ks.features()
	for range maxConfigCASAttempts {
		resp, err := c.client.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("controller: reading the finalized features: %w", err)
		}
		cur := FinalizedFeatures{Levels: map[string]int16{}}
		if len(resp.Kvs) > 0 {
			cur.Epoch = resp.Kvs[0].ModRevision
			if err := json.Unmarshal(resp.Kvs[0].Value, &cur.Levels); err != nil {
				return fmt.Errorf("controller: decoding the finalized features: %w", err)
			}
			if cur.Levels == nil {
				cur.Levels = map[string]int16{}
			}
		}
		next, err := update(FinalizedFeatures{Levels: maps.Clone(cur.Levels), Epoch: cur.Epoch})
		if err != nil {
			return err
		}
		if maps.Equal(next, cur.Levels) {
			return nil
		}
		value, _ := json.Marshal(next) // a map of numbers always encodes
		txn, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", cur.Epoch)).
			Then(clientv3.OpPut(key, string(value))).
			Commit()
		if err != nil {
			return fmt.Errorf("controller: writing the finalized features: %w", err)
		}
		if !txn.Succeeded {
			continue
		}
		rev := txn.Header.Revision
		if err := c.cache.waitForRevision(ctx, c.stop, rev); err != nil {
			return fmt.Errorf("controller: finalized features written, waiting for the metadata cache: %w", err)
		}
		c.log.Info("finalized features updated", "levels", next, "revision", rev)
		return nil
	}
	return errFeaturesKeptChanging
}

// featureState is the cache's view of the features key.
type featureState struct {
	cur   FinalizedFeatures
	dirty bool
}

func (s *featureState) reset() { s.cur, s.dirty = FinalizedFeatures{}, true }

func (s *featureState) put(kv *mvccpb.KeyValue, c *metadataCache) {
	levels := map[string]int16{}
	if err := json.Unmarshal(kv.Value, &levels); err != nil {
		c.log.Warn("ignoring undecodable finalized features", "key", string(kv.Key), "err", err)
		return
	}
	s.cur, s.dirty = FinalizedFeatures{Levels: levels, Epoch: kv.ModRevision}, true
}

func (s *featureState) delete() { s.reset() }
