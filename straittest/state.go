package straittest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestTimeout bounds one state query (Partition, Leader, ISR, Group).
const requestTimeout = 10 * time.Second

// Client returns a franz-go client seeded with every broker, with opts
// after the seeds; it is closed when the test ends. The test fails if the
// options are invalid.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.tb.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)...)
	if err != nil {
		c.tb.Fatalf("straittest: client: %v", err)
	}
	c.tb.Cleanup(cl.Close)
	return cl
}

// Admin returns the cluster's admin client (kadm), shared by the state
// accessors and closed when the test ends.
func (c *Cluster) Admin() *kadm.Client {
	c.tb.Helper()
	adm, err := c.adminClient()
	if err != nil {
		c.tb.Fatalf("straittest: %v", err)
	}
	return adm
}

func (c *Cluster) adminClient() (*kadm.Client, error) {
	c.adminOnce.Do(func() {
		// Short retry backoff: the accessors poll through it while brokers
		// restart.
		// Its client id exempts it from interceptions (faults.go).
		c.adminCl, c.adminErr = kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ClientID(adminClientID),
			kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
		if c.adminErr == nil {
			c.admin = kadm.NewClient(c.adminCl)
		}
	})
	return c.admin, c.adminErr
}

// PartitionState is a partition as Metadata describes it.
type PartitionState struct {
	Leader      int32 // -1: none
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
}

// Partition describes a partition from a Metadata request to a running
// broker (the first that answers, by id). The request goes to the broker
// itself: a kgo client's own Metadata requests may be answered from its
// cache, up to 5 s old. Safe from any goroutine.
func (c *Cluster) Partition(topic string, partition int32) (PartitionState, error) {
	if _, err := c.adminClient(); err != nil {
		return PartitionState{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	var resp *kmsg.MetadataResponse
	err := errors.New("no broker is running")
	for _, b := range c.brokers {
		if !b.answering() {
			continue
		}
		resp, err = req.RequestWith(ctx, c.adminCl.Broker(int(b.id)))
		if err == nil {
			break
		}
	}
	if err != nil {
		return PartitionState{}, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return PartitionState{}, fmt.Errorf("topic %s: %w", topic, err)
		}
		for _, p := range t.Partitions {
			if p.Partition != partition {
				continue
			}
			st := PartitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR), Offline: slices.Clone(p.OfflineReplicas)}
			slices.Sort(st.ISR)
			// LEADER_NOT_AVAILABLE is a state (no leader now), not a failure.
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil && !errors.Is(err, kerr.LeaderNotAvailable) {
				return st, fmt.Errorf("%s/%d: %w", topic, partition, err)
			}
			return st, nil
		}
		return PartitionState{}, fmt.Errorf("topic %s has no partition %d", topic, partition)
	}
	return PartitionState{}, fmt.Errorf("topic %s not in the Metadata response", topic)
}

// Leader is the partition's leader (-1: none); the test fails if the
// cluster cannot say.
func (c *Cluster) Leader(topic string, partition int32) int32 {
	c.tb.Helper()
	st, err := c.Partition(topic, partition)
	if err != nil {
		c.tb.Fatalf("straittest: %v", err)
	}
	return st.Leader
}

// ISR is the partition's in-sync replicas, sorted; the test fails if the
// cluster cannot say.
func (c *Cluster) ISR(topic string, partition int32) []int32 {
	c.tb.Helper()
	st, err := c.Partition(topic, partition)
	if err != nil {
		c.tb.Fatalf("straittest: %v", err)
	}
	return st.ISR
}

// WaitISR waits until the partition has a leader and exactly size in-sync
// replicas, polling Metadata, and returns its state; the test fails after
// timeout.
func (c *Cluster) WaitISR(topic string, partition int32, size int, timeout time.Duration) PartitionState {
	c.tb.Helper()
	var st PartitionState
	err := poll(timeout, func() (bool, error) {
		var err error
		st, err = c.Partition(topic, partition)
		return err == nil && st.Leader >= 0 && len(st.ISR) == size, err
	})
	if err != nil {
		c.tb.Fatalf("straittest: %s/%d: ISR of %d not reached: %v (last: leader %d, ISR %v)",
			topic, partition, size, err, st.Leader, st.ISR)
	}
	return st
}

// WaitLeader waits until the partition's leader is one of want (any leader
// if want is empty) and returns it; the test fails after timeout.
func (c *Cluster) WaitLeader(topic string, partition int32, timeout time.Duration, want ...int32) int32 {
	c.tb.Helper()
	var st PartitionState
	err := poll(timeout, func() (bool, error) {
		var err error
		st, err = c.Partition(topic, partition)
		return err == nil && st.Leader >= 0 && (len(want) == 0 || slices.Contains(want, st.Leader)), err
	})
	if err != nil {
		c.tb.Fatalf("straittest: %s/%d: leader in %v not reached: %v (last: %d)", topic, partition, want, err, st.Leader)
	}
	return st.Leader
}

// GroupState is a consumer group as its coordinator describes it.
type GroupState struct {
	State   string // Stable, PreparingRebalance, CompletingRebalance, Empty, Dead (classic); Stable, Assigning, Reconciling, Empty (KIP-848)
	Members int
	// Protocol is "classic" or "consumer" (KIP-848).
	Protocol string
}

// Group describes a group: a classic group through DescribeGroups, a
// KIP-848 group through ConsumerGroupDescribe. Safe from any goroutine.
func (c *Cluster) Group(group string) (GroupState, error) {
	adm, err := c.adminClient()
	if err != nil {
		return GroupState{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return GroupState{}, err
	}
	g, ok := gs[group]
	if ok && g.Err == nil && g.ProtocolType != "" {
		return GroupState{State: g.State, Members: len(g.Members), Protocol: "classic"}, nil
	}
	// Kafka answers DescribeGroups of a KIP-848 group with
	// GROUP_ID_NOT_FOUND ("not a classic group"); ask the other API.
	cgs, cerr := adm.DescribeConsumerGroups(ctx, group)
	if cerr == nil {
		if cg, ok := cgs[group]; ok && cg.Err == nil && cg.State != "" && cg.State != "Dead" {
			return GroupState{State: cg.State, Members: len(cg.Members), Protocol: "consumer"}, nil
		}
	}
	if ok && g.Err != nil {
		return GroupState{}, fmt.Errorf("group %s: %w", group, g.Err)
	}
	return GroupState{State: g.State, Members: len(g.Members), Protocol: "classic"}, nil
}

// WaitGroupStable waits until the group is Stable with at least one member
// and returns it; the test fails after timeout.
func (c *Cluster) WaitGroupStable(group string, timeout time.Duration) GroupState {
	c.tb.Helper()
	var g GroupState
	err := poll(timeout, func() (bool, error) {
		var err error
		g, err = c.Group(group)
		return err == nil && g.State == "Stable" && g.Members > 0, err
	})
	if err != nil {
		c.tb.Fatalf("straittest: group %s not stable: %v (last: %+v)", group, err, g)
	}
	return g
}

// poll calls cond every 20 ms until it holds or timeout passes; the error
// is then a timeout carrying cond's last error.
func poll(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("timed out after %v: %w", timeout, err)
			}
			return fmt.Errorf("timed out after %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
