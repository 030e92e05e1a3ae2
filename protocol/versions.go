package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// VersionRange is what the broker answers for one API key.
type VersionRange struct {
	Min int16 // advertised minimum in ApiVersions
	Max int16
	// MinAccepted is the lowest version actually served (Produce: advertised from
	// 0 for librdkafka, served from 3). Zero means Min.
	MinAccepted int16
}

// acceptedMin is the lowest version ParseRequest lets through.
func (r VersionRange) acceptedMin() int16 {
	if r.MinAccepted > r.Min {
		return r.MinAccepted
	}
	return r.Min
}

// VersionTable maps API key to its served range; the broker builds it from
// its handler registrations (broker/handlers.go), the one place Strait's
// ranges are written, and ApiVersions answers from it.
type VersionTable map[int16]VersionRange

// KafkaVersions is what an Apache Kafka 4.4 broker listener advertises in
// ApiVersions (after KIP-896 removed the old versions) for the keys Strait
// serves or is about to: reference data, not what Strait serves. The broker
// checks each handler registration against it (Strait never advertises a
// version Kafka does not), and tests use it as a full table. Treat it as
// read-only.
//
// Source: the validVersions of clients/src/main/resources/common/message/*.json
// at the 4.4 tag, as recorded in franz-go's kversion.V4_4_0 (b44); the
// broker's TestApiVersionsMatchKafka44 compares the served table with
// kversion key by key. Keys only a controller listener serves (AlterPartition,
// Envelope, BrokerRegistration, BrokerHeartbeat, AllocateProducerIds, Vote,
// BeginQuorumEpoch, UpdateRaftVoter, ...) are not listed.
var KafkaVersions = VersionTable{
	0:  {Min: 0, Max: 13, MinAccepted: 3}, // Produce: v0-2 advertised for librdkafka (KAFKA-18659), refused; v13: topic ids (KIP-516, 4.1)
	1:  {Min: 4, Max: 18},                 // Fetch (v18: the follower's high watermark, KIP-1166, 4.1)
	2:  {Min: 1, Max: 11},                 // ListOffsets (v10: KIP-1075, 4.0; v11: KIP-1023, 4.2)
	3:  {Min: 0, Max: 13},                 // Metadata
	8:  {Min: 2, Max: 10},                 // OffsetCommit (v10: topic ids, 4.2)
	9:  {Min: 1, Max: 10},                 // OffsetFetch (v10: topic ids, 4.2)
	10: {Min: 0, Max: 6},                  // FindCoordinator
	11: {Min: 0, Max: 9},                  // JoinGroup (4.1 re-adds v0-1, KAFKA-19444)
	12: {Min: 0, Max: 4},                  // Heartbeat
	13: {Min: 0, Max: 5},                  // LeaveGroup
	14: {Min: 0, Max: 5},                  // SyncGroup
	15: {Min: 0, Max: 6},                  // DescribeGroups
	16: {Min: 0, Max: 5},                  // ListGroups
	17: {Min: 0, Max: 1},                  // SaslHandshake
	18: {Min: 0, Max: 5},                  // ApiVersions (v5: cluster and node id, KIP-1242, 4.4)
	19: {Min: 2, Max: 7},                  // CreateTopics
	20: {Min: 1, Max: 6},                  // DeleteTopics
	21: {Min: 0, Max: 2},                  // DeleteRecords
	22: {Min: 0, Max: 5},                  // InitProducerId
	23: {Min: 2, Max: 4},                  // OffsetForLeaderEpoch
	24: {Min: 0, Max: 5},                  // AddPartitionsToTxn
	25: {Min: 0, Max: 4},                  // AddOffsetsToTxn
	26: {Min: 0, Max: 5},                  // EndTxn
	27: {Min: 1, Max: 2},                  // WriteTxnMarkers (v2: TransactionVersion, KIP-1228, 4.2)
	28: {Min: 0, Max: 6},                  // TxnOffsetCommit (v6: topic ids, KIP-1319, 4.4)
	29: {Min: 1, Max: 3},                  // DescribeAcls
	30: {Min: 1, Max: 3},                  // CreateAcls
	31: {Min: 1, Max: 3},                  // DeleteAcls
	32: {Min: 1, Max: 4},                  // DescribeConfigs
	33: {Min: 0, Max: 2},                  // AlterConfigs
	34: {Min: 1, Max: 2},                  // AlterReplicaLogDirs
	35: {Min: 1, Max: 5},                  // DescribeLogDirs (v5: IsCordoned, KIP-1066, 4.3)
	36: {Min: 0, Max: 2},                  // SaslAuthenticate
	37: {Min: 0, Max: 3},                  // CreatePartitions
	38: {Min: 1, Max: 3},                  // CreateDelegationToken
	39: {Min: 1, Max: 2},                  // RenewDelegationToken
	40: {Min: 1, Max: 2},                  // ExpireDelegationToken
	41: {Min: 1, Max: 3},                  // DescribeDelegationToken
	42: {Min: 0, Max: 3},                  // DeleteGroups (v3: ErrorMessage, KIP-1331, 4.4)
	43: {Min: 0, Max: 2},                  // ElectLeaders
	44: {Min: 0, Max: 1},                  // IncrementalAlterConfigs
	45: {Min: 0, Max: 1},                  // AlterPartitionAssignments (v1: KIP-860, 4.1)
	46: {Min: 0, Max: 0},                  // ListPartitionReassignments
	47: {Min: 0, Max: 0},                  // OffsetDelete
	48: {Min: 0, Max: 1},                  // DescribeClientQuotas
	49: {Min: 0, Max: 1},                  // AlterClientQuotas
	50: {Min: 0, Max: 0},                  // DescribeUserScramCredentials
	51: {Min: 0, Max: 0},                  // AlterUserScramCredentials
	55: {Min: 0, Max: 2},                  // DescribeQuorum
	57: {Min: 0, Max: 2},                  // UpdateFeatures
	60: {Min: 0, Max: 2},                  // DescribeCluster
	61: {Min: 0, Max: 0},                  // DescribeProducers
	64: {Min: 0, Max: 0},                  // UnregisterBroker
	65: {Min: 0, Max: 0},                  // DescribeTransactions
	66: {Min: 0, Max: 2},                  // ListTransactions (v2: transactional id pattern, KIP-1152, 4.1)
	68: {Min: 0, Max: 1},                  // ConsumerGroupHeartbeat
	69: {Min: 0, Max: 1},                  // ConsumerGroupDescribe
	71: {Min: 0, Max: 0},                  // GetTelemetrySubscriptions (only when telemetry is configured)
	72: {Min: 0, Max: 0},                  // PushTelemetry (only when telemetry is configured)
	74: {Min: 0, Max: 1},                  // ListConfigResources (v0: ListClientMetricsResources; v1: KIP-1142, 4.1)
	75: {Min: 0, Max: 0},                  // DescribeTopicPartitions
	76: {Min: 1, Max: 1},                  // ShareGroupHeartbeat (KIP-932: 4.1 released v1 only)
	77: {Min: 1, Max: 1},                  // ShareGroupDescribe
	78: {Min: 1, Max: 2},                  // ShareFetch (v2: KIP-1206, KIP-1222, 4.2)
	79: {Min: 1, Max: 2},                  // ShareAcknowledge (v2: KIP-1222, 4.2)
	80: {Min: 0, Max: 1},                  // AddRaftVoter (v1: KIP-1186, 4.2)
	81: {Min: 0, Max: 0},                  // RemoveRaftVoter
	83: {Min: 0, Max: 0},                  // InitializeShareGroupState (KIP-932, broker to share coordinator)
	84: {Min: 0, Max: 0},                  // ReadShareGroupState
	85: {Min: 0, Max: 1},                  // WriteShareGroupState (v1: KIP-1226, 4.2)
	86: {Min: 0, Max: 0},                  // DeleteShareGroupState
	87: {Min: 0, Max: 1},                  // ReadShareGroupStateSummary (v1: KIP-1226, 4.2)
	88: {Min: 0, Max: 1},                  // StreamsGroupHeartbeat (KIP-1071, 4.2; v1: KIP-1331, 4.4)
	89: {Min: 0, Max: 1},                  // StreamsGroupDescribe (KIP-1071, 4.2; v1: KIP-1331, 4.4)
	90: {Min: 0, Max: 1},                  // DescribeShareGroupOffsets (v1: KIP-1226, 4.2)
	91: {Min: 0, Max: 0},                  // AlterShareGroupOffsets
	92: {Min: 0, Max: 0},                  // DeleteShareGroupOffsets
	93: {Min: 0, Max: 0},                  // StreamsGroupTopologyDescriptionUpdate (KIP-1331, 4.4)
	94: {Min: 0, Max: 0},                  // UnregisterController (KIP-1312, 4.4)
}

// decodableRange returns the range of key in table, with Max capped at the
// highest version kmsg can decode, and whether the key is served at all.
func decodableRange(table VersionTable, key int16) (VersionRange, kmsg.Request, bool) {
	vr, ok := table[key]
	if !ok {
		return VersionRange{}, nil, false
	}
	body := kmsg.RequestForKey(key)
	if body == nil {
		return VersionRange{}, nil, false
	}
	if m := body.MaxVersion(); vr.Max > m {
		vr.Max = m
	}
	return vr, body, true
}
