package broker

// OffsetForLeaderEpoch (key 23), versions 2-4 (v0-1 were removed in Kafka 4).
//
// For a partition this broker leads, the end offset of the requested leader
// epoch: the start offset of the first later epoch, with the largest epoch at
// or below the requested one (Kafka's LeaderEpochFileCache.endOffsetFor). The
// current epoch ends at the log end offset; an epoch above it is unknown
// (-1, -1). Consumers ask after a leader change, to detect a truncated log.
//
// Storage keeps no leader-epoch-checkpoint file yet, so the epochs come from
// the log itself: every batch carries the leader epoch it was appended in,
// epochs never decrease along the log, and a binary search over batch headers
// (Log.Read of one batch) finds where an epoch ends in O(log n) reads. This
// is the cache Kafka would have, truncated at the log start offset. An epoch
// a leader held without appending anything is invisible in the log, exactly
// as Kafka's cache drops an epoch whose successor starts at the same offset.
//
// current_leader_epoch (-1: not checked) older than the partition's is
// FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH; a partition led elsewhere
// NOT_LEADER_OR_FOLLOWER; a missing one UNKNOWN_TOPIC_OR_PARTITION. Replica
// id -2 (debugging) may ask any replica.

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/storage"
)

// debuggingReplicaID may read from followers (ListOffsetsRequest.DEBUGGING_REPLICA_ID).
const debuggingReplicaID = -2

func handleOffsetForLeaderEpoch(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		lt := s.parts.topicByName(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			p := lt.partition(rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = s.missingPartitionCode(rt.Topic, rp.Partition)
			case req.ReplicaID == debuggingReplicaID && rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch != p.leaderEpoch():
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
				if rp.CurrentLeaderEpoch > p.leaderEpoch() {
					sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
				}
			case req.ReplicaID != debuggingReplicaID && checkLeader(p, s.cfg.NodeID, rp.CurrentLeaderEpoch) != 0:
				sp.ErrorCode = checkLeader(p, s.cfg.NodeID, rp.CurrentLeaderEpoch)
			default:
				epoch, end, err := endOffsetForEpoch(p.log, p.leaderEpoch(), rp.LeaderEpoch)
				if err != nil {
					s.logger.Warn("reading leader epochs", "topic", rt.Topic, "partition", rp.Partition, "err", err)
					sp.ErrorCode = kerr.KafkaStorageError.Code
					break
				}
				sp.LeaderEpoch, sp.EndOffset = epoch, end
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	x.respond(resp)
}

// endOffsetForEpoch is LeaderEpochFileCache.endOffsetFor over the epochs
// recorded in the log's batches, current being the partition's leader epoch.
// It returns (-1, -1) for an unknown epoch.
func endOffsetForEpoch(log *storage.Log, current, requested int32) (int32, int64, error) {
	switch {
	case requested < 0 || requested > current:
		return -1, -1, nil
	case requested == current:
		return requested, log.LogEndOffset(), nil
	}
	// The first batch whose epoch is above requested: its base offset ends
	// the requested epoch (the log end offset if there is none: the
	// current epoch, above requested, starts there). The batch just before
	// it carries the largest epoch at or below requested.
	lo, hi := log.LogStartOffset(), log.LogEndOffset()
	end := hi
	floor := int32(-1)
	for lo < hi {
		mid := lo + (hi-lo)/2
		b, ok, err := batchAt(log, mid)
		if err != nil {
			return -1, -1, err
		}
		if !ok { // nothing from mid on (truncated meanwhile)
			hi = mid
			continue
		}
		if b.epoch > requested {
			end = min(end, b.base)
			hi = min(b.base, mid) // [mid, b.base) holds no batch
		} else {
			lo = b.last + 1
			if b.epoch >= 0 { // -1: appended by a broker that did not set it
				floor = b.epoch
			}
		}
	}
	// Kafka's cache moves an epoch that began before the log start offset
	// up to it.
	end = max(end, log.LogStartOffset())
	if floor < 0 {
		// Nothing at or below requested is left (before the log start
		// offset, or never written): Kafka answers with the requested
		// epoch and the start of the next one.
		return requested, end, nil
	}
	return floor, end, nil
}

// batchSpan is a batch's offsets and leader epoch.
type batchSpan struct {
	base, last int64
	epoch      int32
}

// batchAt reads the header of the batch containing offset (or the first
// batch after it, across a compacted gap); ok is false past the last batch.
func batchAt(log *storage.Log, offset int64) (batchSpan, bool, error) {
	res, err := log.Read(offset, 1, log.LogEndOffset(), true)
	if err != nil {
		return batchSpan{}, false, err
	}
	if len(res.Slices) == 0 || res.Slices[0].Len < 27 {
		return batchSpan{}, false, nil
	}
	// baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
	// magic int8, crc uint32, attributes int16, lastOffsetDelta int32.
	var h [27]byte
	sl := res.Slices[0]
	if _, err := sl.File.ReadAt(h[:], sl.Pos); err != nil {
		return batchSpan{}, false, err
	}
	base := int64(binary.BigEndian.Uint64(h[0:8]))
	return batchSpan{
		base:  base,
		last:  base + int64(int32(binary.BigEndian.Uint32(h[23:27]))),
		epoch: int32(binary.BigEndian.Uint32(h[12:16])),
	}, true, nil
}
