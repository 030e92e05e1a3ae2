package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIncrementalAlterConfigsValidateOnlyWithoutOverrides: validate_only on
// a topic with no config overrides used to write into a nil map and stop
// the broker (found by the differential authorization test against Kafka).
// Kafka answers NONE and changes nothing; so must we, and keep serving.
func TestIncrementalAlterConfigsValidateOnlyWithoutOverrides(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "plain", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, validateOnly := range []bool{true, false} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "plain"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("86400000")
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("validate_only=%v: %v", validateOnly, err)
		}
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("validate_only=%v: %+v; want one resource, NONE", validateOnly, resp.Resources)
		}
	}
}
