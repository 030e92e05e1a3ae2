package reference

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The replay's rewrites without brokers: values learned from a recorded
// and a live answer replace the recorded ones in later requests (member
// epochs per group, OffsetCommit's generation paired with them, cluster ids
// behind pointers), never the values that mean "none"; record batches get
// the live producer id and moved timestamps under a valid CRC.
func TestReplayRewrites(t *testing.T) {
	rw := newRewriter(time.Hour)

	hbReq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hbReq.Group = "g"
	recHB, live := kmsg.NewPtrConsumerGroupHeartbeatResponse(), kmsg.NewPtrConsumerGroupHeartbeatResponse()
	recHB.MemberEpoch, live.MemberEpoch = 2, 1
	rw.learn(scopeOf(hbReq), recHB, live)

	other := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	other.Group, other.MemberEpoch = "h", 2
	rw.rewrite(other)
	if other.MemberEpoch != 2 {
		t.Errorf("another group's epoch was rewritten to %d", other.MemberEpoch)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", 2
	rw.rewrite(commit)
	if commit.Generation != 1 {
		t.Errorf("OffsetCommit's generation: %d, want the live epoch 1", commit.Generation)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group, fg.MemberEpoch = "g", 2
	fetch.Groups = append(fetch.Groups, fg)
	rw.rewrite(fetch)
	if fetch.Groups[0].MemberEpoch != 1 {
		t.Errorf("OffsetFetch's group epoch: %d, want 1 (the group named in the list)", fetch.Groups[0].MemberEpoch)
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberEpoch = "g", -1
	rw.rewrite(leave)
	if leave.MemberEpoch != -1 {
		t.Errorf("a leaving member's epoch -1 was rewritten to %d", leave.MemberEpoch)
	}

	recMeta, liveMeta := kmsg.NewPtrMetadataResponse(), kmsg.NewPtrMetadataResponse()
	a, b := "recorded-cluster", "live-cluster"
	recMeta.ClusterID, liveMeta.ClusterID = &a, &b
	rw.learn("", recMeta, liveMeta)
	av := kmsg.NewPtrApiVersionsRequest()
	c := "recorded-cluster"
	av.ClusterID = &c
	rw.rewrite(av)
	if av.ClusterID == nil || *av.ClusterID != "live-cluster" {
		t.Errorf("ApiVersions' cluster id: %v", av.ClusterID)
	}

	recInit, liveInit := kmsg.NewPtrInitProducerIDResponse(), kmsg.NewPtrInitProducerIDResponse()
	recInit.ProducerID, liveInit.ProducerID = 7, 4000
	rw.learn("", recInit, liveInit)
	raw := batch([]rec{{key: []byte("k"), value: []byte("v"), ts: 1_000_000}})
	binary.BigEndian.PutUint64(raw[43:], 7)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	produce := kmsg.NewPtrProduceRequest()
	pt := kmsg.NewProduceRequestTopic()
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = raw
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	rw.rewrite(produce)
	var got kmsg.RecordBatch
	out := produce.Topics[0].Partitions[0].Records
	if err := got.ReadFrom(out); err != nil {
		t.Fatal(err)
	}
	if got.ProducerID != 4000 || got.FirstTimestamp != 1_000_000+3_600_000 || got.MaxTimestamp != got.FirstTimestamp {
		t.Errorf("rewritten batch: producer %d, timestamps %d %d", got.ProducerID, got.FirstTimestamp, got.MaxTimestamp)
	}
	if crc := binary.BigEndian.Uint32(out[17:]); crc != crc32.Checksum(out[21:], castagnoli) {
		t.Errorf("the rewritten batch's CRC does not match")
	}
	if binary.BigEndian.Uint64(raw[43:]) != 7 {
		t.Errorf("the recorded batch itself was changed")
	}
}
