package broker

// Metadata (key 3); versions: see the registration below.
//
// Brokers are listed with the endpoint of the listener the client connected
// on (as Kafka does). A null topic list (v1+; an empty one at v0) asks for
// every topic. Requested topics are looked up by name, or by topic id from
// v10; a missing one is auto-created when the request allows it (v4+, always
// before) and auto.create.topics.enable is true, with num.partitions and
// default.replication.factor. Unlike Kafka, which answers
// LEADER_NOT_AVAILABLE while an auto-created topic propagates, Strait creates
// it synchronously and answers with its partitions at once. Internal topics
// (names starting with "__") are flagged is_internal. With an authorizer,
// as KafkaApis: the list of all topics leaves out those the principal may
// not DESCRIBE, a topic named without DESCRIBE is TOPIC_AUTHORIZATION_FAILED,
// and auto-creation needs CREATE on the cluster or the topic.

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.Metadata, 0, 13, handleMetadata) }

func handleMetadata(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.MetadataRequest)
	s := c.srv
	v := x.req.Version
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.SetVersion(v)

	// v10-11 carry topic ids but Kafka looks topics up by id only from
	// v12: a topic id or a null name there is INVALID_REQUEST for the
	// whole request (KafkaApis.handleTopicMetadataRequest).
	if v >= 10 && v < 12 && req.Topics != nil {
		for _, t := range req.Topics {
			if t.Topic == nil || t.TopicID != [16]byte{} {
				resp.ControllerID = -1
				for _, rt := range req.Topics {
					mt := kmsg.NewMetadataResponseTopic()
					mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, kerr.InvalidRequest.Code
					resp.Topics = append(resp.Topics, mt)
				}
				x.respond(resp)
				return
			}
		}
	}

	brokers := s.ctrl.Brokers()
	live := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		if b.Fenced {
			continue // registered but not yet serving: Kafka leaves fenced brokers out
		}
		live[b.NodeID] = true
		ep, ok := endpointFor(b, c.listener)
		if !ok {
			continue
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.NodeID, ep.Host, ep.Port
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	clusterID := s.ctrl.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = s.ctrl.ControllerID()

	if req.Topics == nil || (v == 0 && len(req.Topics) == 0) {
		// Every topic, sorted by name, from one snapshot without a copy of it.
		for t := range s.ctrl.TopicsFrom("") {
			if !c.authorizeTopic(acl.OpDescribe, t.Name) {
				continue // all topics: those the principal may describe
			}
			resp.Topics = append(resp.Topics, topicMetadata(t, live, v))
		}
		c.metadataAuthorizedOperations(req, resp) // authorize.go
		x.respond(resp)
		return
	}
	allowAuto := v < 4 || req.AllowAutoTopicCreation
	// Kafka answers a set of topics (KafkaApis.handleTopicMetadataRequest
	// takes topics.toSet): a name or id repeated is answered once, so the
	// response and its cost grow with distinct topics, not with the request.
	seenNames := make(map[string]struct{})
	seenIDs := make(map[[16]byte]struct{})
	for _, rt := range req.Topics {
		if rt.Topic == nil && v >= 10 {
			if _, dup := seenIDs[rt.TopicID]; dup {
				continue
			}
			seenIDs[rt.TopicID] = struct{}{}
			t, ok := s.ctrl.TopicByID(rt.TopicID)
			if !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			if !c.authorizeTopic(acl.OpDescribe, t.Name) {
				// Topic ids are not secret: the id is echoed, not the name.
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, topicMetadata(t, live, v))
			continue
		}
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		}
		if _, dup := seenNames[name]; dup {
			continue
		}
		seenNames[name] = struct{}{}
		// A topic the principal may not describe is refused whether it
		// exists or not, so its existence does not leak; creating one
		// needs CREATE on the cluster or the topic.
		denied := !c.authorizeTopic(acl.OpDescribe, name)
		t, ok := s.ctrl.Topic(name)
		if !denied && !ok && allowAuto && s.cfg.Topics.AutoCreateEnable && !strings.HasPrefix(name, "__") {
			if c.mayCreateTopic(name) {
				t, ok = s.autoCreateTopic(name)
			} else {
				denied = true
			}
		}
		if denied {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if controller.ValidateTopicName(name) != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, topicMetadata(t, live, v))
	}
	c.metadataAuthorizedOperations(req, resp)
	x.respond(resp)
}

// autoCreateTopic creates a topic for Metadata's auto-creation; a concurrent
// creation by another client is fine.
func (s *Server) autoCreateTopic(name string) (controller.TopicInfo, bool) {
	if controller.ValidateTopicName(name) != nil {
		return controller.TopicInfo{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t, err := s.ctrl.CreateTopic(ctx, controller.CreateTopicRequest{
		Name:              name,
		NumPartitions:     s.cfg.Topics.NumPartitions,
		ReplicationFactor: s.cfg.Topics.DefaultReplicationFactor,
	})
	if err != nil {
		if t, ok := s.ctrl.Topic(name); ok {
			return t, true
		}
		s.logger.Warn("auto-creating topic failed", "topic", name, "err", err)
		return controller.TopicInfo{}, false
	}
	s.logger.Info("auto-created topic", "topic", name, "partitions", s.cfg.Topics.NumPartitions,
		"replication_factor", s.cfg.Topics.DefaultReplicationFactor)
	return t, true
}

func endpointFor(b controller.BrokerInfo, listener string) (controller.Endpoint, bool) {
	for _, ep := range b.Endpoints {
		if ep.Name == listener {
			return ep, true
		}
	}
	return controller.Endpoint{}, false
}

func topicMetadata(t controller.TopicInfo, live map[int32]bool, v int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	// One allocation for the partitions, none per partition: the replica
	// and ISR lists are the cache's (read-only, only encoded), so that an
	// answer over 100,000 partitions costs their encoding.
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.Partitions))
	for i, pi := range t.Partitions {
		mp := &mt.Partitions[i]
		mp.Default()
		mp.Partition = int32(i)
		mp.Leader = pi.Leader
		mp.LeaderEpoch = pi.LeaderEpoch
		mp.Replicas = pi.Replicas
		mp.ISR = pi.ISR
		mp.OfflineReplicas = []int32{}
		for j, r := range pi.Replicas {
			if !live[r] {
				if len(mp.OfflineReplicas) == 0 {
					mp.OfflineReplicas = make([]int32, 0, len(pi.Replicas)-j)
				}
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if pi.Leader < 0 || !live[pi.Leader] {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
		}
	}
	return mt
}
