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
// and places and writes the new partitions: those of every topic that
// passes in one etcd transaction, as Kafka's controller commits them in one
// batch (controller.CreatePartitionsBatch). validate_only writes nothing. A
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
	// The topics left go to the controller together: their new partitions
	// are written in one transaction, as Kafka's controller commits one
	// batch; each topic's result is its own.
	var changes []controller.PartitionsChange
	var slots []int // the response topic of each change
	for _, rt := range req.Topics {
		if count[rt.Topic] > 1 {
			continue
		}
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if !c.authorizeTopic(acl.OpAlter, rt.Topic) { // authorize.go
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
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
		changes = append(changes, controller.PartitionsChange{Topic: rt.Topic, Count: rt.Count, Assignments: assignments})
		slots = append(slots, len(resp.Topics))
		resp.Topics = append(resp.Topics, st)
	}
	if len(changes) > 0 {
		// controller_mutation_rate, taken per topic as the controller
		// plans it (Kafka's applyPartitionChangeQuota): a strict quota
		// already exceeded refuses the topic.
		admit := func(i, added int) error {
			if c.mutationExceeded(mq) {
				return &controller.Error{Err: kerr.ThrottlingQuotaExceeded, Message: throttlingQuotaExceeded}
			}
			c.recordMutation(mq, added)
			return nil
		}
		errs := s.ctrl.CreatePartitionsBatch(ctx, changes, req.ValidateOnly, admit)
		for i, err := range errs {
			st := &resp.Topics[slots[i]]
			st.ErrorCode, st.ErrorMessage = s.apiErrorFields(err, "CreatePartitions", changes[i].Topic)
		}
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
