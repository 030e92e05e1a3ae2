package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// The handlers authorized as KafkaApis does, for the PLAINTEXT principal
// User:ANONYMOUS: produce (WRITE), fetch (READ), metadata (DESCRIBE, and
// CREATE for auto-creation), CreateTopics (CREATE), the group membership
// APIs and OffsetCommit (READ on the group and the topics).
func TestHandlersAuthorized(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found", "true")
	defer srv.Close()
	// The group requests below name their topics (not ids): OffsetCommit
	// and OffsetFetch up to v9.
	cl := newClient(t, srv, kgo.MaxVersions(byNameVersions()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, topic := range []string{"open", "nowrite", "noread", "secret"} {
		createTopic(t, cl, topic, 1, nil)
	}
	const me = "User:ANONYMOUS"
	mustCreate := func(b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b.ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create ACL: %v %s", r.Err, r.ErrMessage)
			}
		}
	}
	// The cluster gets ACLs, so what they do not allow (CREATE) is denied
	// there; topics without ACLs stay open (allow.everyone.if.no.acl.found).
	mustCreate(kadm.NewACLs().Clusters().Allow(me).Operations(kadm.OpAlter, kadm.OpDescribe))
	mustCreate(kadm.NewACLs().Topics("nowrite").Allow(me).Operations(kadm.OpDescribe, kadm.OpRead))
	mustCreate(kadm.NewACLs().Topics("nowrite").Deny(me).Operations(kadm.OpWrite))
	mustCreate(kadm.NewACLs().Topics("noread").Allow(me).Operations(kadm.OpWrite)) // WRITE implies DESCRIBE
	mustCreate(kadm.NewACLs().Topics("secret").Deny(me).Operations(kadm.OpAll))
	mustCreate(kadm.NewACLs().Groups("closed").Deny(me).Operations(kadm.OpRead))
	// DESCRIBE, so that FindCoordinator (franz-go asks first) finds it.
	mustCreate(kadm.NewACLs().Groups("closed").Allow(me).Operations(kadm.OpDescribe))

	// Metadata: all topics leaves out secret; naming it is refused.
	meta := kmsg.NewPtrMetadataRequest()
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mt := range mresp.Topics {
		names = append(names, *mt.Topic)
	}
	slices.Sort(names)
	if want := []string{"noread", "nowrite", "open"}; !slices.Equal(names, want) {
		t.Errorf("all topics: %v, want %v", names, want)
	}
	meta = kmsg.NewPtrMetadataRequest()
	for _, n := range []string{"secret", "open", "auto-created"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(n)
		meta.Topics = append(meta.Topics, mt)
	}
	meta.AllowAutoTopicCreation = true
	if mresp, err = meta.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, mt := range mresp.Topics {
		codes[*mt.Topic] = mt.ErrorCode
	}
	// auto-created: the cluster's ACLs do not give CREATE, but the topic has
	// no ACL, so allow.everyone.if.no.acl.found gives CREATE on it.
	if codes["secret"] != kerr.TopicAuthorizationFailed.Code || codes["open"] != 0 || codes["auto-created"] != 0 {
		t.Errorf("named topics: %v", codes)
	}

	// authorized_operations from the ACLs: noread allows WRITE (and so
	// DESCRIBE); the cluster ALTER and DESCRIBE.
	meta = kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("noread")}}
	meta.IncludeTopicAuthorizedOperations = true
	if mresp, err = meta.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if got, want := mresp.Topics[0].AuthorizedOperations, int32(1<<4|1<<8); got != want {
		t.Errorf("noread's authorized operations: %b, want %b", got, want)
	}
	dcl := kmsg.NewPtrDescribeClusterRequest()
	dcl.IncludeClusterAuthorizedOperations = true
	if resp, err := dcl.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if got, want := resp.ClusterAuthorizedOperations, int32(1<<7|1<<8); got != want {
		t.Errorf("the cluster's authorized operations: %b, want %b", got, want)
	}

	// CreateTopics: CREATE on the topic (the cluster's is not granted).
	mustCreate(kadm.NewACLs().Topics("forbidden").Deny(me).Operations(kadm.OpCreate))
	ct, err := adm.CreateTopics(ctx, 1, 1, nil, "forbidden", "allowed")
	if err != nil {
		t.Fatal(err)
	}
	if r := ct["forbidden"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) || r.ErrMessage != "Authorization failed." {
		t.Errorf("create forbidden: %v %q", r.Err, r.ErrMessage)
	}
	if r := ct["allowed"]; r.Err != nil {
		t.Errorf("create allowed: %v", r.Err)
	}

	// DeleteTopics: DELETE (here: no ACL on open; noread has ACLs, none
	// DELETE); secret, which may not be described, loses its id too.
	del, err := adm.DeleteTopics(ctx, "secret", "noread", "allowed")
	if err != nil {
		t.Fatal(err)
	}
	if r := del["secret"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) || r.ID != [16]byte{} {
		t.Errorf("delete secret: %v %v", r.Err, r.ID)
	}
	if r := del["noread"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) || r.ID == [16]byte{} {
		t.Errorf("delete noread: %v %v", r.Err, r.ID)
	}
	if r := del["allowed"]; r.Err != nil {
		t.Errorf("delete allowed: %v", r.Err)
	}

	// DescribeTopicPartitions (as Metadata), OffsetForLeaderEpoch
	// (DESCRIBE, or CLUSTER_ACTION) and DescribeProducers (READ), on secret.
	b1 := cl.Broker(1)
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.ResponsePartitionLimit = 100
	if kresp, err := b1.Request(ctx, dtp); err != nil {
		t.Fatal(err)
	} else {
		for _, rt := range kresp.(*kmsg.DescribeTopicPartitionsResponse).Topics {
			if *rt.Topic == "secret" {
				t.Error("DescribeTopicPartitions of all topics lists secret")
			}
		}
	}
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "secret"}, {Topic: "open"}}
	if kresp, err := b1.Request(ctx, dtp); err != nil {
		t.Fatal(err)
	} else {
		codes := map[string]int16{}
		for _, rt := range kresp.(*kmsg.DescribeTopicPartitionsResponse).Topics {
			codes[*rt.Topic] = rt.ErrorCode
		}
		if codes["secret"] != kerr.TopicAuthorizationFailed.Code || codes["open"] != 0 {
			t.Errorf("DescribeTopicPartitions secret, open: %v", codes)
		}
	}
	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.ReplicaID = -1
	ofe.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "secret", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1}}}}
	if kresp, err := b1.Request(ctx, ofe); err != nil {
		t.Fatal(err)
	} else if c := kresp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("OffsetForLeaderEpoch secret: %v", kerr.ErrorForCode(c))
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "secret", Partitions: []int32{0}}}
	if kresp, err := b1.Request(ctx, dp); err != nil {
		t.Fatal(err)
	} else if c := kresp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("DescribeProducers secret: %v", kerr.ErrorForCode(c))
	}

	// Configs: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, or on the
	// cluster for a broker (whose ACLs give neither).
	dc, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err == nil {
		err = dc[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("describe broker configs: %v", err)
	}
	dcr := kmsg.NewPtrDescribeConfigsRequest()
	for _, n := range []string{"open", "secret"} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, n
		dcr.Resources = append(dcr.Resources, r)
	}
	if resp, err := dcr.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if c0, c1 := resp.Resources[0].ErrorCode, resp.Resources[1].ErrorCode; c0 != 0 || c1 != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("describe configs of open and secret: %v %v", kerr.ErrorForCode(c0), kerr.ErrorForCode(c1))
	}
	alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, "open", "nowrite")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range alt {
		if want := map[string]error{"open": nil, "nowrite": kerr.TopicAuthorizationFailed}[r.Name]; !errors.Is(r.Err, want) && !(want == nil && r.Err == nil) {
			t.Errorf("alter %s's configs: %v, want %v", r.Name, r.Err, want)
		}
	}

	// Produce: WRITE on the topic.
	for topic, want := range map[string]error{"open": nil, "noread": nil, "nowrite": kerr.TopicAuthorizationFailed} {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("produce to %s: %v, want %v", topic, err, want)
		}
	}

	// Fetch: READ on the topic (named by id, as the client's version has it).
	ids := map[string][16]byte{}
	if all, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		for _, mt := range all.Topics {
			ids[*mt.Topic] = mt.TopicID
		}
	}
	fetch := func(topic string) int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, ids[topic]
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if c := fetch("noread"); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("fetch noread: %v", kerr.ErrorForCode(c))
	}
	if c := fetch("open"); c != 0 {
		t.Errorf("fetch open: %v", kerr.ErrorForCode(c))
	}

	// A follower's fetch needs CLUSTER_ACTION, which the cluster's ACLs do
	// not give.
	freq := kmsg.NewPtrFetchRequest()
	freq.ReplicaID, freq.ReplicaState.ID, freq.MaxBytes = 7, 7, 1<<20
	frt := kmsg.NewFetchRequestTopic()
	frt.Topic, frt.TopicID = "open", ids["open"]
	frt.Partitions = append(frt.Partitions, kmsg.NewFetchRequestTopicPartition())
	freq.Topics = append(freq.Topics, frt)
	if resp, err := freq.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("follower fetch without CLUSTER_ACTION: %v", kerr.ErrorForCode(c))
	}

	// Groups: READ on the group; OffsetCommit also READ on each topic.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "closed", "consumer", 10000, 10000
	join.Protocols = append(join.Protocols, kmsg.JoinGroupRequestProtocol{Name: "range"})
	if resp, err := join.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("join closed: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	commit := func(group string, topics ...string) map[string]int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		for _, topic := range topics {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int16{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		return out
	}
	if got := commit("closed", "open"); got["open"] != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("commit to closed: %v", got)
	}
	if got := commit("g", "open", "secret"); got["open"] != 0 || got["secret"] != kerr.TopicAuthorizationFailed.Code || len(got) != 2 {
		t.Errorf("commit to g: %v", got)
	}
	// An offset committed on nowrite (READ allowed) while DESCRIBE on it
	// is denied: OffsetFetch must not show it.
	mustCreate(kadm.NewACLs().Topics("nowrite").Deny(me).Operations(kadm.OpDescribe))
	if got := commit("g", "nowrite"); got["nowrite"] != 0 {
		t.Errorf("commit nowrite: %v", got)
	}
	mustCreate(kadm.NewACLs().Topics("nowrite").Deny(me).Operations(kadm.OpRead))
	mustCreate(kadm.NewACLs().Groups("hidden").Deny(me).Operations(kadm.OpDescribe))

	// OffsetFetch: DESCRIBE on the group and the topics, at v8+ (groups
	// batched) and v7 (one group).
	for _, version := range []int16{9, 7} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = version
		if version >= 8 {
			all := kmsg.NewOffsetFetchRequestGroup()
			all.Group = "g"
			named := kmsg.NewOffsetFetchRequestGroup()
			named.Group = "g"
			named.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "nowrite", Partitions: []int32{0}}, {Topic: "open", Partitions: []int32{0}}}
			hidden := kmsg.NewOffsetFetchRequestGroup()
			hidden.Group = "hidden"
			// The named copy of g goes alone: in one request it would be
			// collapsed into the copy asking for every topic (dedup.go).
			namedReq := kmsg.NewPtrOffsetFetchRequest()
			namedReq.Version = version
			namedReq.Groups = []kmsg.OffsetFetchRequestGroup{named}
			nresp, err := namedReq.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			namedCodes := map[string]int16{}
			for _, tp := range nresp.Groups[0].Topics {
				namedCodes[tp.Topic] = tp.Partitions[0].ErrorCode
			}
			if namedCodes["nowrite"] != kerr.TopicAuthorizationFailed.Code || namedCodes["open"] != 0 {
				t.Errorf("v%d named topics of g: %v", version, namedCodes)
			}
			req.Groups = []kmsg.OffsetFetchRequestGroup{all, hidden}
		} else {
			req.Group = "g"
		}
		vcl := cl
		if version < 8 {
			// Kafka 2.8's versions: OffsetFetch v7.
			vcl = newClient(t, srv, kgo.MaxVersions(kversion.V2_8_0()))
		}
		kresp, err := vcl.Broker(1).Request(ctx, req) // to this broker
		if err != nil {
			t.Fatal(err)
		}
		if got := kresp.GetVersion(); got != version {
			t.Fatalf("sent v%d, want v%d", got, version)
		}
		resp := kresp.(*kmsg.OffsetFetchResponse)
		if version >= 8 {
			var all []string
			for _, tp := range resp.Groups[0].Topics {
				all = append(all, tp.Topic)
			}
			if !slices.Equal(all, []string{"open"}) {
				t.Errorf("v%d all topics of g: %v, want [open]", version, all)
			}
			if g := resp.Groups[1]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code || len(g.Topics) != 0 {
				t.Errorf("v%d hidden group: %v %v", version, kerr.ErrorForCode(g.ErrorCode), g.Topics)
			}
			continue
		}
		var all []string
		for _, tp := range resp.Topics {
			all = append(all, tp.Topic)
		}
		if !slices.Equal(all, []string{"open"}) {
			t.Errorf("v%d all topics of g: %v, want [open]", version, all)
		}
	}

	// ConsumerGroupHeartbeat: READ on the group, DESCRIBE on each
	// subscribed topic.
	for _, tc := range []struct {
		group, topic string
		want         int16
	}{{"closed", "open", kerr.GroupAuthorizationFailed.Code}, {"g848", "secret", kerr.TopicAuthorizationFailed.Code}} {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberEpoch, hb.RebalanceTimeoutMillis = tc.group, 0, 10000
		hb.MemberID = "m-" + tc.group
		hb.SubscribedTopicNames = []string{tc.topic}
		if kresp, err := cl.Broker(1).Request(ctx, hb); err != nil {
			t.Fatal(err)
		} else if c := kresp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; c != tc.want {
			t.Errorf("ConsumerGroupHeartbeat %s subscribing %s: %v", tc.group, tc.topic, kerr.ErrorForCode(c))
		}
	}

	// Client quotas: DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster, which
	// its ACLs (ALTER, DESCRIBE) do not imply.
	dq := kmsg.NewPtrDescribeClientQuotasRequest()
	dqResp, err := dq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if dqResp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || dqResp.ErrorMessage == nil || *dqResp.ErrorMessage != "Cluster authorization failed." {
		t.Errorf("DescribeClientQuotas without DESCRIBE_CONFIGS: %v %v", kerr.ErrorForCode(dqResp.ErrorCode), dqResp.ErrorMessage)
	}
	aq := kmsg.NewPtrAlterClientQuotasRequest()
	ae := kmsg.NewAlterClientQuotasRequestEntry()
	ae.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("alice")}}
	ae.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
	aq.Entries = append(aq.Entries, ae)
	aqResp, err := aq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(aqResp.Entries) != 1 || aqResp.Entries[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("AlterClientQuotas without ALTER_CONFIGS: %+v", aqResp.Entries)
	}
	if qs, err := adm.DescribeClientQuotas(ctx, false, nil); err == nil || len(qs) != 0 {
		t.Errorf("quotas described without DESCRIBE_CONFIGS: %v %v", qs, err)
	}
}

// InitProducerId, EndTxn, AddOffsetsToTxn, FindCoordinator and ListOffsets
// authorized as KafkaApis does. franz-go sends the transactional requests
// to the coordinator FindCoordinator names, so a transactional id denied
// DESCRIBE fails there first; "tx-ro" may be described but not written.
func TestTransactionsAndCoordinatorsAuthorized(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found", "true")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	const me = "User:ANONYMOUS"
	mustCreate := func(b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b.ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create ACL: %v %s", r.Err, r.ErrMessage)
			}
		}
	}
	createTopic(t, cl, "hidden", 1, nil)
	mustCreate(kadm.NewACLs().Clusters().Allow(me).Operations(kadm.OpAlter, kadm.OpDescribe, kadm.OpCreate))
	mustCreate(kadm.NewACLs().Topics("*").Deny(me).Operations(kadm.OpWrite))
	mustCreate(kadm.NewACLs().Topics("hidden").Deny(me).Operations(kadm.OpDescribe))
	mustCreate(kadm.NewACLs().TransactionalIDs("tx-denied").Deny(me).Operations(kadm.OpAll))
	mustCreate(kadm.NewACLs().TransactionalIDs("tx-ro").Allow(me).Operations(kadm.OpDescribe))
	mustCreate(kadm.NewACLs().TransactionalIDs("tx-ro").Deny(me).Operations(kadm.OpWrite))
	mustCreate(kadm.NewACLs().Groups("g-denied").Deny(me).Operations(kadm.OpAll))

	initPID := func(txnID *string) error {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = txnID, 60000, -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	// Idempotent: WRITE on no topic (denied on every one) and no
	// IDEMPOTENT_WRITE on the cluster; then the cluster grants it.
	if err := initPID(nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("idempotent InitProducerId without WRITE on any topic: %v", err)
	}
	mustCreate(kadm.NewACLs().Clusters().Allow(me).Operations(kadm.OpIdempotentWrite))
	if err := initPID(nil); err != nil {
		t.Errorf("idempotent InitProducerId with IDEMPOTENT_WRITE: %v", err)
	}
	for id, want := range map[string]error{"tx-denied": kerr.TransactionalIDAuthorizationFailed,
		"tx-ro": kerr.TransactionalIDAuthorizationFailed, "tx-ok": nil} {
		if err := initPID(kmsg.StringPtr(id)); !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("InitProducerId %s: %v, want %v", id, err, want)
		}
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = "tx-ro", 1, 0
	if resp, err := end.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if resp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("EndTxn tx-ro: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	addOff := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOff.TransactionalID, addOff.ProducerID, addOff.ProducerEpoch, addOff.Group = "tx-ok", 1, 0, "g-denied"
	if resp, err := addOff.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("AddOffsetsToTxn to g-denied: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// AddPartitionsToTxn from a client (v3: Kafka 3.5's versions) and from
	// a broker (v4+, CLUSTER_ACTION); TxnOffsetCommit.
	old := newClient(t, srv, kgo.MaxVersions(kversion.V3_5_0()))
	for id, want := range map[string]int16{"tx-ro": kerr.TransactionalIDAuthorizationFailed.Code, "tx-ok": kerr.TopicAuthorizationFailed.Code} {
		apt := kmsg.NewPtrAddPartitionsToTxnRequest()
		apt.TransactionalID, apt.ProducerID, apt.ProducerEpoch = id, 1, 0
		apt.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "hidden", Partitions: []int32{0}}}
		kresp, err := old.Broker(1).Request(ctx, apt)
		if err != nil {
			t.Fatal(err)
		}
		if got := kresp.GetVersion(); got != 3 {
			t.Fatalf("AddPartitionsToTxn sent at v%d", got)
		}
		if c := kresp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; c != want {
			t.Errorf("AddPartitionsToTxn %s: %v, want %v", id, kerr.ErrorForCode(c), kerr.ErrorForCode(want))
		}
	}
	apt := kmsg.NewPtrAddPartitionsToTxnRequest()
	apt.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "tx-ok", ProducerID: 1, VerifyOnly: true,
		Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "hidden", Partitions: []int32{0}}}}}
	if kresp, err := cl.Broker(1).Request(ctx, apt); err != nil {
		t.Fatal(err)
	} else if c := kresp.(*kmsg.AddPartitionsToTxnResponse).ErrorCode; kresp.GetVersion() < 4 || c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("AddPartitionsToTxn v%d without CLUSTER_ACTION: %v", kresp.GetVersion(), kerr.ErrorForCode(c))
	}
	for _, tc := range []struct {
		id, group string
		want      int16
	}{{"tx-ro", "g-ok", kerr.TransactionalIDAuthorizationFailed.Code}, {"tx-ok", "g-denied", kerr.GroupAuthorizationFailed.Code}} {
		toc := kmsg.NewPtrTxnOffsetCommitRequest()
		toc.TransactionalID, toc.Group, toc.ProducerID, toc.Generation = tc.id, tc.group, 1, -1
		toc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "hidden", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}}}}
		if kresp, err := cl.Broker(1).Request(ctx, toc); err != nil {
			t.Fatal(err)
		} else if c := kresp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; c != tc.want {
			t.Errorf("TxnOffsetCommit %s %s: %v", tc.id, tc.group, kerr.ErrorForCode(c))
		}
	}

	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx-denied"}
	if kresp, err := cl.Broker(1).Request(ctx, dt); err != nil {
		t.Fatal(err)
	} else if c := kresp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode; c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("DescribeTransactions tx-denied: %v", kerr.ErrorForCode(c))
	}
	// ListTransactions: tx-ok (which InitProducerId created) is listed
	// until DESCRIBE on it is denied.
	listed := func() bool {
		t.Helper()
		kresp, err := cl.Broker(1).Request(ctx, kmsg.NewPtrListTransactionsRequest())
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range kresp.(*kmsg.ListTransactionsResponse).TransactionStates {
			if st.TransactionalID == "tx-ok" {
				return true
			}
		}
		return false
	}
	if !listed() {
		t.Error("ListTransactions does not list tx-ok")
	}
	mustCreate(kadm.NewACLs().TransactionalIDs("tx-ok").Deny(me).Operations(kadm.OpDescribe))
	if listed() {
		t.Error("ListTransactions lists tx-ok, which may not be described")
	}
	if res, err := adm.DeleteACLs(ctx, kadm.NewACLs().TransactionalIDs("tx-ok").Deny(me).DenyHosts().Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}

	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorType, find.CoordinatorKeys = 0, []string{"g-denied", "g-ok"}
	if resp, err := find.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		codes := map[string]int16{} // by key: franz-go may split and merge the request
		for _, rc := range resp.Coordinators {
			codes[rc.Key] = rc.ErrorCode
		}
		if codes["g-denied"] != kerr.GroupAuthorizationFailed.Code || codes["g-ok"] != 0 || len(codes) != 2 {
			t.Errorf("FindCoordinator groups: %v", codes)
		}
	}
	find.CoordinatorType, find.CoordinatorKeys = 1, []string{"tx-denied"}
	if resp, err := find.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if c := resp.Coordinators[0].ErrorCode; c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("FindCoordinator tx-denied: %v", kerr.ErrorForCode(c))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "hidden"
	lt.Partitions = append(lt.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
	lo.Topics = append(lo.Topics, lt)
	// Sent to the broker itself: franz-go would stop at Metadata, which
	// refuses the topic too.
	if kresp, err := cl.Broker(1).Request(ctx, lo); err != nil {
		t.Fatal(err)
	} else if c := kresp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("ListOffsets hidden: %v", kerr.ErrorForCode(c))
	}
}

// The group APIs beyond membership: DescribeGroups, ListGroups,
// DeleteGroups and OffsetDelete.
func TestGroupAdminAuthorized(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found", "true")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	const me = "User:ANONYMOUS"
	createTopic(t, cl, "t", 1, nil)
	// Two groups with a committed offset each (no ACLs yet: all open).
	for _, g := range []string{"visible", "hidden"} {
		if _, err := adm.CommitOffsets(ctx, g, kadm.OffsetsFromRecords(kgo.Record{Topic: "t", Partition: 0, Offset: 0})); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []*kadm.ACLBuilder{
		// ALTER on the cluster (ACL management), DESCRIBE on it denied, so
		// that ListGroups filters.
		kadm.NewACLs().Clusters().Allow(me).Operations(kadm.OpAlter),
		kadm.NewACLs().Clusters().Deny(me).Operations(kadm.OpDescribe),
		kadm.NewACLs().Groups("hidden").Allow(me).Operations(kadm.OpDescribe),
		kadm.NewACLs().Groups("hidden").Deny(me).Operations(kadm.OpDescribe, kadm.OpDelete),
	} {
		res, err := adm.CreateACLs(ctx, b.ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Groups(); !slices.Equal(got, []string{"visible"}) {
		t.Errorf("ListGroups: %v, want [visible]", got)
	}
	// Straight to the broker: franz-go's FindCoordinator would stop at
	// the hidden group first.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"visible", "hidden"}
	dg.IncludeAuthorizedOperations = true
	if kresp, err := cl.Broker(1).Request(ctx, dg); err != nil {
		t.Fatal(err)
	} else if gs := kresp.(*kmsg.DescribeGroupsResponse).Groups; gs[0].ErrorCode != 0 || gs[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("DescribeGroups: %v %v", kerr.ErrorForCode(gs[0].ErrorCode), kerr.ErrorForCode(gs[1].ErrorCode))
	} else if got, want := gs[0].AuthorizedOperations, int32(1<<3|1<<6|1<<8|1<<10|1<<11); got != want {
		// visible has no ACLs: allow.everyone.if.no.acl.found gives every
		// group operation: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS and
		// ALTER_CONFIGS (Kafka 4.4 answers 3400 for ALL).
		t.Errorf("visible's authorized operations: %b, want %b", got, want)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "hidden"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if kresp, err := cl.Broker(1).Request(ctx, od); err != nil {
		t.Fatal(err)
	} else if c := kresp.(*kmsg.OffsetDeleteResponse).ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("OffsetDelete hidden: %v", kerr.ErrorForCode(c))
	}
	dl := kmsg.NewPtrDeleteGroupsRequest()
	dl.Groups = []string{"hidden", "visible"}
	kresp, err := cl.Broker(1).Request(ctx, dl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, g := range kresp.(*kmsg.DeleteGroupsResponse).Groups {
		codes[g.Group] = g.ErrorCode
	}
	if codes["hidden"] != kerr.GroupAuthorizationFailed.Code || codes["visible"] != 0 || len(codes) != 2 {
		t.Errorf("DeleteGroups: %v", codes)
	}
	// The hidden group's offset survived both: seen once the deny is gone.
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Groups("hidden").Deny(me).DenyHosts().Operations(kadm.OpAny),
	} {
		if res, err := adm.DeleteACLs(ctx, b.ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "hidden")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("t", 0); !ok || o.At != 1 { // the record's offset + 1
		t.Errorf("hidden's offset after the refused deletes: %+v %v", o, ok)
	}
}
