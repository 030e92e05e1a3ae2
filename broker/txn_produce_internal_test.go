package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

// A transactional produce reaching a follower is answered
// NOT_LEADER_OR_FOLLOWER by its verification, as Kafka's
// Partition.maybeStartTransactionVerification answers it, and not left to
// the append: a replica that becomes the leader while the request's other
// partitions are verified would otherwise append the batch without a
// verification guard and refuse it INVALID_TXN_STATE, an error kgo hands to
// the application instead of retrying (seen after a leader was killed -9).
func TestTxnProduceVerificationOfAFollowerReplica(t *testing.T) {
	c := startReplicatedCluster(t, 2, nil)
	const topic = "txn-follower"
	c.createTopic(topic, 1, 2, nil)
	follower := -1
	waitFor(t, 10*time.Second, "a leader and a follower of "+topic, func() bool {
		leaders := 0
		for i := range c.srvs {
			if c.partitionOn(i, topic, 0).IsLeader() {
				leaders++
			} else {
				follower = i
			}
		}
		return leaders == 1 && follower >= 0
	})

	b := recordbatch.NewBuilder(time.Now().UnixMilli())
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = 1000, 0, 0, true
	b.Add(nil, []byte("v"))
	req := kmsg.NewPtrProduceRequest()
	id := "txn-follower-id"
	req.TransactionID = &id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b.Build()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	for _, version := range []int16{11, 12} {
		check := c.srvs[follower].verifyTransaction(req, version)
		code, _, failed := check.failure(topic, 0)
		if !failed || code != kerr.NotLeaderForPartition.Code {
			t.Errorf("produce v%d on the follower: verification answers %v (failed %v), want NOT_LEADER_OR_FOLLOWER",
				version, kerr.ErrorForCode(code), failed)
		}
		if g := check.guard(topic, 0); g != nil {
			t.Errorf("produce v%d on the follower: a verification guard was started", version)
		}
	}
}
