package straittest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// TestReadmeExample is the example of the README ("In Go tests"): a
// three-broker cluster, a replicated topic, a restart of its leader under a
// producer, and every record read back.
func TestReadmeExample(t *testing.T) {
	c := straittest.StartCluster(t, 3, straittest.WithTopic("orders", 1, 3))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cl := c.Client(kgo.DefaultProduceTopic("orders"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 10 {
		if i == 5 {
			c.Restart(c.Leader("orders", 0)) // same directory and port; the client carries on
		}
		if err := cl.ProduceSync(ctx, kgo.StringRecord("order")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	consumer := c.Client(kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("billing"))
	for n := 0; n < 10; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if isr := c.WaitISR("orders", 0, 3, 30*time.Second).ISR; len(isr) != 3 {
		t.Fatalf("ISR %v", isr)
	}
}
