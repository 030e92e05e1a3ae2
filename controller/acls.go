package controller

// ACLs, as Kafka 4's controller keeps them (AclControlManager) and its
// brokers' StandardAuthorizer reads them, stored one key per binding:
//
//	<prefix>/acls/<id>    {"resourceType","name","patternType","principal","host",
//	                       "operation","permissionType"} (Kafka's AccessControlEntryRecord)
//
// The id is derived from the binding (a SHA-256 of its fields), so creating
// a binding that exists, on any broker, writes the same key: a binding is
// stored once, as in Kafka's existingAcls. The cache indexes them into an
// acl.Set with every snapshot that changes them (auth_cache.go), so
// authorization never reads etcd.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strait/strait/security/acl"
)

const aclsSegment = "acls/"

func (k keyspace) acls() string         { return k.root() + aclsSegment }
func (k keyspace) acl(id string) string { return k.acls() + id }

// aclRecord is the JSON value of an acls/<id> key.
type aclRecord struct {
	ResourceType int8   `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  int8   `json:"patternType"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permissionType"`
}

func toACLRecord(b acl.Binding) aclRecord {
	return aclRecord{int8(b.ResourceType), b.Name, int8(b.Pattern), b.Principal, b.Host, int8(b.Operation), int8(b.Permission)}
}

func (r aclRecord) binding() acl.Binding {
	return acl.Binding{ResourceType: acl.ResourceType(r.ResourceType), Name: r.Name, Pattern: acl.PatternType(r.PatternType),
		Principal: r.Principal, Host: r.Host, Operation: acl.Operation(r.Operation), Permission: acl.Permission(r.Permission)}
}

// aclID is the key of b: the hex SHA-256 of its JSON record (fixed field
// order, so the same binding always gives the same id).
func aclID(b acl.Binding) string {
	v, _ := json.Marshal(toACLRecord(b))
	sum := sha256.Sum256(v)
	return hex.EncodeToString(sum[:16])
}

// parseACLKey classifies rest (a key without the root) under acls/.
func parseACLKey(rest string) parsedKey {
	id, ok := strings.CutPrefix(rest, aclsSegment)
	if !ok || id == "" || strings.Contains(id, "/") {
		return parsedKey{}
	}
	return parsedKey{kind: keyACL, aclID: id}
}

// decodeACL reads an acls/<id> value; a record that is not a valid binding
// is refused (and so ignored by the cache with a warning).
func decodeACL(v []byte) (acl.Binding, error) {
	var r aclRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return acl.Binding{}, err
	}
	b := r.binding()
	if err := b.Validate(); err != nil {
		return acl.Binding{}, err
	}
	return b, nil
}

// aclBatchOps bounds the operations of one ACL transaction within an
// external etcd's default --max-txn-ops of 128.
const aclBatchOps = 100

// maxACLDeletes is Kafka's MAX_RECORDS_PER_USER_OP for DeleteAcls.
const maxACLDeletes = 10000

// aclMu serializes this process's ACL changes, so the bindings a delete
// reads are not changed by another of its requests before it writes.
var aclMu sync.Mutex

// ACLs is the bindings of the cache's current snapshot, indexed.
func (c *Controller) ACLs() *acl.Set { return c.cache.snapshot().auth.acls }

// CreateACLs stores bindings and returns one error per binding, nil for
// those created or already present, an INVALID_REQUEST *Error with Kafka's
// message for those refused (acl.Binding.Validate). It returns once this
// broker's cache shows the bindings.
func (c *Controller) CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error) {
	if !c.running() {
		return nil, ErrNotStarted
	}
	aclMu.Lock()
	defer aclMu.Unlock()
	results := make([]error, len(bindings))
	current := c.ACLs()
	seen := map[string]bool{}
	var ops []clientv3.Op
	for i, b := range bindings {
		if err := b.Validate(); err != nil {
			results[i] = apiError(kerr.InvalidRequest, "%s", err.Error())
			continue
		}
		id := aclID(b)
		if seen[id] || current.Contains(b) {
			continue
		}
		seen[id] = true
		v, err := jsonValue(toACLRecord(b))
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(c.ks.acl(id), v))
	}
	if err := c.commitACLOps(ctx, ops); err != nil {
		return nil, fmt.Errorf("controller: writing ACLs: %w", err)
	}
	if len(ops) > 0 {
		c.log.Info("ACLs created", "count", len(ops))
	}
	return results, nil
}

// ACLDeleteResult is one DeleteAcls filter's outcome: the bindings it
// matched (and deleted), or Err (an *Error).
type ACLDeleteResult struct {
	Deleted []acl.Binding
	Err     error
}

// DeleteACLs deletes the bindings each filter matches, as Kafka's
// AclControlManager.deleteAcls: a filter with an UNKNOWN field is refused
// with INVALID_REQUEST; a binding matched by several filters is reported by
// each and deleted once. The bindings are read from etcd, not the cache, so
// a binding just created on another broker is seen. It returns once this
// broker's cache shows the deletions.
func (c *Controller) DeleteACLs(ctx context.Context, filters []acl.Filter) ([]ACLDeleteResult, error) {
	if !c.running() {
		return nil, ErrNotStarted
	}
	aclMu.Lock()
	defer aclMu.Unlock()
	resp, err := c.client.Get(ctx, c.ks.acls(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("controller: reading ACLs: %w", err)
	}
	type stored struct {
		key string
		b   acl.Binding
	}
	var all []stored
	for _, kv := range resp.Kvs {
		if b, err := decodeACL(kv.Value); err == nil {
			all = append(all, stored{string(kv.Key), b})
		}
	}
	results := make([]ACLDeleteResult, len(filters))
	toDelete := map[string]bool{}
	var ops []clientv3.Op
	for i, f := range filters {
		if err := f.Unknown(); err != nil {
			results[i].Err = apiError(kerr.InvalidRequest, "%s", err.Error())
			continue
		}
		var deleted []acl.Binding
		var keys []string
		for _, s := range all {
			if f.Matches(s.b) {
				deleted = append(deleted, s.b)
				if !toDelete[s.key] {
					keys = append(keys, s.key)
				}
			}
		}
		if len(toDelete)+len(keys) > maxACLDeletes {
			results[i].Err = apiError(kerr.UnknownServerError, "Cannot remove more than %d acls in a single delete operation.", maxACLDeletes)
			continue
		}
		for _, k := range keys {
			toDelete[k] = true
			ops = append(ops, clientv3.OpDelete(k))
		}
		results[i].Deleted = deleted
	}
	if err := c.commitACLOps(ctx, ops); err != nil {
		return nil, fmt.Errorf("controller: deleting ACLs: %w", err)
	}
	if len(ops) > 0 {
		c.log.Info("ACLs deleted", "count", len(ops))
	}
	return results, nil
}

// commitACLOps writes ops in transactions of at most aclBatchOps and waits
// for the cache to apply the last.
func (c *Controller) commitACLOps(ctx context.Context, ops []clientv3.Op) error {
	var rev int64
	for batch := range slices.Chunk(ops, aclBatchOps) {
		resp, err := c.client.Txn(ctx).Then(batch...).Commit()
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
	}
	if rev == 0 {
		return nil
	}
	return c.cache.waitForRevision(ctx, c.stop, rev)
}
