package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
)

// BenchmarkMetadataAllTopics100kPartitions: building and encoding the
// answer to a Metadata request for every topic (v12) when the cluster has
// 100,000 partitions (RF 3 over brokers 1-3), as few topics of many
// partitions and as many topics of one. Each should cost about the same
// per partition (issue 22: no quadratic work).
//
//	go test -run '^$' -bench MetadataAllTopics -benchmem ./broker/
func BenchmarkMetadataAllTopics100kPartitions(b *testing.B) {
	for _, sh := range []struct{ topics, parts int }{{100_000, 1}, {100, 1000}, {10, 10_000}} {
		b.Run(fmt.Sprintf("%dx%d", sh.topics, sh.parts), func(b *testing.B) {
			topics := make([]controller.TopicInfo, sh.topics)
			for i := range topics {
				t := controller.TopicInfo{Name: fmt.Sprintf("topic-%06d", i), ID: [16]byte{byte(i), byte(i >> 8), byte(i >> 16), 1}}
				for p := range sh.parts {
					r := []int32{int32(1 + p%3), int32(1 + (p+1)%3), int32(1 + (p+2)%3)}
					t.Partitions = append(t.Partitions, controller.PartitionInfo{Partition: int32(p), Replicas: r,
						Leader: r[0], LeaderEpoch: 3, ISR: r, PartitionEpoch: 5})
				}
				topics[i] = t
			}
			live := map[int32]bool{1: true, 2: true, 3: true}
			var buf []byte
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				resp := kmsg.NewPtrMetadataResponse()
				resp.SetVersion(12)
				resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(topics))
				for _, t := range topics {
					resp.Topics = append(resp.Topics, topicMetadata(t, live, 12))
				}
				buf = resp.AppendTo(buf[:0])
			}
			b.ReportMetric(float64(len(buf)), "response-bytes")
		})
	}
}
