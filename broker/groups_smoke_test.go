package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGroupSmoke(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms", "0", "offsets.topic.num.partitions", "3")
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "smoke", 3, nil)
	produceAll(t, cl, testRecords("smoke", 30))
	cons := newClient(t, srv, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("smoke"), kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := 0
	for n < 30 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("offsets: %v", offs)
	lg, err := adm.ListGroups(ctx)
	t.Logf("groups: %v %v", lg, err)
	dg, err := adm.DescribeGroups(ctx, "g1")
	t.Logf("describe: %+v %v", dg, err)
}
