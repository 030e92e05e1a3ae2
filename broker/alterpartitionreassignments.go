package broker

// AlterPartitionReassignments (key 45); versions: see the registration below
// (v1 is KIP-860, Kafka 4.1).
//
// As Kafka 4.x's controller (QuorumController.alterPartitionReassignments and
// ReplicationControlManager.alterPartitionReassignments): each named
// partition, in request order, gets a new target replica list or, with null
// replicas, has its ongoing reassignment cancelled, with one result per
// mention: UNKNOWN_TOPIC_OR_PARTITION ("Unable to find a topic named t." /
// "Unable to find partition t:9."), INVALID_REPLICA_ASSIGNMENT (an empty,
// duplicated or unregistered target, or a cancellation that needs an unclean
// election the topic does not allow), NO_REASSIGNMENT_IN_PROGRESS (cancelling
// none) and, from v1 with allow_replication_factor_change false (KIP-860),
// INVALID_REPLICATION_FACTOR ("The replication factor is changed from 3 to
// 2"). The response echoes allow_replication_factor_change. An empty topic
// list writes nothing and gets Kafka's default response.
//
// The work itself is the controller's (controller/reassign.go): the target
// replicas plus those being removed become the replica list, the new ones
// start following the leader, and the AlterPartition that brings every
// target replica into the ISR completes the move, after which the removed
// brokers delete their replicas (partitions.go). The response leaves once
// this broker's metadata cache shows the new state; it does not wait for the
// reassignment to finish (ListPartitionReassignments shows the progress).
// A failure of the whole request (REQUEST_TIMED_OUT when the timeout passes)
// is the top-level error, repeated on every named partition as Kafka's
// AlterPartitionReassignmentsRequest.getErrorResponse does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.AlterPartitionAssignments, 0, 1, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.Topics = []kmsg.AlterPartitionAssignmentsResponseTopic{}
	if !c.authorizeCluster(acl.OpAlter) { // authorize.go: getErrorResponse, every partition named
		code, msg := kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, code, &msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		x.respond(resp)
		return
	}
	if len(req.Topics) == 0 {
		// QuorumController answers a new, default response data: an empty
		// (not null) message and allow_replication_factor_change true.
		resp.ErrorMessage = kmsg.StringPtr("")
		x.respond(resp)
		return
	}
	// v0 has no field: its default, true, is what v0 means.
	allowRFChange := x.req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRFChange

	var reqs []controller.PartitionReassignment
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			var replicas []int32
			if rp.Replicas != nil { // null cancels; [] is an (invalid) empty target
				replicas = append([]int32{}, rp.Replicas...)
			}
			reqs = append(reqs, controller.PartitionReassignment{Topic: rt.Topic, Partition: rp.Partition, Replicas: replicas})
		}
	}
	ctx, cancel := requestContext(req.TimeoutMillis)
	defer cancel()
	results, err := s.ctrl.AlterPartitionReassignments(ctx, reqs,
		controller.ReassignmentOptions{DisallowReplicationFactorChange: !allowRFChange})
	if err != nil {
		// getErrorResponse builds fresh response data: the flag at its
		// default, true.
		code, msg := s.apiErrorFields(err, "AlterPartitionReassignments", "")
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.AllowReplicationFactorChange = true
	}

	i := 0
	for _, rt := range req.Topics {
		t := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		t.Topic = rt.Topic
		t.Partitions = []kmsg.AlterPartitionAssignmentsResponseTopicPartition{}
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case err != nil:
				p.ErrorCode, p.ErrorMessage = resp.ErrorCode, resp.ErrorMessage
			case i >= len(results): // the controller answers every mention; never index past it
				p.ErrorCode = kerr.UnknownServerError.Code
			default:
				p.ErrorCode, p.ErrorMessage = s.apiErrorFields(results[i].Err, "AlterPartitionReassignments", rt.Topic)
			}
			i++
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	x.respond(resp)
}
