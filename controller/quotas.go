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

	"github.com/twmb/franz-go/pkg/kerr"
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

// quotaTxnLimit is the most entities one alteration may change: etcd's
// default max-txn-ops for an external etcd, Kafka's MAX_RECORDS_PER_USER_OP
// for the embedded one (whose limit is raised above it).
func (c *Controller) quotaTxnLimit() int {
	if c.etcd != nil {
		return maxRecordsPerTopicCreation
	}
	return 128
}

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
		// Every quota and its revision, read from etcd at one revision
		// (another broker may have changed them since the cache last
		// heard): one range read, however many entities the request names.
		resp, err := c.client.Get(ctx, c.ks.quotas(), clientv3.WithPrefix())
		if err != nil {
			return nil, fmt.Errorf("controller: reading client quotas: %w", err)
		}
		cur := map[quota.Entity]quota.Values{}
		modRevs := map[string]int64{}
		for _, kv := range resp.Kvs {
			pk := c.ks.parse(string(kv.Key))
			var v quota.Values
			if pk.kind != keyQuota || json.Unmarshal(kv.Value, &v) != nil {
				continue
			}
			cur[pk.quota] = v
			modRevs[string(kv.Key)] = kv.ModRevision
		}
		read := func(e quota.Entity) quota.Values { return cur[e] }
		results, changes := quota.Plan(alts, read)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if validateOnly || len(changes) == 0 {
			return results, nil
		}
		// One transaction holds every change, within etcd's max-txn-ops
		// (Kafka bounds a request's records at MAX_RECORDS_PER_USER_OP).
		if limit := c.quotaTxnLimit(); len(changes) > limit {
			return nil, apiError(kerr.InvalidRequest, "Too many client quota entities changed in one request: %d (at most %d)", len(changes), limit)
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
		tresp, err := c.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("controller: writing client quotas: %w", err)
		}
		if !tresp.Succeeded {
			continue
		}
		if err := c.cache.waitForRevision(ctx, c.stop, tresp.Header.Revision); err != nil {
			return nil, err
		}
		for _, ch := range changes {
			c.log.Info("client quotas altered", "entity", ch.Entity.String(), "quotas", ch.Values)
		}
		return results, nil
	}
	return nil, fmt.Errorf("controller: client quotas kept changing during %d attempts", maxQuotaAlterAttempts)
}
