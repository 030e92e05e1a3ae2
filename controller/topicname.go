package controller

import "github.com/twmb/franz-go/pkg/kerr"

// ValidateTopicName reports why a topic name is illegal in Kafka, or nil; the
// broker uses it to answer Metadata for a name it will not auto-create. The
// error is an *Error with INVALID_TOPIC_EXCEPTION and Kafka's message.
func ValidateTopicName(name string) error {
	if reason := validateTopicName(name); reason != "" {
		return apiError(kerr.InvalidTopicException, "Topic name is invalid: %s", reason)
	}
	return nil
}
