package broker

// DeleteTopics (key 20); versions: see the registration below.
//
// Takes names (v1-5) or names or topic ids (v6); a missing topic is
// UNKNOWN_TOPIC_OR_PARTITION (by id: UNKNOWN_TOPIC_ID). The controller
// deletes the topic in etcd; from v5 an error carries its message.
// __consumer_offsets and __transaction_state are never deleted
// (INVALID_TOPIC_EXCEPTION; see internal_topics.go), unlike Kafka. With an
// authorizer a topic needs DELETE (on it or the cluster), and DESCRIBE for
// its existence or name to show (TOPIC_AUTHORIZATION_FAILED). With
// delete.topic.enable=false every topic is TOPIC_DELETION_DISABLED.

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
	// delete.topic.enable=false: every topic named is refused before
	// anything else is looked at, as ControllerApis.deleteTopics does
	// (TOPIC_DELETION_DISABLED, INVALID_REQUEST before v3; no message, as
	// Kafka's error response carries none).
	if !s.cfg.Topics.DeleteTopicEnable {
		code := kerr.TopicDeletionDisabled.Code
		if v < 3 {
			code = kerr.InvalidRequest.Code
		}
		for _, tg := range targets {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = tg.name, tg.id, code
			resp.Topics = append(resp.Topics, st)
		}
		x.respond(resp)
		return
	}
	// As Kafka 4's ControllerApis.deleteTopics: an entry with both a name
	// and an id, or neither, is INVALID_REQUEST; a name or id given more
	// than once is not deleted and gets one INVALID_REQUEST result. Those
	// results come first; each other topic is then deleted once.
	fail := func(name *string, id [16]byte, msg string) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID, st.ErrorCode = name, id, kerr.InvalidRequest.Code
		if v >= 5 {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	var zero [16]byte
	names := make(map[string]int, min(len(targets), 1024))
	ids := make(map[[16]byte]int)
	var dupNames []string
	var dupIDs [][16]byte
	valid := targets[:0]
	for _, tg := range targets {
		switch {
		case tg.name == nil && tg.id == zero:
			fail(nil, zero, "Neither topic name nor id were specified.")
			continue
		case tg.name != nil && tg.id != zero:
			fail(tg.name, tg.id, "You may not specify both topic name and topic id.")
			continue
		case tg.name != nil:
			if names[*tg.name]++; names[*tg.name] == 2 {
				dupNames = append(dupNames, *tg.name)
			}
		default:
			if ids[tg.id]++; ids[tg.id] == 2 {
				dupIDs = append(dupIDs, tg.id)
			}
		}
		valid = append(valid, tg)
	}
	for _, n := range dupNames {
		fail(&n, zero, "Duplicate topic name.")
	}
	for _, id := range dupIDs {
		fail(nil, id, "Duplicate topic id.")
	}
	targets = targets[:0]
	for _, tg := range valid {
		if (tg.name != nil && names[*tg.name] > 1) || (tg.name == nil && ids[tg.id] > 1) {
			continue
		}
		targets = append(targets, tg)
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
				st.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicID.Description) // Kafka's has one
				resp.Topics = append(resp.Topics, st)
				continue
			}
			name = t.Name
			st.Topic = &name
		}
		// As Kafka: a topic named without DESCRIBE is refused whether it
		// exists or not, one named by id has its name hidden.
		deletable, describable := c.deleteTopicAccess(name) // authorize.go
		if _, exists := s.ctrl.Topic(name); !describable || !deletable && exists {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			switch {
			case !describable && tg.name != nil:
				st.TopicID = [16]byte{}
			case !describable:
				st.Topic = nil
			}
			resp.Topics = append(resp.Topics, st)
			continue
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
