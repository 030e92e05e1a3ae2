package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Answers the differential test against Kafka 4.4 (compat-tests/reference)
// found different, checked here without Kafka.

// TestSyncGroupWithoutProtocolInconsistent: SyncGroup v5+ must name the
// protocol type and name; KafkaApis answers INCONSISTENT_GROUP_PROTOCOL
// before it looks at the group (or authorizes).
func TestSyncGroupWithoutProtocolInconsistent(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = "g", "nobody", 1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("no protocol type or name: %v, want INCONSISTENT_GROUP_PROTOCOL", kerr.ErrorForCode(resp.ErrorCode))
	}
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	if resp, err = req.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("with both: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestOffsetDeleteListsEveryPartition: Kafka 4.4's coordinator answers
// every partition asked for, whether it had an offset or not.
func TestOffsetDeleteListsEveryPartition(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "od", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "od", Partition: 0, At: 0})
	if r, err := adm.CommitOffsets(ctx, "odg", offs); err != nil || r.Error() != nil {
		t.Fatal(err, r.Error())
	}
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "odg"
	req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "od", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("%+v; want od with partitions 0 (deleted) and 1 (had none), both NONE", resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

// TestAuthorizerAnswersAsKafka44: with the StandardAuthorizer, Metadata's
// topic authorized_operations cover a topic the principal may describe but
// that does not exist, and a refused DescribeUserScramCredentials carries
// the error on each user named (once each), as Kafka 4.4 answers.
func TestAuthorizerAnswersAsKafka44(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found", "true")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	const me = "User:ANONYMOUS"
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Clusters().Allow(me).Operations(kadm.OpAlter),
		kadm.NewACLs().Clusters().Deny(me).Operations(kadm.OpDescribe),
	} {
		res, err := adm.CreateACLs(ctx, b.ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("nope")
	md.Topics = append(md.Topics, mt)
	md.IncludeTopicAuthorizedOperations = true
	mresp, err := md.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	// Every topic operation: READ WRITE CREATE DELETE ALTER DESCRIBE
	// DESCRIBE_CONFIGS ALTER_CONFIGS (Kafka answers 3576).
	if tp := mresp.Topics[0]; tp.ErrorCode != kerr.UnknownTopicOrPartition.Code || tp.AuthorizedOperations != 3576 {
		t.Errorf("unknown topic: %v, authorized operations %d; want UNKNOWN_TOPIC_OR_PARTITION, 3576", kerr.ErrorForCode(tp.ErrorCode), tp.AuthorizedOperations)
	}

	ds := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"a", "a", "b"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		ds.Users = append(ds.Users, u)
	}
	dresp, err := ds.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if dresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(dresp.Results) != 2 {
		t.Fatalf("%v with %d results; want CLUSTER_AUTHORIZATION_FAILED on a and b", kerr.ErrorForCode(dresp.ErrorCode), len(dresp.Results))
	}
	for _, r := range dresp.Results {
		if r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("%s: %v", r.User, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}
