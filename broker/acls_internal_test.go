package broker

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/security/acl"
)

// An ACL created through one broker decides on another, through that
// broker's watch cache (no etcd read per decision), and so does its
// deletion.
func TestAclsSeenByEveryBroker(t *testing.T) {
	srvs, _ := startEtcdCluster(t, 2, map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := acl.NewRequestContext("User:alice", netip.MustParseAddr("127.0.0.1"))
	b := acl.Binding{ResourceType: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: acl.OpWrite, Permission: acl.PermissionAllow}
	// decidedOn waits (bounded) until broker 2 decides want.
	decidedOn := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; srvs[1].authz.Authorize(rc, acl.OpWrite, acl.ResourceTopic, "orders") != want; i++ {
			if time.Now().After(deadline) || i > 1000 {
				t.Fatalf("broker 2 did not decide %v within 10s", want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	decidedOn(false)
	errs, err := srvs[0].ctrl.CreateACLs(ctx, []acl.Binding{b})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	// Broker 1 answers once its own cache has it.
	if !srvs[0].authz.Authorize(rc, acl.OpWrite, acl.ResourceTopic, "orders") {
		t.Error("broker 1 does not allow what it just stored")
	}
	decidedOn(true)
	if srvs[1].ctrl.ACLs().Len() != 1 {
		t.Errorf("broker 2 holds %d ACLs", srvs[1].ctrl.ACLs().Len())
	}
	res, err := srvs[1].ctrl.DeleteACLs(ctx, []acl.Filter{{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny,
		Operation: acl.OpAny, Permission: acl.PermissionAny}})
	if err != nil || res[0].Err != nil || len(res[0].Deleted) != 1 || res[0].Deleted[0] != b {
		t.Fatalf("delete: %v %+v", err, res)
	}
	decidedOn(false)
}

// Two brokers with the authorizer replicate when the inter-broker principal
// (User:ANONYMOUS on PLAINTEXT) is a super user: follower fetches need
// CLUSTER_ACTION. An acks=all produce to a topic of replication factor 2
// completes only once the follower has fetched.
func TestReplicationWithAuthorizer(t *testing.T) {
	srvs, _ := startEtcdCluster(t, 2, map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS",
		"min.insync.replicas":   "2",
	})
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srvs[0].Addr()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 2, nil, "replicated"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "replicated", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce with min.insync.replicas=2: %v", err)
	}
}
