package broker

// DescribeTopicPartitions (key 75, KIP-966; versions: see the registration
// below): what kafka-topics
// --describe and the Java admin client's describeTopics use in Kafka 4.
//
// Topics are answered in name order, with every partition's leader, leader
// epoch, replicas, ISR, eligible leader replicas and last known ELR
// (KIP-966, kept by the controller: controller/elr.go) and offline
// replicas. An empty topic list means every topic.
// At most response_partition_limit partitions are returned (capped by
// max.request.partition.size.limit, default 2000, and at least 1); when more
// remain, next_cursor names the topic and partition to continue from, and a
// request with that cursor continues there. A cursor whose topic is not in
// the requested list, or whose partition is negative, fails the request: every
// requested topic gets INVALID_REQUEST, as Kafka's error response has it.
// Requested topics that do not exist are UNKNOWN_TOPIC_OR_PARTITION (a
// malformed name INVALID_TOPIC_EXCEPTION); without an authorizer every topic
// operation is allowed.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeTopicPartitions, 0, 0, handleDescribeTopicPartitions) }

// defaultMaxRequestPartitionSizeLimit is max.request.partition.size.limit.
const defaultMaxRequestPartitionSizeLimit = 2000

func handleDescribeTopicPartitions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)

	fetchAll := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	var names []string
	limit := max(min(req.ResponsePartitionLimit, defaultMaxRequestPartitionSizeLimit), 1)
	var listed map[string]controller.TopicInfo // fetchAll: the topics of this page, from one snapshot
	if fetchAll {
		// Only this page's topics are visited: each has a partition at
		// least, so limit+1 of them fill it and name the next cursor; a
		// walk through 100,000 topics is not quadratic.
		listed = map[string]controller.TopicInfo{}
		for t := range s.ctrl.TopicsFrom(cursorTopic) {
			if c.authorizeTopic(acl.OpDescribe, t.Name) { // authorize.go
				names = append(names, t.Name)
				listed[t.Name] = t
				if len(names) > int(limit) {
					break
				}
			}
		}
	} else {
		// A set, not a scan of names: 200,000 distinct names would
		// otherwise cost 2*10^10 comparisons.
		seen := make(map[string]struct{}, min(len(req.Topics), 1024))
		for _, t := range req.Topics {
			if _, dup := seen[t.Topic]; t.Topic >= cursorTopic && !dup {
				seen[t.Topic] = struct{}{}
				names = append(names, t.Topic)
			}
		}
	}
	var bad string
	switch {
	case req.Cursor != nil && !fetchAll && !slices.Contains(names, req.Cursor.Topic):
		bad = "DescribeTopicPartitionsRequest topic list should contain the cursor topic: " + req.Cursor.Topic
	case req.Cursor != nil && req.Cursor.Partition < 0:
		bad = "DescribeTopicPartitionsRequest cursor partition must be valid: Cursor(topicName=" +
			req.Cursor.Topic + ", partitionIndex=" + strconv.Itoa(int(req.Cursor.Partition)) + ")"
	}
	if bad != "" {
		s.logger.Info("refusing DescribeTopicPartitions", "reason", bad)
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			name := t.Topic
			rt.Topic, rt.ErrorCode = &name, kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		x.respond(resp)
		return
	}
	slices.Sort(names)
	// Named topics the principal may not describe: refused, without their
	// ids, after the others (DescribeTopicPartitionsRequestHandler).
	var unauthorized []kmsg.DescribeTopicPartitionsResponseTopic
	names = slices.DeleteFunc(names, func(name string) bool {
		if fetchAll || c.authorizeTopic(acl.OpDescribe, name) {
			return false
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		n := name
		rt.Topic, rt.ErrorCode = &n, kerr.TopicAuthorizationFailed.Code
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		unauthorized = append(unauthorized, rt)
		return true
	})

	live := make(map[int32]bool)
	for _, b := range s.ctrl.Brokers() {
		live[b.NodeID] = true
	}
	remaining := limit
	for _, name := range names {
		if remaining == 0 {
			// The previous topics are complete: continue with this one.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		t, ok := listed[name]
		if !fetchAll {
			t, ok = s.ctrl.Topic(name)
		}
		if !ok {
			if fetchAll {
				continue // deleted since listed
			}
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			n := name
			rt.Topic, rt.ErrorCode = &n, kerr.UnknownTopicOrPartition.Code
			if controller.ValidateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			rt.AuthorizedOperations = topicAuthorizedOperations
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		start := int32(0)
		if req.Cursor != nil && name == cursorTopic {
			start = req.Cursor.Partition
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		n := name
		rt.Topic, rt.TopicID, rt.IsInternal = &n, t.ID, t.Internal
		rt.AuthorizedOperations = c.authorizedOperations(acl.ResourceTopic, name, topicAuthorizedOperations)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		upper := min(int32(len(t.Partitions)), start+remaining)
		for i := start; i < upper; i++ {
			rt.Partitions = append(rt.Partitions, describedPartition(t.Partitions[i], live))
		}
		resp.Topics = append(resp.Topics, rt)
		if upper < int32(len(t.Partitions)) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: upper}
			break
		}
		remaining -= max(upper-start, 0)
	}
	resp.Topics = append(resp.Topics, unauthorized...)
	x.respond(resp)
}

func describedPartition(pi controller.PartitionInfo, live map[int32]bool) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	p.Partition = pi.Partition
	p.LeaderID = pi.Leader
	if !live[pi.Leader] {
		p.LeaderID = -1
	}
	p.LeaderEpoch = pi.LeaderEpoch
	p.Replicas = slices.Clone(pi.Replicas)
	p.ISR = slices.Clone(pi.ISR)
	p.EligibleLeaderReplicas = append([]int32{}, pi.ELR...)
	p.LastKnownELR = append([]int32{}, pi.LastKnownELR...)
	p.OfflineReplicas = []int32{}
	for _, r := range pi.Replicas {
		if !live[r] {
			p.OfflineReplicas = append(p.OfflineReplicas, r)
		}
	}
	return p
}
