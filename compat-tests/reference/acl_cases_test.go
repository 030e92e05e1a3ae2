package reference

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The requests of the differential authorization test, in the order sent.
// Each names acl-t (alice may, bob may only describe it), secret (neither
// may), acl-g and acl-tx (alice may), so that one request shows both the
// allowed and the filtered or refused parts.

// topicIDs: the ids of acl-t and secret on the broker asked (Produce and
// Fetch name topics by id).
type topicIDs map[string][16]byte

func metadataTopics(names ...string) []kmsg.MetadataRequestTopic {
	var out []kmsg.MetadataRequestTopic
	for _, n := range names {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		out = append(out, t)
	}
	return out
}

func aclCases() []aclCase {
	return []aclCase{
		{18, "ApiVersions", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.ClientSoftwareName = "strait-reference"
			r.ClientSoftwareVersion = "1"
			return r
		}},
		{3, "Metadata all topics", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = nil
			r.IncludeClusterAuthorizedOperations = true
			r.IncludeTopicAuthorizedOperations = true
			return r
		}},
		{3, "Metadata named topics", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = metadataTopics(aclTopic, aclSecret, "acl-t-absent", "absent")
			r.AllowAutoTopicCreation = false
			r.IncludeTopicAuthorizedOperations = true
			return r
		}},
		{3, "Metadata auto-creation", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = metadataTopics("absent-auto")
			r.AllowAutoTopicCreation = true
			return r
		}},
		{3, "Metadata auto-creation under a describable prefix", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = metadataTopics("acl-t-auto")
			r.AllowAutoTopicCreation = true
			r.IncludeTopicAuthorizedOperations = true
			return r
		}},
		{60, "DescribeCluster", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.IncludeClusterAuthorizedOperations = true
			return r
		}},
		{75, "DescribeTopicPartitions", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			for _, n := range []string{aclTopic, aclSecret, "absent"} {
				t := kmsg.NewDescribeTopicPartitionsRequestTopic()
				t.Topic = n
				r.Topics = append(r.Topics, t)
			}
			r.ResponsePartitionLimit = 100
			return r
		}},
		{0, "Produce", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks = 1
			r.TimeoutMillis = 5000
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewProduceRequestTopic()
				t.Topic = n
				t.TopicID = ids[n]
				p := kmsg.NewProduceRequestTopicPartition()
				p.Records = batch([]rec{{key: []byte("k"), value: []byte("v"), ts: 1700000000000}})
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{1, "Fetch", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.MaxWaitMillis = 0
			r.MaxBytes = 1 << 20
			r.SessionEpoch = -1
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewFetchRequestTopic()
				t.Topic = n
				t.TopicID = ids[n]
				p := kmsg.NewFetchRequestTopicPartition()
				p.PartitionMaxBytes = 1 << 20
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{2, "ListOffsets", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewListOffsetsRequestTopic()
				t.Topic = n
				p := kmsg.NewListOffsetsRequestTopicPartition()
				p.Timestamp = -1
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{23, "OffsetForLeaderEpoch", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewOffsetForLeaderEpochRequestTopic()
				t.Topic = n
				p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				p.CurrentLeaderEpoch = -1
				p.LeaderEpoch = 0
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{10, "FindCoordinator group", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKeys = []string{aclGroup, "secret-g"}
			return r
		}},
		{10, "FindCoordinator transaction", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType = 1
			r.CoordinatorKeys = []string{aclTxn, "secret-tx"}
			return r
		}},
		{11, "JoinGroup", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group = aclGroup
			r.SessionTimeoutMillis = 10000
			r.RebalanceTimeoutMillis = 10000
			r.ProtocolType = "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			p.Metadata = []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
			r.Protocols = append(r.Protocols, p)
			return r
		}},
		{14, "SyncGroup", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group = aclGroup
			r.MemberID = "nobody"
			r.Generation = 1
			return r
		}},
		{14, "SyncGroup with its protocol", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group = aclGroup
			r.MemberID = "nobody"
			r.Generation = 1
			r.ProtocolType = kmsg.StringPtr("consumer")
			r.Protocol = kmsg.StringPtr("range")
			return r
		}},
		{12, "Heartbeat", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group = aclGroup
			r.MemberID = "nobody"
			r.Generation = 1
			return r
		}},
		{13, "LeaveGroup", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group = aclGroup
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "nobody"
			r.Members = append(r.Members, m)
			return r
		}},
		{8, "OffsetCommit", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group = aclGroup
			r.Generation = -1
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic, t.TopicID = n, ids[n] // v10 names topics by id
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Offset = 0
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{9, "OffsetFetch", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = aclGroup
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewOffsetFetchRequestGroupTopic()
				t.Topic, t.TopicID = n, ids[n] // v10 names topics by id
				t.Partitions = []int32{0}
				g.Topics = append(g.Topics, t)
			}
			r.Groups = append(r.Groups, g)
			r.Group = aclGroup
			return r
		}},
		{9, "OffsetFetch all topics", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = aclGroup
			r.Groups = append(r.Groups, g)
			r.Group = aclGroup
			return r
		}},
		{15, "DescribeGroups", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{aclGroup, "secret-g"}
			r.IncludeAuthorizedOperations = true
			return r
		}},
		{16, "ListGroups", func(topicIDs) kmsg.Request { return kmsg.NewPtrListGroupsRequest() }},
		{69, "ConsumerGroupDescribe", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{aclGroup, "secret-g"}
			r.IncludeAuthorizedOperations = true
			return r
		}},
		{68, "ConsumerGroupHeartbeat", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group = "acl-g2"
			r.MemberID = "nobody-member-id-000000"
			r.MemberEpoch = 5
			r.SubscribedTopicNames = []string{aclTopic}
			return r
		}},
		// A consumer group carol may join (acl- groups): subscribed to a
		// topic she may not describe, then to one she may; then described
		// and listed with its member.
		{68, "ConsumerGroupHeartbeat join with an undescribable topic", func(topicIDs) kmsg.Request {
			return cgJoin(aclTopic, aclSecret)
		}},
		{68, "ConsumerGroupHeartbeat join", func(topicIDs) kmsg.Request { return cgJoin(aclTopic) }},
		{69, "ConsumerGroupDescribe with a member", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{"acl-cg"}
			r.IncludeAuthorizedOperations = true
			return r
		}},
		{15, "DescribeGroups of a consumer group", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"acl-cg", aclGroup}
			r.IncludeAuthorizedOperations = true
			return r
		}},
		{16, "ListGroups with a consumer group", func(topicIDs) kmsg.Request { return kmsg.NewPtrListGroupsRequest() }},
		{47, "OffsetDelete", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = aclGroup
			t := kmsg.NewOffsetDeleteRequestTopic()
			t.Topic = aclTopic
			t.Partitions = append(t.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, t)
			return r
		}},
		{22, "InitProducerId transactional", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID = kmsg.StringPtr(aclTxn)
			r.TransactionTimeoutMillis = 60000
			return r
		}},
		{22, "InitProducerId idempotent", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis = 60000
			return r
		}},
		{24, "AddPartitionsToTxn", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID = aclTxn
			r.ProducerID = 999999
			r.ProducerEpoch = 0
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID = aclTxn
			tx.ProducerID = 999999
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewAddPartitionsToTxnRequestTopic()
				t.Topic = n
				t.Partitions = []int32{0}
				r.Topics = append(r.Topics, t)
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic = n
				tt.Partitions = []int32{0}
				tx.Topics = append(tx.Topics, tt)
			}
			r.Transactions = append(r.Transactions, tx)
			return r
		}},
		{25, "AddOffsetsToTxn", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID = aclTxn
			r.ProducerID = 999999
			r.Group = aclGroup
			return r
		}},
		{28, "TxnOffsetCommit", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID = aclTxn
			r.Group = aclGroup
			r.ProducerID = 999999
			r.Generation = -1
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewTxnOffsetCommitRequestTopic()
				t.Topic, t.TopicID = n, ids[n] // v6 names topics by id
				p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{26, "EndTxn", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID = aclTxn
			r.ProducerID = 999999
			r.Commit = false
			return r
		}},
		{27, "WriteTxnMarkers", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID = 999999
			m.CoordinatorEpoch = 0
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = aclTopic
			t.Partitions = []int32{0}
			m.Topics = append(m.Topics, t)
			r.Markers = append(r.Markers, m)
			return r
		}},
		{65, "DescribeTransactions", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{aclTxn, "secret-tx"}
			return r
		}},
		{66, "ListTransactions", func(topicIDs) kmsg.Request { return kmsg.NewPtrListTransactionsRequest() }},
		{61, "DescribeProducers", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewDescribeProducersRequestTopic()
				t.Topic = n
				t.Partitions = []int32{0}
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{32, "DescribeConfigs", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			for _, res := range []struct {
				t    kmsg.ConfigResourceType
				name string
			}{{kmsg.ConfigResourceTypeTopic, aclTopic}, {kmsg.ConfigResourceTypeTopic, aclSecret}, {kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeGroupConfig, aclGroup}} {
				x := kmsg.NewDescribeConfigsRequestResource()
				x.ResourceType = res.t
				x.ResourceName = res.name
				r.Resources = append(r.Resources, x)
			}
			return r
		}},
		{33, "AlterConfigs", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			for _, n := range []string{aclTopic, aclSecret} {
				x := kmsg.NewAlterConfigsRequestResource()
				x.ResourceType = kmsg.ConfigResourceTypeTopic
				x.ResourceName = n
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name = "retention.ms"
				c.Value = kmsg.StringPtr("86400000")
				x.Configs = append(x.Configs, c)
				r.Resources = append(r.Resources, x)
			}
			r.ValidateOnly = true
			return r
		}},
		{44, "IncrementalAlterConfigs", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			for _, n := range []string{aclTopic, aclSecret} {
				x := kmsg.NewIncrementalAlterConfigsRequestResource()
				x.ResourceType = kmsg.ConfigResourceTypeTopic
				x.ResourceName = n
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name = "retention.ms"
				c.Value = kmsg.StringPtr("86400000")
				x.Configs = append(x.Configs, c)
				r.Resources = append(r.Resources, x)
			}
			r.ValidateOnly = true
			return r
		}},
		{74, "ListConfigResources", func(topicIDs) kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() }},
		{19, "CreateTopics", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			for _, n := range []string{aclNew, "secret-new"} {
				t := kmsg.NewCreateTopicsRequestTopic()
				t.Topic = n
				t.NumPartitions = 1
				t.ReplicationFactor = 1
				r.Topics = append(r.Topics, t)
			}
			r.TimeoutMillis = 10000
			return r
		}},
		{37, "CreatePartitions", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			for _, n := range []string{aclNew, aclSecret} {
				t := kmsg.NewCreatePartitionsRequestTopic()
				t.Topic = n
				t.Count = 2
				r.Topics = append(r.Topics, t)
			}
			r.TimeoutMillis = 10000
			r.ValidateOnly = true
			return r
		}},
		{21, "DeleteRecords", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewDeleteRecordsRequestTopic()
				t.Topic = n
				p := kmsg.NewDeleteRecordsRequestTopicPartition()
				p.Offset = 0
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			r.TimeoutMillis = 5000
			return r
		}},
		{35, "DescribeLogDirs", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeLogDirsRequest()
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewDescribeLogDirsRequestTopic()
				t.Topic = n
				t.Partitions = []int32{0}
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{34, "AlterReplicaLogDirs", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAlterReplicaLogDirsRequest()
			d := kmsg.NewAlterReplicaLogDirsRequestDir()
			d.Dir = "/nonexistent"
			t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			t.Topic = aclTopic
			t.Partitions = []int32{0}
			d.Topics = append(d.Topics, t)
			r.Dirs = append(r.Dirs, d)
			return r
		}},
		{43, "ElectLeaders", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic = aclTopic
			t.Partitions = []int32{0}
			r.Topics = append(r.Topics, t)
			r.TimeoutMillis = 5000
			return r
		}},
		{45, "AlterPartitionAssignments", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			t.Topic = "absent"
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Replicas = nil // cancel a reassignment: none in progress
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			r.TimeoutMillis = 5000
			return r
		}},
		{46, "ListPartitionReassignments", func(topicIDs) kmsg.Request {
			return kmsg.NewPtrListPartitionReassignmentsRequest()
		}},
		{29, "DescribeAcls", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType = kmsg.ACLResourceTypeAny
			r.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
			r.Operation = kmsg.ACLOperationAny
			r.PermissionType = kmsg.ACLPermissionTypeAny
			return r
		}},
		{30, "CreateAcls", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType = kmsg.ACLResourceTypeTopic
			c.ResourceName = "acl-created"
			c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
			c.Principal = "User:carol"
			c.Host = "*"
			c.Operation = kmsg.ACLOperationRead
			c.PermissionType = kmsg.ACLPermissionTypeAllow
			r.Creations = append(r.Creations, c)
			return r
		}},
		{31, "DeleteAcls", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType = kmsg.ACLResourceTypeTopic
			f.ResourceName = kmsg.StringPtr("acl-created")
			f.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
			f.Operation = kmsg.ACLOperationAny
			f.PermissionType = kmsg.ACLPermissionTypeAny
			r.Filters = append(r.Filters, f)
			return r
		}},
		{48, "DescribeClientQuotas", func(topicIDs) kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() }},
		{49, "AlterClientQuotas", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			e := kmsg.NewAlterClientQuotasRequestEntry()
			ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ee.Type = "user"
			ee.Name = kmsg.StringPtr("carol")
			e.Entity = append(e.Entity, ee)
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key = "producer_byte_rate"
			op.Value = 1048576
			e.Ops = append(e.Ops, op)
			r.Entries = append(r.Entries, e)
			r.ValidateOnly = true
			return r
		}},
		{50, "DescribeUserScramCredentials", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = "alice"
			r.Users = append(r.Users, u)
			return r
		}},
		// Last of bob's requests to Kafka that can hang (see
		// knownDifferences): every user.
		{50, "DescribeUserScramCredentials all users", func(topicIDs) kmsg.Request {
			return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		}},
		{51, "AlterUserScramCredentials", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name = "carol"
			d.Mechanism = 1
			r.Deletions = append(r.Deletions, d)
			return r
		}},
		{55, "DescribeQuorum", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			t := kmsg.NewDescribeQuorumRequestTopic()
			t.Topic = "__cluster_metadata"
			t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			r.Topics = append(r.Topics, t)
			return r
		}},
		{64, "UnregisterBroker of an unknown id", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrUnregisterBrokerRequest()
			r.BrokerID = 99
			return r
		}},
		{94, "UnregisterController of an unknown id", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrUnregisterControllerRequest()
			r.ControllerID = 99
			return r
		}},
		{81, "RemoveRaftVoter of an unknown voter", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrRemoveRaftVoterRequest()
			r.VoterID = 99
			r.VoterDirectoryID = [16]byte{9}
			return r
		}},
		{57, "UpdateFeatures", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrUpdateFeaturesRequest()
			f := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			f.Feature = "transaction.version"
			f.MaxVersionLevel = 2
			f.UpgradeType = 1
			r.FeatureUpdates = append(r.FeatureUpdates, f)
			r.ValidateOnly = true
			r.TimeoutMillis = 5000
			return r
		}},
		{38, "CreateDelegationToken", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrCreateDelegationTokenRequest()
			r.MaxLifetimeMillis = -1
			return r
		}},
		{41, "DescribeDelegationToken", func(topicIDs) kmsg.Request {
			return kmsg.NewPtrDescribeDelegationTokenRequest()
		}},
		{39, "RenewDelegationToken", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrRenewDelegationTokenRequest()
			r.HMAC = []byte("not-a-token")
			r.RenewTimeMillis = -1
			return r
		}},
		{40, "ExpireDelegationToken", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrExpireDelegationTokenRequest()
			r.HMAC = []byte("not-a-token")
			r.ExpiryPeriodMillis = -1
			return r
		}},
		// Again, now that acl-t-new and acl-t-auto exist (carol is denied
		// DESCRIBE on acl-t-auto from her host).
		{3, "Metadata all topics, later", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = nil
			r.IncludeTopicAuthorizedOperations = true
			return r
		}},
		{3, "Metadata named topics, later", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = metadataTopics(aclTopic, aclNew, "acl-t-auto", aclSecret)
			r.AllowAutoTopicCreation = false
			r.IncludeTopicAuthorizedOperations = true
			return r
		}},
		// Share groups (KIP-932): carol may join acl- groups; alice only
		// acl-g, where she fetches; bob nothing.
		{76, "ShareGroupHeartbeat join with an undescribable topic", func(topicIDs) kmsg.Request {
			return sgJoin("acl-sg2", aclTopic, aclSecret)
		}},
		{76, "ShareGroupHeartbeat join", func(topicIDs) kmsg.Request { return sgJoin("acl-sg", aclTopic) }},
		{89, "StreamsGroupDescribe", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrStreamsGroupDescribeRequest()
			r.Groups = []string{"acl-streams", aclGroup, "secret-g"}
			r.IncludeAuthorizedOperations = true
			return r
		}},
		{93, "StreamsGroupTopologyDescriptionUpdate", func(topicIDs) kmsg.Request {
			return topologyDescriptionUpdate("acl-streams", "acl-streams-member", 1)
		}},
		{77, "ShareGroupDescribe", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrShareGroupDescribeRequest()
			r.GroupIDs = []string{"acl-sg", aclGroup, "secret-g"}
			r.IncludeAuthorizedOperations = true
			return r
		}},
		{78, "ShareFetch", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrShareFetchRequest()
			g, m := aclGroup, "acl-share-fetcher-0001"
			r.GroupID, r.MemberID, r.ShareSessionEpoch = &g, &m, 0
			r.MaxBytes, r.MaxRecords, r.BatchSize = 1<<20, 100, 100
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewShareFetchRequestTopic()
				t.TopicID = ids[n]
				t.Partitions = append(t.Partitions, kmsg.NewShareFetchRequestTopicPartition())
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{79, "ShareAcknowledge without a session", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrShareAcknowledgeRequest()
			g, m := aclGroup, "acl-share-acker-000001"
			r.GroupID, r.MemberID, r.ShareSessionEpoch = &g, &m, 1
			t := kmsg.NewShareAcknowledgeRequestTopic()
			t.TopicID = ids[aclTopic]
			p := kmsg.NewShareAcknowledgeRequestTopicPartition()
			b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 0, []int8{1}
			p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}},
		{90, "DescribeShareGroupOffsets", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			for _, id := range []string{"acl-sg", aclGroup} {
				g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
				g.GroupID = id
				for _, n := range []string{aclTopic, aclSecret} {
					t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
					t.Topic, t.Partitions = n, []int32{0}
					g.Topics = append(g.Topics, t)
				}
				r.Groups = append(r.Groups, g)
			}
			return r
		}},
		{91, "AlterShareGroupOffsets", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
			r.GroupID = "acl-sg3"
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
				t.Topic = n
				p := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
				p.StartOffset = 0
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		{92, "DeleteShareGroupOffsets", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			r.GroupID = "acl-sg3"
			for _, n := range []string{aclTopic, aclSecret} {
				t := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
				t.Topic = n
				r.Topics = append(r.Topics, t)
			}
			return r
		}},
		// The share coordinator's RPCs: CLUSTER_ACTION on the cluster.
		// (Of a group with no state: a group a member joined above has its
		// share-partitions initialized by its coordinator, Kafka's in the
		// background, so its state may or may not be there yet.)
		{84, "ReadShareGroupState of an unknown group", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateRequest()
			r.GroupID = "acl-no-such-share-group"
			rt := kmsg.NewReadShareGroupStateRequestTopic()
			rt.TopicID = ids[aclTopic]
			rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
			rp.LeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{87, "ReadShareGroupStateSummary", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			r.GroupID = aclGroup
			rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
			rt.TopicID = ids[aclTopic]
			rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
			rp.LeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{83, "InitializeShareGroupState with an empty group id", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrInitializeShareGroupStateRequest()
			rt := kmsg.NewInitializeShareGroupStateRequestTopic()
			rt.TopicID = ids[aclTopic]
			rt.Partitions = append(rt.Partitions, kmsg.NewInitializeShareGroupStateRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{85, "WriteShareGroupState with an empty group id", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrWriteShareGroupStateRequest()
			rt := kmsg.NewWriteShareGroupStateRequestTopic()
			rt.TopicID = ids[aclTopic]
			rt.Partitions = append(rt.Partitions, kmsg.NewWriteShareGroupStateRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{86, "DeleteShareGroupState of an unknown group", func(ids topicIDs) kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupStateRequest()
			r.GroupID = "acl-no-such-share-group"
			rt := kmsg.NewDeleteShareGroupStateRequestTopic()
			rt.TopicID = ids[aclTopic]
			rt.Partitions = append(rt.Partitions, kmsg.NewDeleteShareGroupStateRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{42, "DeleteGroups", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{aclGroup, "secret-g"}
			return r
		}},
		{20, "DeleteTopics", func(topicIDs) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TopicNames = []string{aclNew, aclSecret}
			for _, n := range []string{aclNew, aclSecret} {
				t := kmsg.NewDeleteTopicsRequestTopic()
				t.Topic = kmsg.StringPtr(n)
				r.Topics = append(r.Topics, t)
			}
			r.TimeoutMillis = 10000
			return r
		}},
	}
}

func cgJoin(topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group = "acl-cg"
	r.MemberID = "acl-cg-member-000000000"
	r.MemberEpoch = 0
	r.RebalanceTimeoutMillis = 30000
	r.SubscribedTopicNames = topics
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{} // joining: empty, not null
	return r
}

func sgJoin(group string, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID = group
	r.MemberID = "acl-sg-member-000000001"
	r.MemberEpoch = 0
	r.SubscribedTopicNames = topics
	return r
}
