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

	"github.com/strait/strait/security/acl"
)

// A KIP-848 regex subscription under the StandardAuthorizer resolves only to
// the topics the member's principal may DESCRIBE, as Kafka 4.4's
// GroupMetadataManager.refreshRegularExpressions filters them
// (filterTopicDescribeAuthorizedTopics, KAFKA-18813): the heartbeat answers
// no error, the topic is just not assigned. alice may read rx-a and rx-b;
// rx-secret matches her regex but she may not describe it. A franz-go
// consumer (kgo.ConsumeRegex, the consumer group protocol) gets every record
// of rx-a and rx-b and none of rx-secret, and ConsumerGroupDescribe shows
// that her assignment never held rx-secret. DESCRIBE alone is enough: once
// granted it, the next resolution (a new topic) assigns rx-secret too.
func TestRegexSubscriptionFilteredByACLs(t *testing.T) {
	srv := startTestBroker(t, map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"authorizer.class.name":   "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":             "User:ANONYMOUS",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`,
	})
	defer srv.Close()
	<-srv.Ready()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The super user (PLAINTEXT) makes the topics and their records.
	admin, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.DefaultProduceTopic("rx-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	const perTopic = 10
	topics := map[string]int32{"rx-a": 2, "rx-b": 1, "rx-secret": 1}
	for name, parts := range topics {
		if r, err := adm.CreateTopic(ctx, parts, 1, nil, name); err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
		for i := range perTopic {
			rec := &kgo.Record{Topic: name, Value: []byte{byte(i)}}
			if err := admin.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// CreateACLs returns once this broker's cache holds the bindings.
	grant := func(rt acl.ResourceType, name string, pattern acl.PatternType, op acl.Operation) {
		t.Helper()
		b := acl.Binding{ResourceType: rt, Name: name, Pattern: pattern,
			Principal: "User:alice", Host: "*", Operation: op, Permission: acl.PermissionAllow}
		if errs, err := srv.ctrl.CreateACLs(ctx, []acl.Binding{b}); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
	}
	grant(acl.ResourceTopic, "rx-a", acl.PatternLiteral, acl.OpRead)
	grant(acl.ResourceTopic, "rx-b", acl.PatternLiteral, acl.OpRead)
	grant(acl.ResourceGroup, "rx-g", acl.PatternPrefixed, acl.OpRead)

	addr := listenerAddr(t, srv, "SASL_PLAINTEXT")
	alice := func(opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
			kgo.SASL(plain.Auth{User: "alice", Pass: "a"}.AsMechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	// The raw heartbeat: a regex matching only rx-secret joins with no
	// error and an empty assignment (Kafka does not refuse it).
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "rx-g-raw", "raw-member-0123456789", 0
	hb.RebalanceTimeoutMillis, hb.Topics = 30000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hb.SubscribedTopicRegex = kmsg.StringPtr("rx-secret")
	raw := alice()
	hresp, err := hb.RequestWith(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if hresp.ErrorCode != 0 || hresp.Assignment == nil || len(hresp.Assignment.Topics) != 0 {
		t.Errorf("heartbeat with a regex matching only an undescribable topic: %v, assignment %+v",
			kerr.ErrorForCode(hresp.ErrorCode), hresp.Assignment)
	}

	// The franz-go consumer: every record of rx-a and rx-b, none of rx-secret.
	cons := alice(kgo.ConsumeTopics("rx-.*"), kgo.ConsumeRegex(), kgo.ConsumerGroup("rx-g"),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]int{}
	for got["rx-a"]+got["rx-b"] < 2*perTopic && ctx.Err() == nil {
		fetches := cons.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) { got[r.Topic]++ })
	}
	if got["rx-a"] != perTopic || got["rx-b"] != perTopic || got["rx-secret"] != 0 {
		t.Fatalf("consumed %v, want %d of rx-a and rx-b and none of rx-secret", got, perTopic)
	}

	ids := map[[16]byte]string{}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range listed {
		ids[d.ID] = d.Topic
	}
	// assigned is the topics of rx-g's members' current and target
	// assignments, as the super user describes them.
	assigned := func() (current, target []string) {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"rx-g"}
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Members) != 1 {
			t.Fatalf("describe rx-g: %+v", resp.Groups)
		}
		m := resp.Groups[0].Members[0]
		for _, tp := range m.Assignment.TopicPartitions {
			current = append(current, ids[tp.TopicID])
		}
		for _, tp := range m.TargetAssignment.TopicPartitions {
			target = append(target, ids[tp.TopicID])
		}
		slices.Sort(current)
		slices.Sort(target)
		return current, target
	}
	if cur, tgt := assigned(); !slices.Equal(cur, []string{"rx-a", "rx-b"}) || !slices.Equal(tgt, cur) {
		t.Errorf("alice's assignment %v, target %v; want rx-a and rx-b", cur, tgt)
	}

	// DESCRIBE (not READ) is what the resolution asks: granted it, and a
	// new topic (which alice may not describe) making the coordinator
	// resolve the regex again, rx-secret is assigned and rx-new is not.
	grant(acl.ResourceTopic, "rx-secret", acl.PatternLiteral, acl.OpDescribe)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "rx-new"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	if listed, err = adm.ListTopics(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range listed {
		ids[d.ID] = d.Topic
	}
	want := []string{"rx-a", "rx-b", "rx-secret"}
	var cur, tgt []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if cur, tgt = assigned(); slices.Equal(tgt, want) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(tgt, want) {
		t.Errorf("after DESCRIBE on rx-secret: assignment %v, target %v; want target %v", cur, tgt, want)
	}
}
