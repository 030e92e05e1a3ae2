package straittest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// describeELR asks broker id for the partition with DescribeTopicPartitions.
func describeELR(t *testing.T, c *straittest.Cluster, id int32, topic string) (kmsg.DescribeTopicPartitionsResponseTopicPartition, error) {
	t.Helper()
	cl := c.Client(kgo.SeedBrokers(c.Broker(id).Addr()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.DescribeTopicPartitionsResponseTopicPartition{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.DescribeTopicPartitionsResponseTopicPartition{}, fmt.Errorf("response %+v", resp.Topics)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return kmsg.DescribeTopicPartitionsResponseTopicPartition{}, err
	}
	return resp.Topics[0].Partitions[0], nil
}

// waitELR polls broker id until cond holds for the partition (bounded).
func waitELR(t *testing.T, c *straittest.Cluster, id int32, topic, what string,
	cond func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last kmsg.DescribeTopicPartitionsResponseTopicPartition
	var lastErr error
	for i := 0; i < 600 && time.Now().Before(deadline); i++ {
		p, err := describeELR(t, c, id, topic)
		if err == nil && cond(p) {
			return p
		}
		last, lastErr = p, err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: last answer leader %d isr %v elr %v lastKnownElr %v (err %v)",
		what, last.LeaderID, last.ISR, last.EligibleLeaderReplicas, last.LastKnownELR, lastErr)
	return last
}

// Eligible leader replicas (KIP-966) with min.insync.replicas=2 and RF=3:
// the followers stop one after the other; the one that left the ISR when it
// fell below min ISR is eligible (ELR). The leader stops too; the eligible
// follower, started again, leads with every acknowledged record (the other
// follower catches up from it), where without ELR the partition would wait
// for the last ISR member.
func TestEligibleLeaderReplicaLeadsWithEveryAcknowledgedRecord(t *testing.T) {
	c := straittest.StartCluster(t, 3)
	two := "2"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, "elr"); err != nil {
		t.Fatal(err)
	}
	c.WaitISR("elr", 0, 3, 15*time.Second)
	leader := c.WaitLeader("elr", 0, 15*time.Second)
	var followers []int32
	for _, b := range c.Brokers() {
		if b.ID() != leader {
			followers = append(followers, b.ID())
		}
	}
	first, eligible := followers[0], followers[1]
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("elr"))
	acked := 0
	produceAcked := func(n int) {
		t.Helper()
		produce(t, cl, "elr", acked, n)
		acked += n
	}
	produceAcked(50)

	c.Stop(first)
	p := waitELR(t, c, leader, "elr", "the ISR to lose the first follower",
		func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool { return len(p.ISR) == 2 })
	if len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("ISR %v at min ISR, yet ELR %v lastKnownElr %v", p.ISR, p.EligibleLeaderReplicas, p.LastKnownELR)
	}
	produceAcked(50) // the ISR meets min ISR: acknowledged by both

	c.Stop(eligible)
	p = waitELR(t, c, leader, "elr", "the ISR to fall below min ISR", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return slices.Equal(p.ISR, []int32{leader})
	})
	if !slices.Equal(p.EligibleLeaderReplicas, []int32{eligible}) || len(p.LastKnownELR) != 0 {
		t.Fatalf("ISR %v: ELR %v lastKnownElr %v, want ELR [%d]", p.ISR, p.EligibleLeaderReplicas, p.LastKnownELR, eligible)
	}

	c.Stop(leader)
	c.Restart(eligible)
	p = waitELR(t, c, eligible, "elr", "the eligible replica to lead", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return p.LeaderID == eligible
	})
	if !slices.Equal(p.ISR, []int32{eligible}) || !slices.Equal(p.EligibleLeaderReplicas, []int32{leader}) {
		t.Fatalf("led by %d: ISR %v ELR %v, want ISR [%d] ELR [%d]", eligible, p.ISR, p.EligibleLeaderReplicas, eligible, leader)
	}

	// Under min ISR the high watermark stays (as Kafka 4's): the first
	// follower, which stopped with only the first records, catches up from
	// the new leader and the ISR back at min ISR clears the ELR.
	c.Restart(first)
	p = waitELR(t, c, eligible, "elr", "the ISR to grow back to min ISR", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return len(p.ISR) == 2
	})
	if p.LeaderID != eligible || len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("ISR %v: leader %d ELR %v lastKnownElr %v, want leader %d and no ELR",
			p.ISR, p.LeaderID, p.EligibleLeaderReplicas, p.LastKnownELR, eligible)
	}

	reader := c.Client(kgo.ConsumeTopics("elr"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consume(t, reader, acked)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	for i := range acked {
		if v := fmt.Sprintf("v%d", i); !seen[v] {
			t.Fatalf("acknowledged record %s lost (%d records read)", v, len(got))
		}
	}
}
