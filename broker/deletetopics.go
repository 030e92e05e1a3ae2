package broker

// DeleteTopics (key 20); versions: see the registration below.
//
// Takes names (v1-5) or names or topic ids (v6); a missing topic is
// UNKNOWN_TOPIC_OR_PARTITION (by id: UNKNOWN_TOPIC_ID). The controller
// deletes the topic in etcd; from v5 an error carries its message.
// __consumer_offsets and __transaction_state are never deleted
// (INVALID_TOPIC_EXCEPTION; see internal_topics.go), unlike Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteTopics, 1, 6, handleDeleteTopics) }

func handleDeleteTopics(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DeleteTopicsRequest)
	s := c.srv
	v := x.req.Version
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := requestContext(req.TimeoutMillis)
	defer cancel()

	type target struct {
		name *string
		id   [16]byte
	}
	mq := c.mutationQuota(x, 5) // controller_mutation_rate (clientquotas.go)
	var targets []target
	if v >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			n := n
			targets = append(targets, target{name: &n})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var name string
		switch {
		case tg.name != nil:
			name = *tg.name
			if t, ok := s.ctrl.Topic(name); ok {
				st.TopicID = t.ID
			}
		default:
			t, ok := s.ctrl.TopicByID(tg.id)
			if !ok {
				st.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, st)
				continue
			}
			name = t.Name
			st.Topic = &name
		}
		if coordinatorTopic(name) {
			code, msg := deleteInternalTopicError(name)
			st.ErrorCode = code
			if v >= 5 {
				st.ErrorMessage = &msg
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if c.mutationExceeded(mq) {
			st.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
			if v >= 5 {
				st.ErrorMessage = kmsg.StringPtr(throttlingQuotaExceeded)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		parts := 0
		if t, ok := s.ctrl.Topic(name); ok {
			parts = len(t.Partitions)
		}
		if err := s.ctrl.DeleteTopic(ctx, name); err != nil {
			code, msg := errorCode(err)
			st.ErrorCode = code
			if v >= 5 {
				st.ErrorMessage = &msg
			}
		} else {
			c.recordMutation(mq, parts)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.throttleMutations(x, mq)
	x.respond(resp)
}
