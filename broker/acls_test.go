package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Without authorizer.class.name, as Kafka 4: the three ACL APIs are served
// and answer SECURITY_DISABLED with Kafka's messages, per creation and per
// delete filter.
func TestAclsWithoutAuthorizer(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	vers, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, bv := range vers {
		for _, key := range []kmsg.Key{kmsg.DescribeACLs, kmsg.CreateACLs, kmsg.DeleteACLs} {
			min, max, ok := bv.KeyVersions(int16(key))
			if !ok || min != 1 || max != 3 {
				t.Errorf("%s advertised %v %d-%d, want 1-3", key.Name(), ok, min, max)
			}
		}
	}

	b := kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	created, err := adm.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 1 || !errors.Is(created[0].Err, kerr.SecurityDisabled) || created[0].ErrMessage != "No Authorizer is configured." {
		t.Errorf("CreateACLs: %+v", created)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range described {
		if !errors.Is(d.Err, kerr.SecurityDisabled) || d.ErrMessage != "No Authorizer is configured on the broker" {
			t.Errorf("DescribeACLs: %v %q", d.Err, d.ErrMessage)
		}
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || !errors.Is(deleted[0].Err, kerr.SecurityDisabled) || deleted[0].ErrMessage != "No Authorizer is configured." {
		t.Errorf("DeleteACLs: %+v", deleted)
	}
}
