package broker

// CreatePartitions (key 37); versions: see the registration below.
//
// As Kafka 4.x's controller (ControllerApis.createPartitions and
// ReplicationControlManager.createPartitions): a topic named more than once
// gets one INVALID_REQUEST result ("Duplicate topic name.") ahead of the
// others and is not changed; every other topic goes to the controller, which
// checks that the count is an increase (INVALID_PARTITIONS), that an explicit
// assignment has one replica list per new partition, of the topic's
// replication factor, on registered brokers (INVALID_REPLICA_ASSIGNMENT),
// and places and writes the new partitions. validate_only writes nothing. A
// missing topic is UNKNOWN_TOPIC_OR_PARTITION.
//
// The controller returns once this broker's metadata cache, and with it the
// partition manager's listener, has applied the change, so the new
// partitions' logs exist here when the response leaves.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.CreatePartitions, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.CreatePartitionsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := requestContext(req.TimeoutMillis)
	defer cancel()

	mq := c.mutationQuota(x, 3) // controller_mutation_rate (clientquotas.go)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	// Kafka answers each duplicated name once, before the other topics.
	reported := make(map[string]bool)
	for _, rt := range req.Topics {
		if count[rt.Topic] > 1 && !reported[rt.Topic] {
			reported[rt.Topic] = true
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = kmsg.StringPtr("Duplicate topic name.")
			resp.Topics = append(resp.Topics, st)
		}
	}
	for _, rt := range req.Topics {
		if count[rt.Topic] > 1 {
			continue
		}
		if !c.authorizeTopic(acl.OpAlter, rt.Topic) { // authorize.go
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		var assignments [][]int32
		if rt.Assignment != nil { // null: placed by the controller; [] is a (wrong) assignment
			assignments = make([][]int32, 0, len(rt.Assignment))
			for _, a := range rt.Assignment {
				assignments = append(assignments, a.Replicas)
			}
		}
		if c.mutationExceeded(mq) {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = rt.Topic, kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(throttlingQuotaExceeded)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		before := 0
		if t, ok := s.ctrl.Topic(rt.Topic); ok {
			before = len(t.Partitions)
		}
		_, err := s.ctrl.CreatePartitions(ctx, rt.Topic, rt.Count, assignments, req.ValidateOnly)
		if err == nil {
			c.recordMutation(mq, int(rt.Count)-before)
		}
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		st.ErrorCode, st.ErrorMessage = s.apiErrorFields(err, "CreatePartitions", rt.Topic)
		resp.Topics = append(resp.Topics, st)
	}
	c.throttleMutations(x, mq)
	x.respond(resp)
}

// apiErrorFields is the error code and message of a controller error as
// Kafka's ApiError.fromThrowable puts them in a response: no message when it
// would only repeat the code's default text, and none for
// UNKNOWN_SERVER_ERROR (Kafka does not leak internals; the log has it). A
// request deadline that passed is REQUEST_TIMED_OUT, as when Kafka's
// controller times an operation out.
func (s *Server) apiErrorFields(err error, api, topic string) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code, nil
	}
	code, _ := errorCode(err)
	if code == kerr.UnknownServerError.Code {
		s.logger.Error("controller request failed", "api", api, "topic", topic, "err", err)
		return code, nil
	}
	msg := controller.ErrorMessage(err)
	var ke *kerr.Error
	if msg == "" || errors.As(err, &ke) && msg == ke.Description {
		return code, nil
	}
	return code, &msg
}
