package controller

import (
	"testing"

	"github.com/strait/strait/quota"
)

// Every entity's key parses back to it, whatever its names hold: '/',
// spaces, '%', and a user literally named <default> (distinct from the
// default user).
func TestQuotaKeysRoundTrip(t *testing.T) {
	ks := keyspace{prefix: "/strait"}
	for _, e := range []quota.Entity{
		{User: quota.Named("alice")},
		{User: quota.DefaultName()},
		{User: quota.Named("<default>")},
		{User: quota.Named("CN=a/b, O=x%y")},
		{User: quota.Named("alice"), ClientID: quota.Named("app 1")},
		{User: quota.DefaultName(), ClientID: quota.DefaultName()},
		{ClientID: quota.Named("users")},
		{ClientID: quota.DefaultName()},
		{IP: quota.Named("::1")},
		{IP: quota.DefaultName()},
	} {
		key := ks.quota(e)
		pk := ks.parse(key)
		if pk.kind != keyQuota || pk.quota != e {
			t.Errorf("%v: key %q parsed as %+v", e, key, pk)
		}
	}
	for _, bad := range []string{"client_quotas/", "client_quotas/users", "client_quotas/clients/a/users/b",
		"client_quotas/ips/a/clients/b", "client_quotas/users/%zz", "client_quotas/topics/t"} {
		if pk := ks.parse("/strait/" + bad); pk.kind != keyUnknown {
			t.Errorf("%q parsed as %+v", bad, pk)
		}
	}
}
