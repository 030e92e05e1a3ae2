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
