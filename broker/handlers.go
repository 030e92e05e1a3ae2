package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
)

// handlerFunc handles one request. It runs on the connection's read
// goroutine and must complete x exactly once, now or later.
type handlerFunc func(c *conn, x *exchange)

type handler struct {
	versions protocol.VersionRange
	fn       handlerFunc
}

// handlerTable maps API keys to their handler and served versions: the one
// source of truth from which ApiVersions is answered.
type handlerTable map[int16]handler

// newHandlerTable registers every API the broker serves, each with the version
// range Apache Kafka 4.x serves (protocol.KafkaVersions) capped to what the
// handler implements.
func newHandlerTable() handlerTable {
	t := handlerTable{}
	reg := func(key kmsg.Key, maxImpl int16, fn handlerFunc) {
		vr, ok := protocol.KafkaVersions[int16(key)]
		if !ok {
			panic("broker: no Kafka version range for " + key.Name())
		}
		if vr.Max > maxImpl {
			vr.Max = maxImpl
		}
		t[int16(key)] = handler{versions: vr, fn: fn}
	}
	reg(kmsg.ApiVersions, 4, handleApiVersions)
	reg(kmsg.Metadata, 13, handleMetadata)
	reg(kmsg.Produce, 12, handleProduce)
	reg(kmsg.Fetch, 17, handleFetch)
	reg(kmsg.ListOffsets, 9, handleListOffsets)
	reg(kmsg.CreateTopics, 7, handleCreateTopics)
	reg(kmsg.DeleteTopics, 6, handleDeleteTopics)
	reg(kmsg.DeleteRecords, 2, handleDeleteRecords)
	reg(kmsg.CreatePartitions, 3, handleCreatePartitions)
	reg(kmsg.ElectLeaders, 2, handleElectLeaders)
	reg(kmsg.InitProducerID, 5, newInitProducerIDHandler())
	reg(kmsg.FindCoordinator, 6, handleFindCoordinator)
	reg(kmsg.AddPartitionsToTxn, 5, handleAddPartitionsToTxn)
	reg(kmsg.AddOffsetsToTxn, 4, handleAddOffsetsToTxn)
	reg(kmsg.EndTxn, 5, handleEndTxn)
	reg(kmsg.TxnOffsetCommit, 5, handleTxnOffsetCommit)
	reg(kmsg.WriteTxnMarkers, 1, handleWriteTxnMarkers)
	reg(kmsg.DescribeProducers, 0, handleDescribeProducers)
	reg(kmsg.DescribeTransactions, 0, handleDescribeTransactions)
	reg(kmsg.ListTransactions, 1, handleListTransactions)
	reg(kmsg.JoinGroup, 9, handleJoinGroup)
	reg(kmsg.SyncGroup, 5, handleSyncGroup)
	reg(kmsg.Heartbeat, 4, handleHeartbeat)
	reg(kmsg.LeaveGroup, 5, handleLeaveGroup)
	reg(kmsg.OffsetCommit, 9, handleOffsetCommit)
	reg(kmsg.OffsetFetch, 9, handleOffsetFetch)
	reg(kmsg.OffsetDelete, 0, handleOffsetDelete)
	reg(kmsg.ListGroups, 5, handleListGroups)
	reg(kmsg.DescribeGroups, 6, handleDescribeGroups)
	reg(kmsg.DeleteGroups, 2, handleDeleteGroups)
	reg(kmsg.ConsumerGroupHeartbeat, 1, handleConsumerGroupHeartbeat)
	reg(kmsg.ConsumerGroupDescribe, 1, handleConsumerGroupDescribe)
	reg(kmsg.DescribeConfigs, 4, handleDescribeConfigs)
	reg(kmsg.AlterConfigs, 2, handleAlterConfigs)
	reg(kmsg.IncrementalAlterConfigs, 1, handleIncrementalAlterConfigs)
	reg(kmsg.DescribeCluster, 2, handleDescribeCluster)
	reg(kmsg.DescribeTopicPartitions, 0, handleDescribeTopicPartitions)
	reg(kmsg.DescribeLogDirs, 4, handleDescribeLogDirs)
	reg(kmsg.OffsetForLeaderEpoch, 4, handleOffsetForLeaderEpoch)
	reg(kmsg.AlterPartitionAssignments, 1, handleAlterPartitionReassignments)
	reg(kmsg.ListPartitionReassignments, 0, handleListPartitionReassignments)
	return t
}

func (t handlerTable) versionTable() protocol.VersionTable {
	vt := make(protocol.VersionTable, len(t))
	for k, h := range t {
		vt[k] = h.versions
	}
	return vt
}

// ApiVersions: every API in the handler table with its served range; the
// protocol package encodes the v0 fallback for versions we do not know.
// Every connection opens with one, so the frames are encoded once per
// version (protocol.ApiVersionsFrames).
func handleApiVersions(c *conn, x *exchange) {
	buf := frames.Get().(*[]byte)
	x.frame = c.srv.apiVersions.AppendResponse((*buf)[:0], x.req)
	x.pooled = buf
	x.c.complete(x, true)
}
