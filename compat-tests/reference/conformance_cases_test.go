package reference

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The scripted sequences of the conformance harness. A scenario's steps run
// in order, each sent to Kafka and then to Strait; the scenario is run once
// per version (iteration i sends every key at min(its lowest version + i,
// its highest)), with names of its own per iteration (t.name). A step's
// keep records what later steps need (ids, member ids, epochs) from that
// broker's own answer.

type step struct {
	path       string // the case: "ok", "unknown topic", ...
	minVersion int16  // not sent below this version (a field the path needs)
	version    int16  // sent at this version only (clamped to what both serve)
	eventually bool   // reads what Kafka applies asynchronously: Kafka is asked again until it agrees (2 s)
	req        func(t *target) kmsg.Request
	keep       func(t *target, r kmsg.Response)
}

type scenario struct {
	name  string
	once  bool // setup: run once, at each key's lowest version
	steps []step
}

const (
	cfTopic   = "cf-t" // two batches of three records, read by Fetch, ListOffsets, ...
	cfProduce = "cf-p" // produced to by every Produce version
	cfDelete  = "cf-d" // DeleteRecords
	cfAlter   = "cf-a" // AlterConfigs and IncrementalAlterConfigs
)

// baseTS: the records' timestamps, recent so that retention (7 days) keeps
// them on both brokers.
var baseTS = time.Now().Add(-time.Hour).UnixMilli()

// The records both brokers get, byte for byte.
var (
	cfBatch1 = batch([]rec{{[]byte("k0"), []byte("v0"), baseTS}, {[]byte("k1"), []byte("v1"), baseTS + 1}, {[]byte("k2"), nil, baseTS + 2}})
	cfBatch2 = batch([]rec{{[]byte("k3"), []byte("v3"), baseTS + 100}, {[]byte("k4"), []byte("v4"), baseTS + 101}, {[]byte("k5"), []byte("v5"), baseTS + 102}})
)

func createTopicsReq(configs map[string]string, names ...string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.TimeoutMillis = 30000
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = n
			rt.NumPartitions = 1
			rt.ReplicationFactor = 1
			for k, v := range configs {
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name = k
				c.Value = kmsg.StringPtr(v)
				rt.Configs = append(rt.Configs, c)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
}

func metadataReq(names ...string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.Topics = metadataTopics(names...)
		r.AllowAutoTopicCreation = false
		return r
	}
}

// keepIDs records the topic ids and the node id a Metadata answer gives.
func keepIDs(t *target, r kmsg.Response) {
	m := r.(*kmsg.MetadataResponse)
	for _, tp := range m.Topics {
		if tp.Topic != nil {
			t.set("id:"+*tp.Topic, tp.TopicID)
		}
	}
	if len(m.Brokers) > 0 {
		t.set("node", m.Brokers[0].NodeID)
	}
}

func produceReq(topic string, partition int32, records []byte) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrProduceRequest()
		r.Acks = -1
		r.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rt.TopicID = t.id(topic)
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = partition
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func fetchReq(topic string, partition int32, offset int64) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.MaxWaitMillis = 10
		r.MinBytes = 1
		r.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rt.TopicID = t.id(topic)
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = partition
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func listOffsetsReq(topic string, partition int32, ts int64) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = partition
		rp.Timestamp = ts
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func offsetForLeaderEpochReq(topic string, partition, epoch, current int32) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = partition
		rp.LeaderEpoch = epoch
		rp.CurrentLeaderEpoch = current
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func deleteRecordsReq(topic string, partition int32, offset int64) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.TimeoutMillis = 10000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition = partition
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func describeConfigsReq(typ kmsg.ConfigResourceType, name func(*target) string, keys ...string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType = typ
		rr.ResourceName = name(t)
		rr.ConfigNames = keys
		r.Resources = append(r.Resources, rr)
		r.IncludeSynonyms = true
		r.IncludeDocumentation = false
		return r
	}
}

func alterConfigsReq(topic string, validate bool, kv ...string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrAlterConfigsRequest()
		r.ValidateOnly = validate
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeTopic
		rr.ResourceName = topic
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name = kv[i]
			c.Value = kmsg.StringPtr(kv[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		r.Resources = append(r.Resources, rr)
		return r
	}
}

func incrementalAlterReq(topic string, op kmsg.IncrementalAlterConfigOp, name, value string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeTopic
		rr.ResourceName = topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = name
		c.Op = op
		if op != kmsg.IncrementalAlterConfigOpDelete {
			c.Value = kmsg.StringPtr(value)
		}
		rr.Configs = append(rr.Configs, c)
		r.Resources = append(r.Resources, rr)
		return r
	}
}

func findCoordinatorReq(typ int8, key string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorType = typ
		r.CoordinatorKey = key
		r.CoordinatorKeys = []string{key}
		return r
	}
}

func fixed(s string) func(*target) string { return func(*target) string { return s } }

func conformanceScenarios() []scenario {
	return append(append(append([]scenario{
		{name: "setup", once: true, steps: []step{
			{path: "create the topics", req: createTopicsReq(nil, cfTopic, cfProduce, cfDelete, cfAlter, cfIdem, cfTxp)},
			{path: "topic ids", req: metadataReq(cfTopic, cfProduce, cfDelete, cfAlter, cfIdem, cfTxp), keep: keepIDs},
			{path: "first batch", req: produceReq(cfTopic, 0, cfBatch1)},
			{path: "second batch", req: produceReq(cfTopic, 0, cfBatch2)},
			{path: "delete-records batch", req: produceReq(cfDelete, 0, cfBatch1)},
			// Kafka creates __consumer_offsets and __transaction_state
			// on the first FindCoordinator; until then group and
			// transaction requests answer COORDINATOR_NOT_AVAILABLE.
			{path: "group coordinator", req: findCoordinatorReq(0, "cf-fc-group")},
			{path: "transaction coordinator", version: 1, req: findCoordinatorReq(1, "cf-fc-tx")}, // v0 has no key type
			// ... and loads the partitions of __transaction_state a
			// while later: NOT_COORDINATOR until then.
			{path: "transaction coordinator loaded", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionalID = kmsg.StringPtr("cf-tx-warm")
				r.TransactionTimeoutMillis = 60000
				return r
			}},
		}},
		{name: "ApiVersions", steps: []step{
			{path: "ok", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrApiVersionsRequest()
				r.ClientSoftwareName, r.ClientSoftwareVersion = "strait-conformance", "1.0"
				return r
			}},
			{path: "invalid client software name", minVersion: 3, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrApiVersionsRequest()
				r.ClientSoftwareName, r.ClientSoftwareVersion = "bad name!", "1.0"
				return r
			}},
		}},
		{name: "Metadata", steps: []step{
			{path: "named topics", req: metadataReq(cfTopic, cfProduce), keep: keepIDs},
			{path: "unknown topic", req: metadataReq("cf-absent")},
			{path: "all topics", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.Topics = nil
				if r.Version == 0 {
					r.Topics = []kmsg.MetadataRequestTopic{}
				}
				r.AllowAutoTopicCreation = false
				return r
			}},
			{path: "cluster authorized operations", minVersion: 8, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.Topics = metadataTopics(cfTopic)
				r.IncludeClusterAuthorizedOperations = true
				return r
			}},
			{path: "by unknown topic id", minVersion: 10, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				mt := kmsg.NewMetadataRequestTopic()
				mt.TopicID = [16]byte{1, 2, 3}
				r.Topics = append(r.Topics, mt)
				return r
			}},
			{path: "authorized operations", minVersion: 8, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.Topics = metadataTopics(cfTopic)
				r.IncludeTopicAuthorizedOperations = true
				return r
			}},
		}},
		{name: "Produce", steps: []step{
			{path: "ok", req: func(t *target) kmsg.Request { return produceReq(cfProduce, 0, cfBatch1)(t) }},
			{path: "unknown topic", req: produceReq("cf-absent", 0, cfBatch1)},
			{path: "bad partition", req: produceReq(cfProduce, 7, cfBatch1)},
			{path: "corrupt batch", req: func(t *target) kmsg.Request {
				b := append([]byte(nil), cfBatch2...)
				b[len(b)-1] ^= 0xff // the CRC no longer matches
				return produceReq(cfProduce, 0, b)(t)
			}},
			{path: "acks 2", req: func(t *target) kmsg.Request {
				r := produceReq(cfProduce, 0, cfBatch2)(t).(*kmsg.ProduceRequest)
				r.Acks = 2
				return r
			}},
		}},
		{name: "Fetch", steps: []step{
			{path: "from 0", req: fetchReq(cfTopic, 0, 0)},
			{path: "from the middle of a batch", req: fetchReq(cfTopic, 0, 4)},
			{path: "at the end", req: func(t *target) kmsg.Request {
				r := fetchReq(cfTopic, 0, 6)(t).(*kmsg.FetchRequest)
				r.MinBytes = 0
				r.MaxWaitMillis = 0
				return r
			}},
			{path: "offset out of range", req: fetchReq(cfTopic, 0, 1000)},
			{path: "unknown topic", req: fetchReq("cf-absent", 0, 0)},
			{path: "bad partition", req: fetchReq(cfTopic, 9, 0)},
			{path: "read committed", minVersion: 4, req: func(t *target) kmsg.Request {
				r := fetchReq(cfTopic, 0, 0)(t).(*kmsg.FetchRequest)
				r.IsolationLevel = 1
				return r
			}},
		}},
		{name: "ListOffsets", steps: []step{
			{path: "earliest", req: listOffsetsReq(cfTopic, 0, -2)},
			{path: "latest", req: listOffsetsReq(cfTopic, 0, -1)},
			{path: "by timestamp", req: listOffsetsReq(cfTopic, 0, baseTS+50)},
			{path: "timestamp after the last", req: listOffsetsReq(cfTopic, 0, baseTS+10_000)},
			{path: "max timestamp", minVersion: 7, req: listOffsetsReq(cfTopic, 0, -3)},
			{path: "earliest local", minVersion: 8, req: listOffsetsReq(cfTopic, 0, -4)},
			{path: "latest tiered", minVersion: 9, req: listOffsetsReq(cfTopic, 0, -5)},
			{path: "unknown topic", req: listOffsetsReq("cf-absent", 0, -1)},
			{path: "bad partition", req: listOffsetsReq(cfTopic, 5, -1)},
			{path: "fenced leader epoch", minVersion: 4, req: func(t *target) kmsg.Request {
				r := listOffsetsReq(cfTopic, 0, -1)(t).(*kmsg.ListOffsetsRequest)
				r.Topics[0].Partitions[0].CurrentLeaderEpoch = 99
				return r
			}},
		}},
		{name: "OffsetForLeaderEpoch", steps: []step{
			{path: "epoch 0", req: offsetForLeaderEpochReq(cfTopic, 0, 0, -1)},
			{path: "future epoch", req: offsetForLeaderEpochReq(cfTopic, 0, 5, -1)},
			{path: "fenced current epoch", req: offsetForLeaderEpochReq(cfTopic, 0, 0, 99)},
			{path: "unknown topic", req: offsetForLeaderEpochReq("cf-absent", 0, 0, -1)},
		}},
		{name: "DeleteRecords", steps: []step{
			{path: "below the high watermark", req: func(t *target) kmsg.Request { return deleteRecordsReq(cfDelete, 0, int64(min(t.i, 2)))(t) }},
			{path: "beyond the high watermark", req: deleteRecordsReq(cfDelete, 0, 100)},
			{path: "to the high watermark", req: deleteRecordsReq(cfDelete, 0, -1)},
			{path: "unknown topic", req: deleteRecordsReq("cf-absent", 0, 0)},
			{path: "bad partition", req: deleteRecordsReq(cfDelete, 4, 0)},
		}},
	}, topicScenarios()...), groupScenarios()...), append(append(otherScenarios(), producerScenarios()...), newerScenarios()...)...)
}

func topicScenarios() []scenario {
	return []scenario{
		{name: "CreateTopics", steps: []step{
			{path: "ok", req: func(t *target) kmsg.Request {
				return createTopicsReq(map[string]string{"retention.ms": "3600000"}, t.name("cf-c"))(t)
			}},
			{path: "already exists", req: createTopicsReq(nil, cfTopic)},
			{path: "invalid config value", req: func(t *target) kmsg.Request {
				return createTopicsReq(map[string]string{"retention.ms": "soon"}, t.name("cf-cbad"))(t)
			}},
			{path: "unknown config", req: func(t *target) kmsg.Request {
				return createTopicsReq(map[string]string{"no.such.config": "1"}, t.name("cf-cbad"))(t)
			}},
			{path: "invalid name", req: createTopicsReq(nil, "bad name!")},
			{path: "replication factor above the brokers", req: func(t *target) kmsg.Request {
				r := createTopicsReq(nil, t.name("cf-cbad"))(t).(*kmsg.CreateTopicsRequest)
				r.Topics[0].ReplicationFactor = 3
				return r
			}},
			{path: "zero partitions", req: func(t *target) kmsg.Request {
				r := createTopicsReq(nil, t.name("cf-cbad"))(t).(*kmsg.CreateTopicsRequest)
				r.Topics[0].NumPartitions = 0
				return r
			}},
			{path: "validate only", req: func(t *target) kmsg.Request {
				r := createTopicsReq(nil, t.name("cf-cv"))(t).(*kmsg.CreateTopicsRequest)
				r.ValidateOnly = true
				return r
			}},
			{path: "assignment to an unknown broker", req: func(t *target) kmsg.Request {
				r := createTopicsReq(nil, t.name("cf-cbad"))(t).(*kmsg.CreateTopicsRequest)
				r.Topics[0].NumPartitions, r.Topics[0].ReplicationFactor = -1, -1
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = 0, []int32{77}
				r.Topics[0].ReplicaAssignment = append(r.Topics[0].ReplicaAssignment, a)
				return r
			}},
			{path: "duplicate in one request", req: func(t *target) kmsg.Request {
				return createTopicsReq(nil, t.name("cf-cdup"), t.name("cf-cdup"))(t)
			}},
		}},
		{name: "CreatePartitions", steps: []step{
			{path: "setup topic", req: func(t *target) kmsg.Request { return createTopicsReq(nil, t.name("cf-cp"))(t) }},
			{path: "grow to 2", req: func(t *target) kmsg.Request { return createPartitionsReq(t.name("cf-cp"), 2, false)(t) }},
			{path: "not growing", req: func(t *target) kmsg.Request { return createPartitionsReq(t.name("cf-cp"), 2, false)(t) }},
			{path: "validate only", req: func(t *target) kmsg.Request { return createPartitionsReq(t.name("cf-cp"), 4, true)(t) }},
			{path: "unknown topic", req: createPartitionsReq("cf-absent", 2, false)},
		}},
		{name: "DeleteTopics", steps: []step{
			{path: "setup topic", req: func(t *target) kmsg.Request { return createTopicsReq(nil, t.name("cf-del"))(t) }},
			{path: "ok", req: func(t *target) kmsg.Request { return deleteTopicsReq(t.name("cf-del"))(t) }},
			{path: "unknown topic", req: deleteTopicsReq("cf-absent")},
			{path: "unknown topic id", minVersion: 6, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				r.TimeoutMillis = 10000
				dt := kmsg.NewDeleteTopicsRequestTopic()
				dt.TopicID = [16]byte{9, 9, 9}
				r.Topics = append(r.Topics, dt)
				return r
			}},
		}},
		{name: "DescribeConfigs", steps: []step{
			{path: "topic", req: describeConfigsReq(kmsg.ConfigResourceTypeTopic, fixed(cfTopic), "cleanup.policy", "retention.ms", "segment.bytes", "max.message.bytes", "min.insync.replicas")},
			{path: "unknown topic", req: describeConfigsReq(kmsg.ConfigResourceTypeTopic, fixed("cf-absent"), "retention.ms")},
			{path: "broker", req: describeConfigsReq(kmsg.ConfigResourceTypeBroker, func(t *target) string { return itoa(t.i32("node")) },
				"num.partitions", "log.retention.hours", "auto.create.topics.enable", "log.retention.check.interval.ms")},
			{path: "another broker", req: describeConfigsReq(kmsg.ConfigResourceTypeBroker, fixed("77"), "num.partitions")},
			{path: "invalid broker name", req: describeConfigsReq(kmsg.ConfigResourceTypeBroker, fixed("x"), "num.partitions")},
			{path: "unknown config name", req: describeConfigsReq(kmsg.ConfigResourceTypeTopic, fixed(cfTopic), "no.such.config")},
		}},
		{name: "AlterConfigs", steps: []step{
			{path: "ok", req: func(t *target) kmsg.Request {
				return alterConfigsReq(cfAlter, false, "retention.ms", itoa(int32(3600000+t.i)))(t)
			}},
			{path: "invalid value", req: alterConfigsReq(cfAlter, false, "retention.ms", "soon")},
			{path: "unknown config", req: alterConfigsReq(cfAlter, false, "no.such.config", "1")},
			{path: "unknown topic", req: alterConfigsReq("cf-absent", false, "retention.ms", "1000")},
			{path: "validate only", req: alterConfigsReq(cfAlter, true, "cleanup.policy", "compact")},
			{path: "described", req: describeConfigsReq(kmsg.ConfigResourceTypeTopic, fixed(cfAlter), "retention.ms", "cleanup.policy")},
		}},
		{name: "IncrementalAlterConfigs", steps: []step{
			{path: "set", req: incrementalAlterReq(cfAlter, kmsg.IncrementalAlterConfigOpSet, "segment.ms", "7200000")},
			{path: "append", req: incrementalAlterReq(cfAlter, kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", "compact")},
			{path: "subtract", req: incrementalAlterReq(cfAlter, kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", "compact")},
			{path: "delete", req: incrementalAlterReq(cfAlter, kmsg.IncrementalAlterConfigOpDelete, "segment.ms", "")},
			{path: "append to a non-list", req: incrementalAlterReq(cfAlter, kmsg.IncrementalAlterConfigOpAppend, "retention.ms", "5")},
			{path: "invalid value", req: incrementalAlterReq(cfAlter, kmsg.IncrementalAlterConfigOpSet, "retention.ms", "soon")},
			{path: "unknown config", req: incrementalAlterReq(cfAlter, kmsg.IncrementalAlterConfigOpSet, "no.such.config", "1")},
			{path: "unknown topic", req: incrementalAlterReq("cf-absent", kmsg.IncrementalAlterConfigOpSet, "retention.ms", "1")},
			{path: "described", req: describeConfigsReq(kmsg.ConfigResourceTypeTopic, fixed(cfAlter), "segment.ms", "cleanup.policy")},
		}},
		{name: "DescribeLogDirs", steps: []step{
			{path: "one partition", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeLogDirsRequest()
				rt := kmsg.NewDescribeLogDirsRequestTopic()
				rt.Topic = cfTopic
				rt.Partitions = []int32{0}
				r.Topics = append(r.Topics, rt)
				return r
			}},
			{path: "unknown topic", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeLogDirsRequest()
				rt := kmsg.NewDescribeLogDirsRequestTopic()
				rt.Topic = "cf-absent"
				rt.Partitions = []int32{0}
				r.Topics = append(r.Topics, rt)
				return r
			}},
		}},
		{name: "AlterReplicaLogDirs", steps: []step{
			// A directory that is not one of the broker's log.dirs: both
			// brokers have one, at different paths, so the move names one
			// neither has.
			{path: "to a directory not in log.dirs", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrAlterReplicaLogDirsRequest()
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = "/nonexistent/strait-conformance"
				dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				dt.Topic, dt.Partitions = cfTopic, []int32{0}
				d.Topics = append(d.Topics, dt)
				r.Dirs = append(r.Dirs, d)
				return r
			}},
			// The dir the replica is in (each broker's own, read by
			// DescribeLogDirs): nothing to move, NONE (the move itself is
			// asynchronous in both: a future log that catches up).
			{path: "to the directory it is in", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeLogDirsRequest()
				rt := kmsg.NewDescribeLogDirsRequestTopic()
				rt.Topic, rt.Partitions = cfTopic, []int32{0}
				r.Topics = append(r.Topics, rt)
				return r
			}, keep: func(t *target, r kmsg.Response) {
				if resp, ok := r.(*kmsg.DescribeLogDirsResponse); ok && len(resp.Dirs) > 0 {
					t.set("logdir", resp.Dirs[0].Dir)
				}
			}},
			{path: "to the directory it is in", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrAlterReplicaLogDirsRequest()
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = t.str("logdir")
				dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				dt.Topic, dt.Partitions = cfTopic, []int32{0}
				d.Topics = append(d.Topics, dt)
				r.Dirs = append(r.Dirs, d)
				return r
			}},
		}},
		{name: "ElectLeaders", steps: []step{
			{path: "preferred, not needed", req: electReq(cfTopic, 0)},
			{path: "unknown partition", req: electReq(cfTopic, 8)},
			{path: "unknown topic", req: electReq("cf-absent", 0)},
		}},
		{name: "Reassignments", steps: []step{
			{path: "to the same replica", req: func(t *target) kmsg.Request { return reassignReq(cfTopic, 0, []int32{t.i32("node")})(t) }},
			{path: "to an unknown broker", req: reassignReq(cfTopic, 0, []int32{77})},
			{path: "unknown topic", req: func(t *target) kmsg.Request { return reassignReq("cf-absent", 0, []int32{t.i32("node")})(t) }},
			{path: "list all", req: func(t *target) kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() }},
			{path: "list one", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrListPartitionReassignmentsRequest()
				rt := kmsg.NewListPartitionReassignmentsRequestTopic()
				rt.Topic = cfTopic
				rt.Partitions = []int32{0}
				r.Topics = append(r.Topics, rt)
				return r
			}},
		}},
		{name: "DescribeTopicPartitions", steps: []step{
			{path: "named", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeTopicPartitionsRequest()
				for _, n := range []string{cfTopic, "cf-absent"} {
					rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
					rt.Topic = n
					r.Topics = append(r.Topics, rt)
				}
				r.ResponsePartitionLimit = 100
				return r
			}},
			{path: "zero partition limit", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeTopicPartitionsRequest()
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = cfTopic
				r.Topics = append(r.Topics, rt)
				r.ResponsePartitionLimit = 0
				return r
			}},
		}},
		{name: "DescribeCluster", steps: []step{
			{path: "ok", req: func(t *target) kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() }},
			{path: "authorized operations", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeClusterRequest()
				r.IncludeClusterAuthorizedOperations = true
				return r
			}},
			{path: "controllers endpoint type", minVersion: 1, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeClusterRequest()
				r.EndpointType = 2
				return r
			}},
		}},
	}
}

func createPartitionsReq(topic string, count int32, validate bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.TimeoutMillis = 10000
		r.ValidateOnly = validate
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic = topic
		rt.Count = count
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func deleteTopicsReq(topic string) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TimeoutMillis = 10000
		r.TopicNames = []string{topic}
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(topic)
		r.Topics = append(r.Topics, dt)
		return r
	}
}

func electReq(topic string, partition int32) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrElectLeadersRequest()
		r.TimeoutMillis = 10000
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic = topic
		rt.Partitions = []int32{partition}
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func reassignReq(topic string, partition int32, replicas []int32) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.TimeoutMillis = 10000
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition = partition
		rp.Replicas = replicas
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
}

func itoa(n int32) string {
	return fmtInt(int64(n))
}
