package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Redpanda Console's ACL and security pages (github.com/redpanda-data/console,
// backend/pkg) send these franz-go requests; each check below names the
// Console function it reproduces:
//
//   - console.ListAllACLs (list_acls.go; the ACL list page through
//     api/handle_acls.go and the connect acl/v1 service's listKafkaACLs) and
//     clusterstatus.GetKafkaAuthorizerInfo (the overview's ACL count): a raw
//     kmsg.DescribeACLsRequest with resource type, pattern type, operation
//     and permission ANY and null name, principal and host. Console turns
//     SECURITY_DISABLED (and only that code) into "authorizer disabled";
//     any other error code fails the page.
//   - acl/v1 createKafkaACLs: a CreateACLsRequest with one creation (a
//     CLUSTER resource named "kafka-cluster"); it wants exactly one result
//     and reads its error code.
//   - acl/v1 deleteKafkaACLs: a DeleteACLsRequest with one filter; exactly
//     one result, its error code, its matching ACLs.
//   - clusterstatus.GetKafkaInfo: kadm Metadata and ApiVersions
//     (VersionGuess), and endpoint_compatibility.go, which enables the
//     users and quotas pages when ApiVersions lists DescribeUserSCRAMCredentials,
//     AlterUserSCRAMCredentials and DescribeClientQuotas.
//
// They run against a broker without an authorizer (Kafka 4.4 answers the ACL
// APIs SECURITY_DISABLED), and with the StandardAuthorizer as the super user
// admin and as alice, who may only read topic ui-t (Kafka answers
// CLUSTER_AUTHORIZATION_FAILED: DescribeAcls needs DESCRIBE on the cluster,
// CreateAcls and DeleteAcls ALTER).
func TestACLPageCallsOfRedpandaConsole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw";`
	props := map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
	}
	client := func(srv *Server, user, pass string) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(listenerAddr(t, srv, "SASL_PLAINTEXT")),
			kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	t.Run("without an authorizer", func(t *testing.T) {
		srv := startTestBroker(t, props)
		defer srv.Close()
		<-srv.Ready()
		cl := client(srv, "alice", "alice-pw")
		consoleVersions(t, ctx, cl)
		d := consoleDescribeACLs(t, ctx, cl)
		if d.ErrorCode != kerr.SecurityDisabled.Code || d.ErrorMessage == nil || *d.ErrorMessage != "No Authorizer is configured on the broker" {
			t.Errorf("ListAllACLs: %v %v, want SECURITY_DISABLED (Console: authorizer disabled)", kerr.ErrorForCode(d.ErrorCode), d.ErrorMessage)
		}
		if c := consoleCreateACL(t, ctx, cl); c.ErrorCode != kerr.SecurityDisabled.Code {
			t.Errorf("createKafkaACLs: %v, want SECURITY_DISABLED", kerr.ErrorForCode(c.ErrorCode))
		}
		if r := consoleDeleteACLs(t, ctx, cl); r.ErrorCode != kerr.SecurityDisabled.Code {
			t.Errorf("deleteKafkaACLs: %v, want SECURITY_DISABLED", kerr.ErrorForCode(r.ErrorCode))
		}
		if _, err := kadm.NewClient(cl).Metadata(ctx); err != nil {
			t.Errorf("GetKafkaInfo's Metadata: %v", err)
		}
	})

	t.Run("with the StandardAuthorizer", func(t *testing.T) {
		secured := map[string]string{
			"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":           "User:admin",
		}
		srv := startTestBroker(t, props, secured)
		defer srv.Close()
		<-srv.Ready()
		admin, alice := client(srv, "admin", "admin-pw"), client(srv, "alice", "alice-pw")
		adm := kadm.NewClient(admin)
		for _, topic := range []string{"ui-t", "ui-hidden"} {
			if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
				t.Fatal(err, r.Err)
			}
		}
		grant := kadm.NewACLs().Topics("ui-t").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
		if res, err := adm.CreateACLs(ctx, grant); err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}

		// The super user: the page lists, creates and deletes.
		consoleVersions(t, ctx, admin)
		if c := consoleCreateACL(t, ctx, admin); c.ErrorCode != 0 {
			t.Errorf("createKafkaACLs as admin: %v", kerr.ErrorForCode(c.ErrorCode))
		}
		d := consoleDescribeACLs(t, ctx, admin)
		if d.ErrorCode != 0 {
			t.Fatalf("ListAllACLs as admin: %v", kerr.ErrorForCode(d.ErrorCode))
		}
		var rows []string
		for _, r := range d.Resources {
			for _, a := range r.ACLs {
				// The strings Console shows (ACLResource and ACLRule).
				rows = append(rows, r.ResourceType.String()+" "+r.ResourceName+" "+r.ResourcePatternType.String()+" "+
					a.Principal+" "+a.Host+" "+a.Operation.String()+" "+a.PermissionType.String())
			}
		}
		slices.Sort(rows)
		want := []string{
			"CLUSTER kafka-cluster LITERAL User:console * DESCRIBE ALLOW",
			"TOPIC ui-t LITERAL User:alice * READ ALLOW",
		}
		if !slices.Equal(rows, want) {
			t.Errorf("ListAllACLs as admin:\n got %q\nwant %q", rows, want)
		}
		r := consoleDeleteACLs(t, ctx, admin)
		if r.ErrorCode != 0 || len(r.MatchingACLs) != 1 || r.MatchingACLs[0].ResourceName != "kafka-cluster" {
			t.Errorf("deleteKafkaACLs as admin: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.MatchingACLs)
		}
		if got := len(consoleDescribeACLs(t, ctx, admin).Resources); got != 1 {
			t.Errorf("GetKafkaAuthorizerInfo's count after the delete: %d, want 1", got)
		}

		// alice: the ACL page is refused with Kafka's code; the overview's
		// Metadata still works and lists what she may describe.
		consoleVersions(t, ctx, alice)
		if d := consoleDescribeACLs(t, ctx, alice); d.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("ListAllACLs as alice: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(d.ErrorCode))
		}
		if c := consoleCreateACL(t, ctx, alice); c.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("createKafkaACLs as alice: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(c.ErrorCode))
		}
		if r := consoleDeleteACLs(t, ctx, alice); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("deleteKafkaACLs as alice: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(r.ErrorCode))
		}
		meta, err := kadm.NewClient(alice).Metadata(ctx)
		if err != nil {
			t.Fatalf("GetKafkaInfo's Metadata as alice: %v", err)
		}
		if names := meta.Topics.Names(); !slices.Equal(names, []string{"ui-t"}) || len(meta.Brokers) != 1 {
			t.Errorf("GetKafkaInfo's Metadata as alice: topics %v brokers %d, want [ui-t] and 1", names, len(meta.Brokers))
		}
	})
}

// consoleVersions is GetKafkaInfo's ApiVersions and endpoint_compatibility.go's
// checks: a version guess, and the keys its ACL, users and quotas pages need.
func consoleVersions(t *testing.T, ctx context.Context, cl *kgo.Client) {
	t.Helper()
	vers, err := kadm.NewClient(cl).ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vers {
		if v.Err != nil {
			t.Fatalf("ApiVersions: %v", v.Err)
		}
		if g := v.VersionGuess(); g == "" || g == "Unknown" {
			t.Errorf("VersionGuess: %q", g)
		}
		for _, k := range []kmsg.Key{kmsg.DescribeACLs, kmsg.CreateACLs, kmsg.DeleteACLs,
			kmsg.DescribeUserSCRAMCredentials, kmsg.AlterUserSCRAMCredentials, kmsg.DescribeClientQuotas} {
			if _, _, ok := v.KeyVersions(int16(k)); !ok {
				t.Errorf("ApiVersions lacks %s", k.Name())
			}
		}
	}
}

// consoleDescribeACLs is ListAllACLs' and GetKafkaAuthorizerInfo's request.
func consoleDescribeACLs(t *testing.T, ctx context.Context, cl *kgo.Client) *kmsg.DescribeACLsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	req.ResourceType = kmsg.ACLResourceTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// consoleCreateACL is createKafkaACLs for a CLUSTER ACL (the defaulter names
// it kafka-cluster): exactly one result.
func consoleCreateACL(t *testing.T, ctx context.Context, cl *kgo.Client) kmsg.CreateACLsResponseResult {
	t.Helper()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host = "User:console", "*"
	c.Operation, c.PermissionType = kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{c}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 {
		t.Fatalf("createKafkaACLs: %d results (Console: unexpected number of results)", len(resp.Results))
	}
	return resp.Results[0]
}

// consoleDeleteACLs is deleteKafkaACLs with the filter of that CLUSTER ACL:
// exactly one result.
func consoleDeleteACLs(t *testing.T, ctx context.Context, cl *kgo.Client) kmsg.DeleteACLsResponseResult {
	t.Helper()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeCluster, kmsg.StringPtr("kafka-cluster"), kmsg.ACLResourcePatternTypeLiteral
	f.Principal, f.Host = kmsg.StringPtr("User:console"), kmsg.StringPtr("*")
	f.Operation, f.PermissionType = kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = []kmsg.DeleteACLsRequestFilter{f}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 {
		t.Fatalf("deleteKafkaACLs: %d results (Console: unexpected number of results)", len(resp.Results))
	}
	return resp.Results[0]
}
