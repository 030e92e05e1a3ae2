package broker

// Guards on the coordinators' internal topics, stricter than Kafka 4.4
// (compat-tests/DIFFERENCES.md): Kafka deletes __consumer_offsets,
// __transaction_state or __share_group_state when asked and loses every
// committed offset, transaction or share-partition state, and lets a client create them with any shape before
// the coordinator does. Strait refuses both; the coordinators create the
// topics themselves with the configured shape.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
)

// coordinatorTopic reports whether name is an internal topic a coordinator
// of this broker writes.
func coordinatorTopic(name string) bool {
	return name == recordbatch.ConsumerOffsetsTopic || name == recordbatch.TransactionStateTopic || name == recordbatch.ShareGroupStateTopic
}

// deleteInternalTopicError is the DeleteTopics answer for an internal topic:
// INVALID_TOPIC_EXCEPTION, the code Kafka gives a client that produces to
// one, with the message Kafka's kafka-topics tool prints when it refuses the
// same deletion on the client side. TOPIC_AUTHORIZATION_FAILED would send an
// operator looking for a missing ACL; TOPIC_DELETION_DISABLED would claim
// delete.topic.enable is off for every topic.
func deleteInternalTopicError(name string) (int16, string) {
	return kerr.InvalidTopicException.Code, "Topic " + name + " is a kafka internal topic and is not allowed to be marked for deletion."
}

// internalTopicShapeError is the reason a client's CreateTopics of a
// coordinator topic is refused, or "" when its shape is the one the
// coordinator would create: the configured partition count and
// cleanup.policy=compact. np is the partition count after defaults.
func (s *Server) internalTopicShapeError(name string, np int32, configs map[string]string) string {
	var want int32
	var key string
	switch name {
	case recordbatch.ConsumerOffsetsTopic:
		want, key = s.cfg.Groups.OffsetsTopicPartitions, "offsets.topic.num.partitions"
	case recordbatch.TransactionStateTopic:
		want, key = s.cfg.Transactions.StateLogPartitions, "transaction.state.log.num.partitions"
	case recordbatch.ShareGroupStateTopic:
		want, key = s.cfg.Groups.ShareState.Partitions, "share.coordinator.state.topic.num.partitions"
	default:
		return ""
	}
	if np != want {
		return fmt.Sprintf("Internal topic %s must have %s=%d partitions, not %d; the broker creates it when first needed.", name, key, want, np)
	}
	if configs["cleanup.policy"] != "compact" {
		return fmt.Sprintf("Internal topic %s must have cleanup.policy=compact; the broker creates it when first needed.", name)
	}
	return ""
}
