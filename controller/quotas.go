package controller

// Client quotas in etcd and in the watch cache, altered as Kafka 4's
// ClientQuotaControlManager does (the judging is quota.Plan):
//
//	<prefix>/client_quotas/users/<user>                       {"producer_byte_rate":1048576,...}
//	<prefix>/client_quotas/users/<user>/clients/<client-id>
//	<prefix>/client_quotas/clients/<client-id>
//	<prefix>/client_quotas/ips/<ip>
//
// as Kafka's old /config/users/... layout: a name is query-escaped, and the
// default entity is <default> (which no escaped name can be). A key holds
// one entity's quotas; an entity with none left has no key. Every broker
// reads them from its cache snapshot, never from etcd per request.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strait/strait/quota"
)

const (
	quotasSegment = "client_quotas/"
	defaultEntity = "<default>"
)

func escapeQuotaName(n quota.Name) string {
	if n.Default {
		return defaultEntity
	}
	return url.QueryEscape(n.Value)
}

func unescapeQuotaName(s string) (quota.Name, bool) {
	if s == defaultEntity {
		return quota.DefaultName(), true
	}
	v, err := url.QueryUnescape(s)
	if err != nil || v == "" {
		return quota.Name{}, false
	}
	return quota.Named(v), true
}

func (k keyspace) quotas() string { return k.root() + quotasSegment }

func (k keyspace) quota(e quota.Entity) string {
	var parts []string
	if e.User.Present {
		parts = append(parts, "users", escapeQuotaName(e.User))
	}
	if e.ClientID.Present {
		parts = append(parts, "clients", escapeQuotaName(e.ClientID))
	}
	if e.IP.Present {
		parts = append(parts, "ips", escapeQuotaName(e.IP))
	}
	return k.quotas() + strings.Join(parts, "/")
}

// parseQuotaKey classifies rest (a key without the root) under client_quotas/.
func parseQuotaKey(rest string) parsedKey {
	r, _ := strings.CutPrefix(rest, quotasSegment)
	segs := strings.Split(r, "/")
	if len(segs)%2 != 0 {
		return parsedKey{}
	}
	var e quota.Entity
	for i := 0; i < len(segs); i += 2 {
		n, ok := unescapeQuotaName(segs[i+1])
		if !ok {
			return parsedKey{}
		}
		switch {
		case segs[i] == "users" && i == 0:
			e.User = n
		case segs[i] == "clients" && !e.ClientID.Present && !e.IP.Present:
			e.ClientID = n
		case segs[i] == "ips" && i == 0 && len(segs) == 2:
			e.IP = n
		default:
			return parsedKey{}
		}
	}
	return parsedKey{kind: keyQuota, quota: e}
}

// quotaState is the applier's copy of the quotas; snapshot copies it when dirty.
type quotaState struct {
	m     map[quota.Entity]quota.Values
	dirty bool
}

func (q *quotaState) reset() { q.m = map[quota.Entity]quota.Values{}; q.dirty = true }

func (q *quotaState) put(pk parsedKey, kv *mvccpb.KeyValue, log *slog.Logger) {
	var v quota.Values
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		log.Warn("ignoring undecodable client quota", "entity", pk.quota.String(), "err", err)
		return
	}
	if q.m == nil {
		q.m = map[quota.Entity]quota.Values{}
	}
	if len(v) == 0 {
		delete(q.m, pk.quota)
	} else {
		q.m[pk.quota] = v
	}
	q.dirty = true
}

func (q *quotaState) delete(pk parsedKey) {
	delete(q.m, pk.quota)
	q.dirty = true
}

// snapshot shares the Values (never modified once cached) and clears dirty.
func (q *quotaState) snapshot() *quota.Snapshot {
	m := make(map[quota.Entity]quota.Values, len(q.m))
	for e, v := range q.m {
		m[e] = v
	}
	q.dirty = false
	return quota.NewSnapshot(m)
}

// ClientQuotas is the quotas as this broker's cache holds them (never nil).
func (c *Controller) ClientQuotas() *quota.Snapshot {
	if s := c.cache.snapshot().quotas; s != nil {
		return s
	}
	return noQuotas
}

var noQuotas = quota.NewSnapshot(nil)

// quotaMu serializes this process's quota changes; the compare-and-swap on
// each changed key orders them across brokers.
var quotaMu sync.Mutex

// maxQuotaAlterAttempts bounds the retries of an alteration whose entities
// keep changing underneath it.
const maxQuotaAlterAttempts = 16

// AlterClientQuotas judges and (unless validateOnly) applies alterations in
// one etcd transaction, as Kafka's controller: one result per entry. It
// returns once this broker's cache shows the change.
func (c *Controller) AlterClientQuotas(ctx context.Context, alts []quota.Alteration, validateOnly bool) ([]quota.Result, error) {
	if !c.running() {
		return nil, ErrNotStarted
	}
	quotaMu.Lock()
	defer quotaMu.Unlock()
	for attempt := 0; attempt < maxQuotaAlterAttempts; attempt++ {
		// The entities' current quotas and revisions, read from etcd at
		// one revision: another broker may have changed them since the
		// cache last heard.
		cur := map[quota.Entity]quota.Values{}
		modRevs := map[string]int64{}
		read := func(e quota.Entity) quota.Values {
			key := c.ks.quota(e)
			if _, done := modRevs[key]; done {
				return cur[e]
			}
			modRevs[key] = 0
			resp, err := c.client.Get(ctx, key)
			if err != nil || len(resp.Kvs) == 0 {
				return nil
			}
			modRevs[key] = resp.Kvs[0].ModRevision
			var v quota.Values
			if json.Unmarshal(resp.Kvs[0].Value, &v) == nil {
				cur[e] = v
			}
			return v
		}
		results, changes := quota.Plan(alts, read)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if validateOnly || len(changes) == 0 {
			return results, nil
		}
		var ops []clientv3.Op
		var cmps []clientv3.Cmp
		for _, ch := range changes {
			key := c.ks.quota(ch.Entity)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", modRevs[key]))
			if len(ch.Values) == 0 {
				ops = append(ops, clientv3.OpDelete(key))
				continue
			}
			b, err := json.Marshal(ch.Values)
			if err != nil {
				return nil, fmt.Errorf("controller: encoding client quotas: %w", err)
			}
			ops = append(ops, clientv3.OpPut(key, string(b)))
		}
		resp, err := c.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("controller: writing client quotas: %w", err)
		}
		if !resp.Succeeded {
			continue
		}
		if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
			return nil, err
		}
		for _, ch := range changes {
			c.log.Info("client quotas altered", "entity", ch.Entity.String(), "quotas", ch.Values)
		}
		return results, nil
	}
	return nil, fmt.Errorf("controller: client quotas kept changing during %d attempts", maxQuotaAlterAttempts)
}
