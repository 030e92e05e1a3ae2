package controller

// SCRAM credentials: AlterUserScramCredentials and
// DescribeUserScramCredentials as Kafka 4's controller and metadata image
// answer them (ScramControlManager.alterCredentials, ScramImage.describe),
// stored under scram/<user>/<mechanism> (auth_cache.go).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strait/strait/security"
)

// Kafka's ScramMechanism type bytes (org.apache.kafka.clients.admin.ScramMechanism).
const (
	ScramMechanismUnknown int8 = 0
	ScramMechanismSHA256  int8 = 1
	ScramMechanismSHA512  int8 = 2
)

// ScramMechanismName is the SASL name of a mechanism type, "" if unknown.
func ScramMechanismName(t int8) string {
	switch t {
	case ScramMechanismSHA256:
		return security.ScramSHA256
	case ScramMechanismSHA512:
		return security.ScramSHA512
	}
	return ""
}

// ScramMechanismType is the type byte of a SASL mechanism name (0 if unknown).
func ScramMechanismType(name string) int8 {
	switch name {
	case security.ScramSHA256:
		return ScramMechanismSHA256
	case security.ScramSHA512:
		return ScramMechanismSHA512
	}
	return ScramMechanismUnknown
}

// ScramDeletion is one deletion of an AlterUserScramCredentials request.
type ScramDeletion struct {
	User      string
	Mechanism int8
}

// ScramUpsertion is one upsertion: the client sends the salt and the salted
// password (never the password); the stored and server keys are derived here.
type ScramUpsertion struct {
	User           string
	Mechanism      int8
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// ScramAlterResult is one user's outcome; Err is nil or an *Error.
type ScramAlterResult struct {
	User string
	Err  error
}

// maxScramAlterAttempts bounds the retries of an alteration whose deleted
// credentials keep changing underneath it.
const maxScramAlterAttempts = 16

// scramMu serializes this process's credential changes, so a request's
// verdicts and its write are not interleaved with another's; the
// compare-and-swap on the deleted credentials orders them across brokers.
var scramMu sync.Mutex

const scramDuplicate = "A user credential cannot be altered twice in the same request"

// AlterScramCredentials applies deletions and upsertions atomically (one etcd
// transaction) and returns one result per user named, with Kafka's codes and
// messages: UNACCEPTABLE_CREDENTIAL (empty user name, iterations outside
// 4096..16384), UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE (a user named
// twice), RESOURCE_NOT_FOUND (deleting a missing credential). Results list
// the deletions done, then the upsertions done, then the failures. It
// returns once this broker's cache shows the change.
func (c *Controller) AlterScramCredentials(ctx context.Context, deletions []ScramDeletion, upsertions []ScramUpsertion) ([]ScramAlterResult, error) {
	if !c.running() {
		return nil, ErrNotStarted
	}
	scramMu.Lock()
	defer scramMu.Unlock()
	for attempt := 0; attempt < maxScramAlterAttempts; attempt++ {
		// The deletions' current state, read at one revision.
		var gets []clientv3.Op
		for _, d := range deletions {
			if name := ScramMechanismName(d.Mechanism); name != "" && d.User != "" {
				gets = append(gets, clientv3.OpGet(c.ks.scram(d.User, name)))
			}
		}
		modRevs := map[string]int64{}
		if len(gets) > 0 {
			resp, err := c.client.Txn(ctx).Then(gets...).Commit()
			if err != nil {
				return nil, fmt.Errorf("controller: reading SCRAM credentials: %w", err)
			}
			for _, r := range resp.Responses {
				for _, kv := range r.GetResponseRange().Kvs {
					modRevs[string(kv.Key)] = kv.ModRevision
				}
			}
		}
		results, ops, cmps := c.planScramAlter(deletions, upsertions, modRevs)
		if len(ops) == 0 {
			return results, nil
		}
		resp, err := c.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("controller: writing SCRAM credentials: %w", err)
		}
		if !resp.Succeeded {
			continue // a deleted credential changed meanwhile: judge again
		}
		if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
			return nil, err
		}
		for _, r := range results {
			if r.Err == nil {
				c.log.Info("SCRAM credentials altered", "user", r.User)
			}
		}
		return results, nil
	}
	return nil, errors.New("controller: SCRAM credentials keep changing concurrently")
}

// planScramAlter is ScramControlManager.alterCredentials: the per-user
// verdicts, and the etcd operations (with their guards) of the accepted ones.
// existing holds the mod revision of every deletion's credential present.
func (c *Controller) planScramAlter(deletions []ScramDeletion, upsertions []ScramUpsertion, existing map[string]int64) ([]ScramAlterResult, []clientv3.Op, []clientv3.Cmp) {
	var order []string // users in the order first named, for the failures
	userErr := map[string]error{}
	toDelete := map[string]ScramDeletion{}
	toUpsert := map[string]ScramUpsertion{}
	var delOrder, upOrder []string
	fail := func(user string, err error) {
		if _, seen := userErr[user]; !seen {
			order = append(order, user)
		}
		userErr[user] = err
	}
	for _, d := range deletions {
		if _, failed := userErr[d.User]; failed {
			continue
		}
		if _, dup := toDelete[d.User]; dup {
			delete(toDelete, d.User)
			fail(d.User, apiError(kerr.DuplicateResource, scramDuplicate))
			continue
		}
		if err := validateScramUser(d.User, d.Mechanism); err != nil {
			fail(d.User, err)
			continue
		}
		if _, ok := existing[c.ks.scram(d.User, ScramMechanismName(d.Mechanism))]; !ok {
			fail(d.User, apiError(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"))
			continue
		}
		toDelete[d.User] = d
		delOrder = append(delOrder, d.User)
	}
	for _, u := range upsertions {
		if _, failed := userErr[u.User]; failed {
			continue
		}
		_, wasDel := toDelete[u.User]
		_, wasUp := toUpsert[u.User]
		if wasDel || wasUp {
			delete(toDelete, u.User)
			delete(toUpsert, u.User)
			fail(u.User, apiError(kerr.DuplicateResource, scramDuplicate))
			continue
		}
		if err := validateScramUser(u.User, u.Mechanism); err != nil {
			fail(u.User, err)
			continue
		}
		switch {
		case u.Iterations < security.ScramMinIterations:
			fail(u.User, apiError(kerr.UnacceptableCredential, "Too few iterations"))
			continue
		case u.Iterations > security.ScramMaxIterations:
			fail(u.User, apiError(kerr.UnacceptableCredential, "Too many iterations"))
			continue
		}
		toUpsert[u.User] = u
		upOrder = append(upOrder, u.User)
	}

	var results []ScramAlterResult
	var ops []clientv3.Op
	var cmps []clientv3.Cmp
	for _, user := range delOrder {
		d, ok := toDelete[user]
		if !ok {
			continue
		}
		key := c.ks.scram(d.User, ScramMechanismName(d.Mechanism))
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", existing[key]))
		ops = append(ops, clientv3.OpDelete(key))
		results = append(results, ScramAlterResult{User: user})
	}
	for _, user := range upOrder {
		u, ok := toUpsert[user]
		if !ok {
			continue
		}
		name := ScramMechanismName(u.Mechanism)
		cred, err := security.NewScramCredential(name, u.Salt, u.SaltedPassword, u.Iterations)
		if err != nil {
			fail(user, apiError(kerr.UnknownServerError, "%v", err))
			continue
		}
		value, err := jsonValue(scramRecord{Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations})
		if err != nil {
			fail(user, err)
			continue
		}
		ops = append(ops, clientv3.OpPut(c.ks.scram(u.User, name), value))
		results = append(results, ScramAlterResult{User: user})
	}
	for _, user := range order {
		results = append(results, ScramAlterResult{User: user, Err: userErr[user]})
	}
	return results, ops, cmps
}

// validateScramUser is ScramControlManager.validateScramUsernameAndMechanism.
func validateScramUser(user string, mechanism int8) error {
	if user == "" {
		return apiError(kerr.UnacceptableCredential, "Username must not be empty")
	}
	if ScramMechanismName(mechanism) == "" {
		return apiError(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return nil
}

// ScramCredentialInfo is a mechanism and its iterations: what Describe shows
// of a credential.
type ScramCredentialInfo struct {
	Mechanism  int8
	Iterations int32
}

// ScramDescribeResult is one user's answer; Err is nil or an *Error.
type ScramDescribeResult struct {
	User        string
	Credentials []ScramCredentialInfo
	Err         error
}

// DescribeScramCredentials is ScramImage.describe over the cache: every user
// with a credential when users is empty, else each named user once, with
// RESOURCE_NOT_FOUND for one without credentials and DUPLICATE_RESOURCE for
// one named twice. Users come sorted (all) or in the order first named.
func (c *Controller) DescribeScramCredentials(users []string) []ScramDescribeResult {
	scram := c.cache.snapshot().auth.scram
	var names []string
	dup := map[string]bool{}
	if len(users) == 0 {
		names = slices.Sorted(maps.Keys(scram))
	} else {
		for _, u := range users {
			if _, seen := dup[u]; seen {
				dup[u] = true
				continue
			}
			dup[u] = false
			names = append(names, u)
		}
	}
	out := make([]ScramDescribeResult, 0, len(names))
	for _, u := range names {
		r := ScramDescribeResult{User: u}
		switch creds := scram[u]; {
		case dup[u]:
			r.Err = apiError(kerr.DuplicateResource, "Cannot describe SCRAM credentials for the same user twice in a single request: %s", u)
		case len(creds) == 0:
			r.Err = apiError(kerr.ResourceNotFound, "Attempt to describe a user credential that does not exist: %s", u)
		default:
			for _, m := range slices.Sorted(maps.Keys(creds)) {
				r.Credentials = append(r.Credentials, ScramCredentialInfo{Mechanism: ScramMechanismType(m), Iterations: creds[m].Iterations})
			}
		}
		out = append(out, r)
	}
	return out
}
