package reference

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group and transaction sequences of the conformance harness, and the
// keys with no state of their own (SASL on a PLAINTEXT listener, ACLs
// without an authorizer, delegation tokens, quotas, SCRAM).

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

func consumerMetadata() []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = []string{cfTopic}
	return m.AppendTo(nil)
}

func joinReq(group func(*target) string, member func(*target) string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group = group(t)
		r.MemberID = member(t)
		r.SessionTimeoutMillis = 30000
		r.RebalanceTimeoutMillis = 30000
		r.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		p.Metadata = consumerMetadata()
		r.Protocols = append(r.Protocols, p)
		return r
	}
}

func keepJoin(t *target, r kmsg.Response) {
	j := r.(*kmsg.JoinGroupResponse)
	if j.MemberID != "" {
		t.set("member", j.MemberID)
	}
	if j.ErrorCode == 0 {
		t.set("generation", j.Generation)
	}
}

func classicGroup(t *target) string { return t.name("cf-g") }
func member(t *target) string       { return t.str("member") }

func syncReq(t *target) kmsg.Request {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Group = classicGroup(t)
	r.Generation = t.i32("generation")
	r.MemberID = member(t)
	r.ProtocolType = kmsg.StringPtr("consumer")
	r.Protocol = kmsg.StringPtr("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID = member(t)
	ca := kmsg.NewConsumerMemberAssignment()
	ct := kmsg.NewConsumerMemberAssignmentTopic()
	ct.Topic = cfTopic
	ct.Partitions = []int32{0}
	ca.Topics = append(ca.Topics, ct)
	a.MemberAssignment = ca.AppendTo(nil)
	r.GroupAssignment = append(r.GroupAssignment, a)
	return r
}

func heartbeatReq(generation func(*target) int32, member func(*target) string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group = classicGroup(t)
		r.Generation = generation(t)
		r.MemberID = member(t)
		return r
	}
}

func offsetCommitReq(group func(*target) string, generation func(*target) int32, member func(*target) string, topic string, offset int64) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group = group(t)
		r.Generation = generation(t)
		r.MemberID = member(t)
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rt.TopicID = t.id(topic)
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = 0
		rp.Offset = offset
		rp.LeaderEpoch = -1
		rp.Metadata = kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func offsetFetchReq(group func(*target) string, topic string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = group(t)
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = topic
		rt.Partitions = []int32{0}
		r.Topics = append(r.Topics, rt)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group(t)
		g.MemberEpoch = -1
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic = topic
		gt.TopicID = t.id(topic)
		gt.Partitions = []int32{0}
		g.Topics = append(g.Topics, gt)
		r.Groups = append(r.Groups, g)
		return r
	}
}

func describeGroupsReq(groups ...func(*target) string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrDescribeGroupsRequest()
		for _, g := range groups {
			r.Groups = append(r.Groups, g(t))
		}
		r.IncludeAuthorizedOperations = true
		return r
	}
}

func leaveReq(t *target) kmsg.Request {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Group = classicGroup(t)
	r.MemberID = member(t)
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = member(t)
	r.Members = append(r.Members, m)
	return r
}

func gen(t *target) int32               { return t.i32("generation") }
func genPlus(t *target) int32           { return t.i32("generation") + 1 }
func minusOne(*target) int32            { return -1 }
func emptyStr(*target) string           { return "" }
func bogusMember(*target) string        { return "cf-bogus-member" }
func simpleGroup(t *target) string      { return t.name("cf-simple") }
func absentGroup(*target) string        { return "cf-absent-group" }
func consumerGroup(t *target) string    { return t.name("cf-cg") }
func consumerMemberID(t *target) string { return t.name("cf-member-0000000000000") }

func cgHeartbeat(epoch func(*target) int32, join bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group = consumerGroup(t)
		r.MemberID = consumerMemberID(t)
		r.MemberEpoch = epoch(t)
		r.RebalanceTimeoutMillis = -1
		if join {
			r.RebalanceTimeoutMillis = 30000
			r.SubscribedTopicNames = []string{cfTopic}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		return r
	}
}

func groupScenarios() []scenario {
	return []scenario{
		{name: "classic group", steps: []step{
			{path: "join without member id", req: joinReq(classicGroup, emptyStr), keep: keepJoin},
			{path: "join", req: joinReq(classicGroup, member), keep: keepJoin},
			{path: "sync", req: syncReq},
			{path: "heartbeat", req: heartbeatReq(gen, member)},
			{path: "heartbeat wrong generation", req: heartbeatReq(genPlus, member)},
			{path: "heartbeat unknown member", req: heartbeatReq(gen, bogusMember)},
			{path: "sync wrong generation", req: func(t *target) kmsg.Request {
				r := syncReq(t).(*kmsg.SyncGroupRequest)
				r.Generation++
				return r
			}},
			{path: "heartbeat unknown group", req: func(t *target) kmsg.Request {
				r := heartbeatReq(gen, member)(t).(*kmsg.HeartbeatRequest)
				r.Group = "cf-absent-group"
				return r
			}},
			{path: "commit", req: offsetCommitReq(classicGroup, gen, member, cfTopic, 3)},
			{path: "commit wrong generation", req: offsetCommitReq(classicGroup, genPlus, member, cfTopic, 3)},
			{path: "commit unknown member", req: offsetCommitReq(classicGroup, gen, bogusMember, cfTopic, 3)},
			{path: "commit unknown topic", req: offsetCommitReq(classicGroup, gen, member, "cf-absent", 3)},
			{path: "fetch offsets", req: offsetFetchReq(classicGroup, cfTopic)},
			{path: "describe", req: describeGroupsReq(classicGroup, absentGroup)},
			{path: "list", req: func(t *target) kmsg.Request { return kmsg.NewPtrListGroupsRequest() }},
			{path: "list consumer type", minVersion: 5, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrListGroupsRequest()
				r.TypesFilter = []string{"consumer"}
				return r
			}},
			{path: "fetch offsets require stable", minVersion: 7, req: func(t *target) kmsg.Request {
				r := offsetFetchReq(classicGroup, cfTopic)(t).(*kmsg.OffsetFetchRequest)
				r.RequireStable = true
				return r
			}},
			{path: "list stable", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrListGroupsRequest()
				r.StatesFilter = []string{"Stable"}
				return r
			}},
			{path: "join unknown member", req: joinReq(classicGroup, bogusMember)},
			{path: "join invalid session timeout", req: func(t *target) kmsg.Request {
				r := joinReq(classicGroup, emptyStr)(t).(*kmsg.JoinGroupRequest)
				r.SessionTimeoutMillis = 1
				return r
			}},
			{path: "offset delete while subscribed", req: offsetDeleteReq(classicGroup, cfTopic)},
			{path: "delete while not empty", req: deleteGroupsReq(classicGroup)},
			{path: "leave", req: leaveReq},
			{path: "leave unknown member", req: func(t *target) kmsg.Request {
				r := leaveReq(t).(*kmsg.LeaveGroupRequest)
				r.MemberID = "cf-bogus-member"
				r.Members[0].MemberID = "cf-bogus-member"
				return r
			}},
			{path: "heartbeat after leaving", req: heartbeatReq(gen, member)},
			{path: "sync unknown member", req: func(t *target) kmsg.Request {
				r := syncReq(t).(*kmsg.SyncGroupRequest)
				r.MemberID = "cf-bogus-member"
				return r
			}},
			{path: "offset delete", req: offsetDeleteReq(classicGroup, cfTopic)},
			{path: "delete", req: deleteGroupsReq(classicGroup)},
			{path: "delete again", req: deleteGroupsReq(classicGroup)},
		}},
		{name: "simple commits", steps: []step{
			{path: "commit", req: offsetCommitReq(simpleGroup, minusOne, emptyStr, cfTopic, 2)},
			{path: "fetch", req: offsetFetchReq(simpleGroup, cfTopic)},
			{path: "fetch unknown group", req: offsetFetchReq(absentGroup, cfTopic)},
			{path: "fetch unknown topic", req: offsetFetchReq(simpleGroup, "cf-absent")},
			{path: "commit with a generation to a group without members", req: offsetCommitReq(simpleGroup, func(*target) int32 { return 4 }, bogusMember, cfTopic, 2)},
			{path: "offset delete unknown group", req: offsetDeleteReq(absentGroup, cfTopic)},
			{path: "delete unknown group", req: deleteGroupsReq(absentGroup)},
			{path: "describe unknown group", req: describeGroupsReq(absentGroup)},
		}},
		{name: "consumer group", steps: []step{
			{path: "join", req: cgHeartbeat(func(*target) int32 { return 0 }, true), keep: func(t *target, r kmsg.Response) {
				t.set("epoch", r.(*kmsg.ConsumerGroupHeartbeatResponse).MemberEpoch)
			}},
			{path: "heartbeat", req: cgHeartbeat(func(t *target) int32 { return t.i32("epoch") }, false)},
			{path: "fenced epoch", req: cgHeartbeat(func(t *target) int32 { return t.i32("epoch") + 5 }, false)},
			{path: "join without rebalance timeout", req: func(t *target) kmsg.Request {
				r := cgHeartbeat(func(*target) int32 { return 0 }, true)(t).(*kmsg.ConsumerGroupHeartbeatRequest)
				r.MemberID = t.name("cf-member-1111111111111")
				r.RebalanceTimeoutMillis = -1
				return r
			}},
			{path: "unknown assignor", req: func(t *target) kmsg.Request {
				r := cgHeartbeat(func(*target) int32 { return 0 }, true)(t).(*kmsg.ConsumerGroupHeartbeatRequest)
				r.MemberID = t.name("cf-member-2222222222222")
				r.ServerAssignor = kmsg.StringPtr("no-such-assignor")
				return r
			}},
			{path: "describe", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrConsumerGroupDescribeRequest()
				r.Groups = []string{consumerGroup(t), "cf-absent-group"}
				r.IncludeAuthorizedOperations = true
				return r
			}},
			{path: "classic join to a consumer group", req: joinReq(consumerGroup, emptyStr)},
			{path: "leave", req: cgHeartbeat(func(*target) int32 { return -1 }, false)},
		}},
	}
}

func offsetDeleteReq(group func(*target) string, topic string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group(t)
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rp.Partition = 0
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func deleteGroupsReq(group func(*target) string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{group(t)}
		return r
	}
}

func txnID(t *target) string { return t.name("cf-tx") }

func keepProducer(t *target, r kmsg.Response) {
	p := r.(*kmsg.InitProducerIDResponse)
	if p.ErrorCode == 0 {
		t.set("pid", p.ProducerID)
		t.set("pepoch", p.ProducerEpoch)
	}
}

func addPartitionsReq(topic string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.TransactionalID = txnID(t)
		r.ProducerID = t.i64("pid")
		r.ProducerEpoch = t.i16("pepoch")
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic = topic
		rt.Partitions = []int32{0}
		r.Topics = append(r.Topics, rt)
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID = r.TransactionalID
		tx.ProducerID = r.ProducerID
		tx.ProducerEpoch = r.ProducerEpoch
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic = topic
		tt.Partitions = []int32{0}
		tx.Topics = append(tx.Topics, tt)
		r.Transactions = append(r.Transactions, tx)
		return r
	}
}

func endTxnReq(commit bool, epochDelta int16) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrEndTxnRequest()
		r.TransactionalID = txnID(t)
		r.ProducerID = t.i64("pid")
		r.ProducerEpoch = t.i16("pepoch") + epochDelta
		r.Commit = commit
		return r
	}
}

func otherScenarios() []scenario {
	return []scenario{
		{name: "transaction", steps: []step{
			{path: "init transactional", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionalID = kmsg.StringPtr(txnID(t))
				r.TransactionTimeoutMillis = 60000
				return r
			}, keep: keepProducer},
			{path: "end without a transaction", req: endTxnReq(true, 0)},
			{path: "add partitions", req: addPartitionsReq(cfTopic)},
			{path: "add unknown topic", req: addPartitionsReq("cf-absent")},
			{path: "add offsets", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrAddOffsetsToTxnRequest()
				r.TransactionalID = txnID(t)
				r.ProducerID = t.i64("pid")
				r.ProducerEpoch = t.i16("pepoch")
				r.Group = t.name("cf-txg")
				return r
			}},
			{path: "commit offsets", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrTxnOffsetCommitRequest()
				r.TransactionalID = txnID(t)
				r.Group = t.name("cf-txg")
				r.ProducerID = t.i64("pid")
				r.ProducerEpoch = t.i16("pepoch")
				r.Generation = -1
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic = cfTopic
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition = 0
				rp.Offset = 4
				rp.LeaderEpoch = -1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "describe ongoing", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.TransactionalIDs = []string{txnID(t), "cf-absent-tx"}
				return r
			}},
			{path: "list ongoing", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrListTransactionsRequest()
				r.StateFilters = []string{"Ongoing"}
				return r
			}},
			{path: "end with an old epoch", req: endTxnReq(true, -1)},
			{path: "commit", req: endTxnReq(true, 0)},
			{path: "init idempotent", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionTimeoutMillis = 60000
				return r
			}},
			{path: "invalid transaction timeout", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionalID = kmsg.StringPtr(t.name("cf-tx-bad"))
				r.TransactionTimeoutMillis = 2_000_000_000
				return r
			}},
			// Kafka writes the commit marker after EndTxn answers.
			{path: "producers of a partition", eventually: true, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeProducersRequest()
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic = cfTopic
				rt.Partitions = []int32{0, 9}
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "write markers for an unknown producer", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID = 123456789
				m.ProducerEpoch = 0
				m.Committed = false
				m.CoordinatorEpoch = 0
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic = "cf-absent"
				mt.Partitions = []int32{0}
				m.Topics = append(m.Topics, mt)
				r.Markers = append(r.Markers, m)
				return r
			}},
		}},
		{name: "FindCoordinator", steps: []step{
			{path: "group", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorKey = "cf-fc-group"
				r.CoordinatorKeys = []string{"cf-fc-group"}
				return r
			}},
			{path: "transaction", minVersion: 1, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorType = 1
				r.CoordinatorKey = "cf-fc-tx"
				r.CoordinatorKeys = []string{"cf-fc-tx"}
				return r
			}},
			{path: "unknown key type", minVersion: 1, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorType = 7
				r.CoordinatorKey = "x"
				r.CoordinatorKeys = []string{"x"}
				return r
			}},
		}},
		{name: "SASL on a PLAINTEXT listener", steps: []step{
			{path: "handshake", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrSASLHandshakeRequest()
				r.Mechanism = "PLAIN"
				return r
			}},
			{path: "authenticate", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrSASLAuthenticateRequest()
				r.SASLAuthBytes = []byte("\x00u\x00p")
				return r
			}},
		}},
		{name: "ACLs without an authorizer", steps: []step{
			{path: "describe", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeACLsRequest()
				r.ResourceType = kmsg.ACLResourceTypeAny
				r.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
				r.Operation = kmsg.ACLOperationAny
				r.PermissionType = kmsg.ACLPermissionTypeAny
				return r
			}},
			{path: "create", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrCreateACLsRequest()
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType = kmsg.ACLResourceTypeTopic
				c.ResourceName = cfTopic
				c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
				c.Principal = "User:x"
				c.Host = "*"
				c.Operation = kmsg.ACLOperationRead
				c.PermissionType = kmsg.ACLPermissionTypeAllow
				r.Creations = append(r.Creations, c)
				return r
			}},
			{path: "delete", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType = kmsg.ACLResourceTypeAny
				f.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
				f.Operation = kmsg.ACLOperationAny
				f.PermissionType = kmsg.ACLPermissionTypeAny
				r.Filters = append(r.Filters, f)
				return r
			}},
		}},
		{name: "delegation tokens on a PLAINTEXT listener", steps: []step{
			{path: "create", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrCreateDelegationTokenRequest()
				r.MaxLifetimeMillis = -1
				return r
			}},
			{path: "describe", req: func(t *target) kmsg.Request { return kmsg.NewPtrDescribeDelegationTokenRequest() }},
			{path: "renew", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrRenewDelegationTokenRequest()
				r.HMAC = []byte("nope")
				r.RenewTimeMillis = -1
				return r
			}},
			{path: "expire", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrExpireDelegationTokenRequest()
				r.HMAC = []byte("nope")
				r.ExpiryPeriodMillis = -1
				return r
			}},
		}},
		{name: "client quotas", steps: []step{
			{path: "alter", req: quotaAlterReq("producer_byte_rate", 1048576, false)},
			{path: "alter validate only", req: quotaAlterReq("consumer_byte_rate", 2048, true)},
			{path: "alter unknown key", req: quotaAlterReq("no_such_quota", 1, false)},
			{path: "alter negative", req: quotaAlterReq("producer_byte_rate", -5, false)},
			{path: "describe exact", eventually: true, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeClientQuotasRequest()
				c := kmsg.NewDescribeClientQuotasRequestComponent()
				c.EntityType = "user"
				c.MatchType = 0
				c.Match = kmsg.StringPtr("cf-user")
				r.Components = append(r.Components, c)
				r.Strict = true
				return r
			}},
			{path: "describe unknown entity type", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeClientQuotasRequest()
				c := kmsg.NewDescribeClientQuotasRequestComponent()
				c.EntityType = "nobody"
				c.MatchType = 2
				r.Components = append(r.Components, c)
				return r
			}},
		}},
		{name: "SCRAM credentials", steps: []step{
			{path: "upsert", req: scramUpsert(8192)},
			{path: "too few iterations", req: scramUpsert(10)},
			{path: "describe", eventually: true, req: scramDescribe("cf-user")},
			{path: "describe unknown user", req: scramDescribe("cf-nobody")},
			{path: "delete unknown user", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				d.Name = "cf-nobody"
				d.Mechanism = 1
				r.Deletions = append(r.Deletions, d)
				return r
			}},
		}},
		{name: "ListConfigResources", steps: []step{
			{path: "all", req: func(t *target) kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() }},
			{path: "topics", minVersion: 1, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrListConfigResourcesRequest()
				r.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeTopic)}
				return r
			}},
		}},
	}
}

func quotaAlterReq(key string, value float64, validate bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrAlterClientQuotasRequest()
		r.ValidateOnly = validate
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ee.Type = "user"
		ee.Name = kmsg.StringPtr("cf-user")
		e.Entity = append(e.Entity, ee)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key = key
		op.Value = value
		e.Ops = append(e.Ops, op)
		r.Entries = append(r.Entries, e)
		return r
	}
}

func scramUpsert(iterations int32) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name = "cf-user"
		u.Mechanism = 1
		u.Iterations = iterations
		u.Salt = []byte("0123456789abcdef")
		u.SaltedPassword = make([]byte, 32)
		r.Upsertions = append(r.Upsertions, u)
		return r
	}
}

func scramDescribe(user string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = user
		r.Users = append(r.Users, u)
		return r
	}
}

// knownDivergence is one entry of the allow-list: the DIFFERENCES.md entry
// (its bold title, which the test finds in DIFFERENCES.md) and the fields
// the divergence may touch: every line of the difference must contain one
// of them ("" allows any).
type knownDivergence struct {
	entry  string
	fields []string
}

// knownDivergences: the steps ("scenario: path") whose answers differ from
// Kafka's as compat-tests/DIFFERENCES.md describes. Nothing else may differ.
var knownDivergences = map[string]knownDivergence{
	"consumer group: join":      {"**KIP-848 consumer groups**", []string{"Epoch="}},
	"consumer group: heartbeat": {"**KIP-848 consumer groups**", []string{"Epoch="}},
	"consumer group: describe":  {"**KIP-848 consumer groups**", []string{"Epoch="}},
	"DescribeConfigs: topic": {"**`min.insync.replicas` as a cluster default**",
		[]string{"[min.insync.replicas].Source=", "[min.insync.replicas].ConfigSynonyms"}},
	"quorum: describe": {"**The metadata quorum is the etcd cluster**",
		[]string{"LogEndOffset=", "HighWatermark=", "LeaderEpoch=", "ReplicaDirectoryID=", ".Listeners"}},
	"quorum: add an unknown voter": {"**Quorum changes**", []string{".ErrorCode="}},
	// Share groups: the first epoch, and Kafka's background assignment
	// and share-partition initialization (its timing varies, so these
	// steps may or may not differ).
	"share group: join":                    {"**Share groups (KIP-932)**", []string{"Epoch=", "Assignment.TopicPartitions"}},
	"share group: heartbeat":               {"**Share groups (KIP-932)**", []string{"Epoch=", "Assignment.TopicPartitions", ".Assignment=null"}},
	"share group: describe":                {"**Share groups (KIP-932)**", []string{"Epoch=", "Assignment.TopicPartitions"}},
	"share group: fetch opening a session": {"**Share groups (KIP-932)**", []string{".Topics"}},
	"share group: acknowledge":             {"**Share groups (KIP-932)**", []string{".Topics[0].Partitions[0].Error"}},
	"share group: offsets":                 {"**Share groups (KIP-932)**", []string{"StartOffset=", "Lag="}},
	"streams group: join":                  {"**Streams groups (KIP-1071)**", []string{"Epoch=", "AcceptableRecoveryLagLegacy="}},
	"streams group: heartbeat":             {"**Streams groups (KIP-1071)**", []string{"Epoch=", "AcceptableRecoveryLagLegacy="}},
	"streams group: describe":              {"**Streams groups (KIP-1071)**", []string{"Epoch="}},
	"streams group: describe description":  {"**Streams groups (KIP-1071)**", []string{"Epoch="}},
	"CreateTopics: ok":                     {"**CreateTopics v5+ config sources**", []string{"].Source="}},
	"CreateTopics: validate only":          {"**CreateTopics v5+ config sources**", []string{"].Source="}},
	"CreatePartitions: setup topic":        {"**CreateTopics v5+ config sources**", []string{"].Source="}},
	"DeleteTopics: setup topic":            {"**CreateTopics v5+ config sources**", []string{"].Source="}},
}

// allows reports whether every line of diff touches one of k's fields.
func (k knownDivergence) allows(diff string) bool {
	for _, l := range strings.Split(diff, "\n") {
		ok := false
		for _, f := range k.fields {
			if strings.Contains(l, f) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
