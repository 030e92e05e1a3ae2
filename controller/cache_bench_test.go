package controller

import (
	"encoding/binary"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The watch cache at 100,000 partitions (issue 22): what applying one
// change costs with that many partitions present, as many topics of few
// partitions or few topics of many. Neither may grow with what did not
// change.
//
//	go test -run '^$' -bench 'Cache' -benchmem ./controller/

// scaleKVs is topics topics of parts partitions each, every partition on
// brokers 1-3, at revision 2.
func scaleKVs(topics, parts int) []*mvccpb.KeyValue {
	kvs := make([]*mvccpb.KeyValue, 0, topics*(parts+1))
	for i := range topics {
		name := fmt.Sprintf("topic-%06d", i)
		kvs = append(kvs, scaleTopicKV(name, uint64(i+1), 2))
		for p := range parts {
			kvs = append(kvs, scalePartitionKV(name, int32(p), 1, 2))
		}
	}
	return kvs
}

func scaleTopicKV(name string, id uint64, rev int64) *mvccpb.KeyValue {
	t := &TopicInfo{Name: name}
	binary.BigEndian.PutUint64(t.ID[8:], id)
	t.ID[0] = byte(id)
	return &mvccpb.KeyValue{Key: []byte(testKS.topic(name)), Value: []byte(encodeTopic(t)), ModRevision: rev, CreateRevision: rev}
}

func scalePartitionKV(name string, p, leader int32, rev int64) *mvccpb.KeyValue {
	v := encodePartition(PartitionInfo{Replicas: []int32{1, 2, 3}, Leader: leader, LeaderEpoch: int32(rev), ISR: []int32{1, 2, 3}})
	return &mvccpb.KeyValue{Key: []byte(testKS.partition(name, p)), Value: []byte(v), ModRevision: rev, CreateRevision: rev}
}

var scaleShapes = []struct {
	name          string
	topics, parts int
}{
	{"100000x1", 100_000, 1},
	{"100x1000", 100, 1000},
	{"10x10000", 10, 10_000},
}

// BenchmarkCacheApplyTopicCreation: one revision creating a topic of 10
// partitions, with 100,000 partitions present; a listener is called as the
// replica manager's would be.
func BenchmarkCacheApplyTopicCreation(b *testing.B) {
	for _, sh := range scaleShapes {
		b.Run(sh.name, func(b *testing.B) {
			c := newMetadataCache(testKS, testLogger())
			c.listen(func(TopicChange) {})
			c.load(scaleKVs(sh.topics, sh.parts), 2)
			rev := int64(3)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				name := fmt.Sprintf("new-%d", i)
				evs := []*clientv3.Event{{Type: clientv3.EventTypePut, Kv: scaleTopicKV(name, uint64(1<<32+i), rev)}}
				for p := range int32(10) {
					evs = append(evs, &clientv3.Event{Type: clientv3.EventTypePut, Kv: scalePartitionKV(name, p, 1, rev)})
				}
				c.applyRevision(rev, evs)
				rev++
			}
		})
	}
}

// BenchmarkCacheApplyLeaderChange: one revision changing one partition's
// leader (a failover is thousands of these), with 100,000 partitions present.
func BenchmarkCacheApplyLeaderChange(b *testing.B) {
	for _, sh := range scaleShapes {
		b.Run(sh.name, func(b *testing.B) {
			c := newMetadataCache(testKS, testLogger())
			c.listen(func(TopicChange) {})
			c.load(scaleKVs(sh.topics, sh.parts), 2)
			rev := int64(3)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				name := fmt.Sprintf("topic-%06d", i%sh.topics)
				kv := scalePartitionKV(name, int32(i%sh.parts), int32(1+i%3), rev)
				c.applyRevision(rev, []*clientv3.Event{{Type: clientv3.EventTypePut, Kv: kv}})
				rev++
			}
		})
	}
}
