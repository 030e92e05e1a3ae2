package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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

// describeAll lists every binding as "TYPE:PATTERN:name principal host OP PERM" lines, sorted.
func describeAll(t *testing.T, ctx context.Context, cl *kgo.Client) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("describe: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, fmt.Sprintf("%s:%s:%s %s %s %s %s", r.ResourceType, r.ResourcePatternType, r.ResourceName,
				a.Principal, a.Host, a.Operation, a.PermissionType))
		}
	}
	slices.Sort(out)
	return out
}

// With the StandardAuthorizer: kadm's CreateACLs, DescribeACLs and
// DeleteACLs (what kafka-acls --add, --list and --remove send) against the
// ACLs the controller stores in etcd, with Kafka's validation and filters.
func TestAclsWithAuthorizer(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users", "User:ANONYMOUS")
	defer srv.Close()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if got := describeAll(t, ctx, cl); len(got) != 0 {
		t.Fatalf("a new cluster has ACLs: %v", got)
	}
	// A producer on orders (literal), a consumer on everything under
	// logs. (prefixed) in group g, and a deny for mallory on every topic.
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Topics("logs.").Groups("g").Allow("User:bob").AllowHosts("127.0.0.1").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Topics("*").Deny("User:mallory").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral),
		// Again: creating an existing binding succeeds and stores nothing new.
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Errorf("create %s %s: %v %s", r.Name, r.Principal, r.Err, r.ErrMessage)
			}
		}
	}
	want := []string{
		"GROUP:PREFIXED:g User:bob 127.0.0.1 READ ALLOW",
		"TOPIC:LITERAL:* User:mallory * ALL DENY",
		"TOPIC:LITERAL:orders User:alice * DESCRIBE ALLOW",
		"TOPIC:LITERAL:orders User:alice * WRITE ALLOW",
		"TOPIC:PREFIXED:logs. User:bob 127.0.0.1 READ ALLOW",
	}
	if got := describeAll(t, ctx, cl); !slices.Equal(got, want) {
		t.Errorf("described:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Filters: MATCH finds what applies to a topic (literal, wildcard,
	// prefixed); PREFIXED only the prefixed binding of that exact name.
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("logs.app").Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternMatch))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range described {
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		for _, a := range d.Described {
			names = append(names, a.Name+"/"+a.Principal)
		}
	}
	slices.Sort(names)
	if want := []string{"*/User:mallory", "logs./User:bob"}; !slices.Equal(names, want) {
		t.Errorf("MATCH logs.app: %v, want %v", names, want)
	}

	// What kadm would refuse before sending, sent raw: Kafka's messages.
	raw := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
		p    string
		host string
	}{
		{kmsg.ACLResourceTypeCluster, "other", kmsg.ACLResourcePatternTypeLiteral, "User:a", "*"},
		{kmsg.ACLResourceTypeTopic, "", kmsg.ACLResourcePatternTypeLiteral, "User:a", "*"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeMatch, "User:a", "*"},
		{kmsg.ACLResourceTypeAny, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", "*"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "alice", "*"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", ""},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", "10.0.0.0/8"},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType, cr.Principal, cr.Host = c.rt, c.name, c.pt, c.p, c.host
		cr.Operation, cr.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		raw.Creations = append(raw.Creations, cr)
	}
	rawResp, err := raw.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := []string{
		"The only valid name for the CLUSTER resource is kafka-cluster",
		"Invalid empty resource name",
		"Invalid patternType MATCH",
		"Invalid resourceType ANY",
		"Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)",
		"Host pattern cannot be null or empty",
		"",
	}
	for i, r := range rawResp.Results {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		wantCode := kerr.InvalidRequest.Code
		if wantMsgs[i] == "" {
			wantCode = 0
		}
		if r.ErrorCode != wantCode || msg != wantMsgs[i] {
			t.Errorf("creation %d: %v %q, want %q", i, kerr.ErrorForCode(r.ErrorCode), msg, wantMsgs[i])
		}
	}

	// Delete: each filter returns what it matched; a filter with an
	// out-of-range code is INVALID_REQUEST.
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	f.Principal = kmsg.StringPtr("User:alice")
	bad := f
	bad.ResourceType = 42
	del.Filters = append(del.Filters, f, bad)
	delResp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := delResp.Results[0]; r.ErrorCode != 0 || len(r.MatchingACLs) != 2 { // WRITE and DESCRIBE on orders
		t.Errorf("delete alice: %v %d matching", kerr.ErrorForCode(r.ErrorCode), len(r.MatchingACLs))
	}
	if r := delResp.Results[1]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Unknown patternFilter." {
		t.Errorf("delete with an unknown resource type: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range deleted {
		n += len(d.Deleted)
	}
	if n != 4 { // mallory's, bob's two, User:a's from its CIDR host
		t.Errorf("deleted %d of the remaining 4", n)
	}
	if got := describeAll(t, ctx, cl); len(got) != 0 {
		t.Errorf("left after deleting everything: %v", got)
	}

	// A request with the UNKNOWN code does not parse in Kafka: the
	// connection closes without an answer.
	bad0 := kmsg.NewPtrDescribeACLsRequest()
	bad0.ResourceType, bad0.ResourcePatternType, bad0.Operation, bad0.PermissionType = 0, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if _, err := bad0.RequestWith(ctx, newClient(t, srv, kgo.RequestRetries(0))); err == nil {
		t.Error("DescribeAcls with resource type 0 was answered")
	}
}

// Without the cluster permission, the ACL APIs answer
// CLUSTER_AUTHORIZATION_FAILED.
func TestAclsNeedClusterPermission(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
	defer srv.Close()
	cl := newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("describe: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	created, err := kadm.NewClient(cl).CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:ANONYMOUS").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 1 || !errors.Is(created[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("create: %+v", created)
	}
	// The other cluster-level APIs authorized: the SCRAM credentials (ALTER,
	// DESCRIBE) and WriteTxnMarkers (CLUSTER_ACTION, brokers only).
	adm := kadm.NewClient(cl)
	if _, err := adm.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("DescribeUserScramCredentials: %v", err)
	}
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "p"}})
	if err == nil { // kadm reports the per-user error as its own
		err = altered["alice"].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("AlterUserScramCredentials: %v", err)
	}
	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.Committed = 1, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}
	markers.Markers = append(markers.Markers, m)
	if kresp, err := cl.Broker(1).Request(ctx, markers); err != nil { // to the broker: franz-go would look the topic up first
		t.Fatal(err)
	} else if c := kresp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("WriteTxnMarkers: %v", kerr.ErrorForCode(c))
	}
	// The cluster administration APIs, sent to this broker, and the topic
	// ones (ALTER, DELETE on a topic without ACLs: denied by default).
	b1 := cl.Broker(1)
	el := kmsg.NewPtrElectLeadersRequest()
	el.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	apr := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	apr.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}}}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 2}}
	arl := kmsg.NewPtrAlterReplicaLogDirsRequest()
	arl.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: "/nowhere", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t", Partitions: []int32{0}}}}}
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
	for _, tc := range []struct {
		req  kmsg.Request
		code func(kmsg.Response) int16
		want int16
	}{
		{el, func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0].ErrorCode }, kerr.ClusterAuthorizationFailed.Code},
		{apr, func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed.Code},
		{kmsg.NewPtrListPartitionReassignmentsRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed.Code},
		{kmsg.NewPtrDescribeLogDirsRequest(), func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed.Code},
		{arl, func(r kmsg.Response) int16 {
			return r.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.ClusterAuthorizationFailed.Code},
		{cp, func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed.Code},
		{dr, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed.Code},
	} {
		resp, err := b1.Request(ctx, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(tc.req.Key()), err)
		}
		if got := tc.code(resp); got != tc.want {
			t.Errorf("%s: %v, want %v", kmsg.NameForKey(tc.req.Key()), kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}
