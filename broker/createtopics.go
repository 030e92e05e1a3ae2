package broker

// CreateTopics (key 19); versions: see the registration below.
//
// CreateTopics validates each topic's configs (unknown key or bad value:
// INVALID_CONFIG), fills num_partitions and replication_factor of -1 (v4+)
// from num.partitions and default.replication.factor, and hands the rest to
// the controller, which validates the name, counts and assignment against
// the live brokers and writes the topic to etcd in one transaction
// (validate_only writes nothing). A name given more than once is not
// created: it gets one INVALID_REQUEST result ("Duplicate topic name."),
// after the others, as Kafka 4's ControllerApis answers. From v5 the response carries
// the partition count and replication factor (v7: the topic id).
// __consumer_offsets or __transaction_state not yet created, asked for with
// another partition count than the coordinator's or not compacted, is
// INVALID_REQUEST (Kafka creates it as asked; see internal_topics.go).
// With an authorizer a topic needs CREATE on the cluster or on itself
// (TOPIC_AUTHORIZATION_FAILED), and its configs in the response
// DESCRIBE_CONFIGS on it.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.CreateTopics, 2, 7, handleCreateTopics) }

func handleCreateTopics(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.CreateTopicsRequest)
	s := c.srv
	v := x.req.Version
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := requestContext(req.TimeoutMillis)
	defer cancel()

	mq := c.mutationQuota(x, 6) // controller_mutation_rate (clientquotas.go)
	seen := make(map[string]int, min(len(req.Topics), 1024))
	var dups []string // in first-seen order
	for _, rt := range req.Topics {
		if seen[rt.Topic]++; seen[rt.Topic] == 2 {
			dups = append(dups, rt.Topic)
		}
	}
	for _, rt := range req.Topics {
		if seen[rt.Topic] > 1 {
			continue
		}
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		setErr := func(code int16, msg string) {
			st.ErrorCode = code
			if msg != "" && v >= 1 {
				st.ErrorMessage = &msg
			}
		}
		if !c.mayCreateTopic(rt.Topic) { // authorize.go
			setErr(kerr.TopicAuthorizationFailed.Code, "Authorization failed.")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		configs := make(map[string]string, len(rt.Configs))
		for _, cf := range rt.Configs {
			if cf.Value != nil {
				configs[cf.Name] = *cf.Value
			}
		}
		if err := config.ValidateTopicConfigs(configs); err != nil {
			code, msg := errorCode(err)
			setErr(code, msg)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		np, rf := rt.NumPartitions, rt.ReplicationFactor
		if np == -1 && len(rt.ReplicaAssignment) == 0 {
			np = s.cfg.Topics.NumPartitions
		}
		if rf == -1 && len(rt.ReplicaAssignment) == 0 {
			rf = s.cfg.Topics.DefaultReplicationFactor
		}
		var assign map[int32][]int32
		if len(rt.ReplicaAssignment) > 0 {
			if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
				setErr(kerr.InvalidRequest.Code, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
				resp.Topics = append(resp.Topics, st)
				continue
			}
			assign = make(map[int32][]int32, len(rt.ReplicaAssignment))
			for _, ra := range rt.ReplicaAssignment {
				assign[ra.Partition] = ra.Replicas
			}
			np = int32(len(assign))
			rf = int16(len(rt.ReplicaAssignment[0].Replicas))
		}
		creq := controller.CreateTopicRequest{
			Name:              rt.Topic,
			NumPartitions:     np,
			ReplicationFactor: rf,
			Assignments:       assign,
			Configs:           configs,
			ValidateOnly:      req.ValidateOnly,
		}
		if coordinatorTopic(rt.Topic) {
			// An existing one is TOPIC_ALREADY_EXISTS from the controller below.
			if _, exists := s.ctrl.Topic(rt.Topic); !exists {
				if msg := s.internalTopicShapeError(rt.Topic, np, configs); msg != "" {
					setErr(kerr.InvalidRequest.Code, msg)
					resp.Topics = append(resp.Topics, st)
					continue
				}
			}
		}
		if assign != nil {
			// The controller wants both at -1 beside an assignment, as Kafka's.
			creq.NumPartitions, creq.ReplicationFactor = -1, -1
		}
		if c.mutationExceeded(mq) {
			setErr(kerr.ThrottlingQuotaExceeded.Code, throttlingQuotaExceeded)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t, err := s.ctrl.CreateTopic(ctx, creq)
		if err == nil {
			c.recordMutation(mq, max(len(t.Partitions), int(np)))
		}
		if err != nil {
			code, msg := errorCode(err)
			if errors.Is(err, context.DeadlineExceeded) {
				// The request's timeout_ms ran out (Kafka's controller
				// answers REQUEST_TIMED_OUT; the topic may still appear).
				code, msg = kerr.RequestTimedOut.Code, kerr.RequestTimedOut.Description
			}
			setErr(code, msg)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		// v5+: every topic config with its value and source, as Kafka.
		st.Configs = s.createTopicsResponseConfigs(configs)
		st.NumPartitions = np
		st.ReplicationFactor = rf
		if len(t.Partitions) > 0 {
			st.NumPartitions = int32(len(t.Partitions))
			st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
		}
		if !c.authorizeTopic(acl.OpDescribeConfigs, rt.Topic) {
			// Created, but its configs and shape are not the principal's to see.
			st.Configs, st.NumPartitions, st.ReplicationFactor = nil, -1, -1
			st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		resp.Topics = append(resp.Topics, st)
	}
	for _, name := range dups {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.ErrorCode = name, kerr.InvalidRequest.Code
		st.NumPartitions, st.ReplicationFactor = -1, -1
		if v >= 1 {
			st.ErrorMessage = kmsg.StringPtr("Duplicate topic name.")
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.throttleMutations(x, mq)
	x.respond(resp)
}
