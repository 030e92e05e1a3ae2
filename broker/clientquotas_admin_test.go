package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

// kadm's AlterClientQuotas and DescribeClientQuotas (what kafka-configs
// --entity-type users/clients/ips does): quotas set on named and default
// entities, described with Kafka's filters, refused with Kafka's messages,
// validated only, and removed.
func TestClientQuotasAdmin(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	adm := kadm.NewClient(newClient(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Nothing set: an empty answer, not an error.
	got, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("describe with none set: %v, %v", got, err)
	}

	set := func(validateOnly bool, entity kadm.ClientQuotaEntity, ops ...kadm.AlterClientQuotaOp) kadm.AlteredClientQuotas {
		t.Helper()
		alter := adm.AlterClientQuotas
		if validateOnly {
			alter = adm.ValidateAlterClientQuotas
		}
		r, err := alter(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	user := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "user", Name: n}
	}
	client := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "client-id", Name: n}
	}
	for _, r := range []kadm.AlteredClientQuotas{
		set(false, kadm.ClientQuotaEntity{user(strp("alice"))}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1048576}),
		set(false, kadm.ClientQuotaEntity{user(nil)}, kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 2048}),
		set(false, kadm.ClientQuotaEntity{user(strp("alice")), client(strp("app"))}, kadm.AlterClientQuotaOp{Key: "request_percentage", Value: 12.5}),
		set(false, kadm.ClientQuotaEntity{client(nil)}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 4096}),
		set(false, kadm.ClientQuotaEntity{{Type: "ip", Name: strp("127.0.0.2")}}, kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 10}),
	} {
		for _, e := range r {
			if e.Err != nil {
				t.Fatalf("alter %v: %v (%s)", e.Entity, e.Err, e.ErrMessage)
			}
		}
	}

	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) kadm.DescribedClientQuotas {
		t.Helper()
		d, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	all := describe(false)
	if len(all) != 5 {
		t.Fatalf("all quotas: got %d entities, want 5: %+v", len(all), all)
	}
	// --describe --entity-type users: any user, strict.
	users := describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kadm.QuotasMatchType(2)})
	if len(users) != 2 {
		t.Fatalf("users: %+v", users)
	}
	alice := describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("alice")})
	if len(alice) != 2 {
		t.Fatalf("user alice (not strict): %+v", alice)
	}
	aliceOnly := describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("alice")})
	if len(aliceOnly) != 1 || aliceOnly[0].Values[0].Key != "producer_byte_rate" || aliceOnly[0].Values[0].Value != 1048576 {
		t.Fatalf("user alice (strict): %+v", aliceOnly)
	}
	defUser := describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kadm.QuotasMatchType(1)})
	if len(defUser) != 1 || defUser[0].Entity[0].Name != nil || defUser[0].Values[0].Value != 2048 {
		t.Fatalf("default user: %+v", defUser)
	}

	// Kafka's refusals, one entity each.
	for _, c := range []struct {
		entity kadm.ClientQuotaEntity
		op     kadm.AlterClientQuotaOp
		msg    string
	}{
		{kadm.ClientQuotaEntity{user(strp("bob"))}, kadm.AlterClientQuotaOp{Key: "bogus", Value: 1}, "Invalid configuration key bogus"},
		{kadm.ClientQuotaEntity{user(strp("bob"))}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1.5}, "producer_byte_rate cannot be a fractional value."},
		{kadm.ClientQuotaEntity{user(strp("bob"))}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 0}, "Quota producer_byte_rate must be greater than 0"},
		{kadm.ClientQuotaEntity{user(strp("bob"))}, kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 3}, "Invalid configuration key connection_creation_rate"},
		{kadm.ClientQuotaEntity{{Type: "ip", Name: strp("not an ip")}}, kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 3}, "not an ip is not a valid IP or resolvable host."},
		{kadm.ClientQuotaEntity{{Type: "ip", Name: strp("127.0.0.1")}, user(nil)}, kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 3}, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{kadm.ClientQuotaEntity{{Type: "group", Name: strp("g")}}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 3}, "Unhandled client quota entity type: group"},
		{kadm.ClientQuotaEntity{user(strp(""))}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 3}, "Empty user not supported"},
	} {
		r := set(false, c.entity, c.op)
		if len(r) != 1 || r[0].Err != kerr.InvalidRequest || r[0].ErrMessage != c.msg {
			t.Errorf("%v %v: got %+v, want INVALID_REQUEST %q", c.entity, c.op, r, c.msg)
		}
	}

	// validate_only: judged, not written.
	if r := set(true, kadm.ClientQuotaEntity{user(strp("bob"))}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 100}); r[0].Err != nil {
		t.Fatalf("validate only: %+v", r)
	}
	if d := describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("bob")}); len(d) != 0 {
		t.Fatalf("validate_only wrote: %+v", d)
	}

	// Bad filters: the whole request fails with Kafka's code and message.
	raw := kmsg.NewPtrDescribeClientQuotasRequest()
	raw.Components = []kmsg.DescribeClientQuotasRequestComponent{
		{EntityType: "ip", MatchType: kmsg.QuotasMatchType(2)},
		{EntityType: "user", MatchType: kmsg.QuotasMatchType(2)},
	}
	rr, err := raw.RequestWith(ctx, newClient(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if rr.ErrorCode != kerr.InvalidRequest.Code || rr.ErrorMessage == nil ||
		*rr.ErrorMessage != "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component." {
		t.Errorf("ip with user filter: %d %v", rr.ErrorCode, rr.ErrorMessage)
	}
	raw.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "topic", MatchType: kmsg.QuotasMatchType(2)}}
	if rr, err = raw.RequestWith(ctx, newClient(t, srv)); err != nil || rr.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("unknown entity type: %+v %v", rr, err)
	}

	// Removal: the entity disappears with its last key.
	if r := set(false, kadm.ClientQuotaEntity{user(strp("alice"))}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Remove: true}); r[0].Err != nil {
		t.Fatalf("remove: %+v", r)
	}
	if d := describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("alice")}); len(d) != 0 {
		t.Fatalf("removed quota still described: %+v", d)
	}
}
