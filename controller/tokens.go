package controller

// Delegation tokens as Kafka 4's controller keeps them
// (DelegationTokenControlManager): created, renewed and expired by any
// broker with a compare-and-swap on delegation_tokens/<id> (auth_cache.go),
// looked up by HMAC in the watch cache, and removed once expired by the
// active controller every delegation.token.expiry.check.interval.ms. Who
// may ask (an authenticated, non-token connection) is the broker's check;
// the owner-or-renewer rule for renew and expire is here.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strait/strait/security"
)

// TokenConfig is the delegation.token.* settings. An empty SecretKey
// disables delegation tokens.
type TokenConfig struct {
	SecretKey           string        // delegation.token.secret.key: every broker must have the same
	MaxLifetime         time.Duration // delegation.token.max.lifetime.ms (default 7 days)
	ExpiryTime          time.Duration // delegation.token.expiry.time.ms (default 1 day)
	ExpiryCheckInterval time.Duration // delegation.token.expiry.check.interval.ms (default 1 hour)
}

// Kafka's defaults of the delegation.token.* durations.
const (
	DefaultTokenMaxLifetime         = 7 * 24 * time.Hour
	DefaultTokenExpiryTime          = 24 * time.Hour
	DefaultTokenExpiryCheckInterval = time.Hour
	maxTokenCASAttempts             = 16
)

func (t *TokenConfig) withDefaults() {
	if t.MaxLifetime <= 0 {
		t.MaxLifetime = DefaultTokenMaxLifetime
	}
	if t.ExpiryTime <= 0 {
		t.ExpiryTime = DefaultTokenExpiryTime
	}
	if t.ExpiryCheckInterval <= 0 {
		t.ExpiryCheckInterval = DefaultTokenExpiryCheckInterval
	}
}

// TokensEnabled reports whether delegation.token.secret.key is set.
func (c *Controller) TokensEnabled() bool { return c.cfg.DelegationTokens.SecretKey != "" }

// satAdd is Kafka's overflow-safe sum of a timestamp and a duration in ms.
func satAdd(now, d int64) int64 {
	if now > math.MaxInt64-d {
		return math.MaxInt64
	}
	return now + d
}

// CreateDelegationToken creates a token owned by owner, asked for by
// requester, renewable by renewers (which must be User principals:
// INVALID_PRINCIPAL_TYPE otherwise), living maxLifetimeMs (<= 0: the
// broker's delegation.token.max.lifetime.ms, which also caps it). It fails
// with DELEGATION_TOKEN_AUTH_DISABLED without a secret key. The token
// returned carries its HMAC; it returns once this broker's cache has it.
func (c *Controller) CreateDelegationToken(ctx context.Context, owner, requester security.Principal, renewers []security.Principal, maxLifetimeMs int64) (security.DelegationToken, error) {
	if !c.running() {
		return security.DelegationToken{}, ErrNotStarted
	}
	if !c.TokensEnabled() {
		return security.DelegationToken{}, kerr.DelegationTokenAuthDisabled
	}
	cfg := c.cfg.DelegationTokens
	now := c.cfg.Now().UnixMilli()
	maxLife := cfg.MaxLifetime.Milliseconds()
	if maxLifetimeMs > 0 {
		maxLife = min(maxLife, maxLifetimeMs)
	}
	maxTs := satAdd(now, maxLife)
	expiry := min(maxTs, satAdd(now, cfg.ExpiryTime.Milliseconds()))
	rec := tokenRecord{
		TokenID:   FormatUUID(NewKafkaUUID()),
		Owner:     toPrincipalRecord(owner),
		Requester: toPrincipalRecord(requester),
		Renewers:  []principalRecord{},
		IssueMs:   now,
		ExpiryMs:  expiry,
		MaxMs:     maxTs,
	}
	for _, r := range renewers {
		if r.Type != "User" {
			return security.DelegationToken{}, kerr.InvalidPrincipalType
		}
		rec.Renewers = append(rec.Renewers, toPrincipalRecord(r))
	}
	value, err := jsonValue(rec)
	if err != nil {
		return security.DelegationToken{}, err
	}
	key := c.ks.token(rec.TokenID)
	resp, err := c.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, value)).Commit()
	if err != nil {
		return security.DelegationToken{}, fmt.Errorf("controller: creating a delegation token: %w", err)
	}
	if !resp.Succeeded {
		return security.DelegationToken{}, errors.New("controller: delegation token id collision")
	}
	if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
		return security.DelegationToken{}, err
	}
	c.log.Info("delegation token created", "token.id", rec.TokenID, "owner", owner.String(), "requester", requester.String())
	t := &cachedToken{rec: rec, hmac: tokenHMAC([]byte(cfg.SecretKey), rec.TokenID)}
	return t.token(), nil
}

// RenewDelegationToken extends the expiry of the token whose HMAC is hmac
// to now + renewPeriodMs (<= 0, or more than delegation.token.expiry.time.ms:
// that), never past its max time, and returns the new expiry in ms. Errors:
// DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND,
// DELEGATION_TOKEN_EXPIRED, DELEGATION_TOKEN_OWNER_MISMATCH (principal is
// neither its owner nor a renewer).
func (c *Controller) RenewDelegationToken(ctx context.Context, principal security.Principal, hmac []byte, renewPeriodMs int64) (int64, error) {
	return c.updateToken(ctx, principal, hmac, func(rec *tokenRecord, now int64) (bool, error) {
		if rec.MaxMs < now || rec.ExpiryMs < now {
			return false, kerr.DelegationTokenExpired
		}
		life := c.cfg.DelegationTokens.ExpiryTime.Milliseconds()
		if renewPeriodMs > 0 {
			life = min(life, renewPeriodMs)
		}
		rec.ExpiryMs = min(rec.MaxMs, now+life)
		return false, nil
	}, true)
}

// ExpireDelegationToken sets the expiry of the token whose HMAC is hmac to
// now + expiryPeriodMs (not past its max time) and returns it; a negative
// period removes the token at once (its expiry is then now). Errors as
// RenewDelegationToken, the ownership checked before the expiry, as Kafka.
func (c *Controller) ExpireDelegationToken(ctx context.Context, principal security.Principal, hmac []byte, expiryPeriodMs int64) (int64, error) {
	return c.updateToken(ctx, principal, hmac, func(rec *tokenRecord, now int64) (bool, error) {
		if expiryPeriodMs < 0 {
			rec.ExpiryMs = now
			return true, nil
		}
		if rec.MaxMs < now || rec.ExpiryMs < now {
			return false, kerr.DelegationTokenExpired
		}
		rec.ExpiryMs = min(rec.MaxMs, satAdd(now, expiryPeriodMs))
		return false, nil
	}, false)
}

// updateToken finds the token by HMAC, checks principal may change it, lets
// change decide (remove: delete the key) and writes the result with a
// compare-and-swap, retried when another writer got there first.
func (c *Controller) updateToken(ctx context.Context, principal security.Principal, hmac []byte,
	change func(rec *tokenRecord, now int64) (remove bool, err error), renew bool) (int64, error) {
	if !c.running() {
		return 0, ErrNotStarted
	}
	if !c.TokensEnabled() {
		return 0, kerr.DelegationTokenAuthDisabled
	}
	lookup := base64.StdEncoding.EncodeToString(hmac)
	for attempt := 0; attempt < maxTokenCASAttempts; attempt++ {
		t := c.cache.snapshot().auth.byHMAC[lookup]
		if t == nil {
			return 0, kerr.DelegationTokenNotFound
		}
		if !t.rec.ownerOrRenewer(principal) {
			return 0, kerr.DelegationTokenOwnerMismatch
		}
		rec := t.rec
		rec.Renewers = slices.Clone(rec.Renewers)
		now := c.cfg.Now().UnixMilli()
		remove, err := change(&rec, now)
		if err != nil {
			return 0, err
		}
		key := c.ks.token(rec.TokenID)
		op := clientv3.OpDelete(key)
		if !remove {
			value, err := jsonValue(rec)
			if err != nil {
				return 0, err
			}
			op = clientv3.OpPut(key, value)
		}
		resp, err := c.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", t.modRev)).Then(op).Commit()
		if err != nil {
			return 0, fmt.Errorf("controller: updating a delegation token: %w", err)
		}
		// Either way the cache must reach this revision: to show our change,
		// or the one that beat us before we judge again.
		if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
			return 0, err
		}
		if resp.Succeeded {
			verb := "expired"
			if renew {
				verb = "renewed"
			}
			c.log.Info("delegation token "+verb, "token.id", rec.TokenID, "by", principal.String(), "expiry.ms", rec.ExpiryMs, "removed", remove)
			return rec.ExpiryMs, nil
		}
	}
	return 0, errors.New("controller: the delegation token keeps changing concurrently")
}

// DelegationTokens returns every cached token with its HMAC, sorted by id
// (none when tokens are disabled).
func (c *Controller) DelegationTokens() []security.DelegationToken {
	if !c.TokensEnabled() {
		return nil
	}
	tokens := c.cache.snapshot().auth.tokens
	out := make([]security.DelegationToken, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, t.token())
	}
	slices.SortFunc(out, func(a, b security.DelegationToken) int { return strings.Compare(a.TokenID, b.TokenID) })
	return out
}

// OwnerOrRenewer is Kafka's TokenInformation.ownerOrRenewer: p (type and
// name) is the token's owner or one of its renewers.
func OwnerOrRenewer(t security.DelegationToken, p security.Principal) bool {
	p = plainPrincipal(p)
	if plainPrincipal(t.Owner) == p {
		return true
	}
	return slices.ContainsFunc(t.Renewers, func(r security.Principal) bool { return plainPrincipal(r) == p })
}

// sweepExpiredTokens is the active controller's
// sweepExpiredDelegationTokens: every token past its expiry or max time is
// deleted (unless renewed meanwhile: a compare-and-swap on its revision,
// guarded by the controller's election key).
func (c *Controller) sweepExpiredTokens(ctx context.Context, guard []clientv3.Cmp) error {
	now := c.cfg.Now().UnixMilli()
	for _, t := range c.cache.snapshot().auth.tokens {
		if t.rec.MaxMs >= now && t.rec.ExpiryMs >= now {
			continue
		}
		key := c.ks.token(t.rec.TokenID)
		cmps := append(slices.Clone(guard), clientv3.Compare(clientv3.ModRevision(key), "=", t.modRev))
		resp, err := c.client.Txn(ctx).If(cmps...).Then(clientv3.OpDelete(key)).Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			c.log.Info("delegation token expired", "token.id", t.rec.TokenID, "owner", t.rec.Owner.principal().String())
		}
	}
	return nil
}

// String keeps the secret key out of anything that prints the settings.
func (t TokenConfig) String() string {
	return fmt.Sprintf("{enabled=%v maxLifetime=%v expiryTime=%v expiryCheckInterval=%v}",
		t.SecretKey != "", t.MaxLifetime, t.ExpiryTime, t.ExpiryCheckInterval)
}

// LogValue keeps the secret key out of slog output.
func (t TokenConfig) LogValue() slog.Value { return slog.StringValue(t.String()) }
