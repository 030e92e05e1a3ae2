package broker

// ListPartitionReassignments (key 46); versions: see the registration below.
//
// The partitions being reassigned, with their full replica set and the
// replicas being added and removed, from the partition states in etcd: all
// of them for a null topic list, else those of the requested partitions.
// Topics that do not exist and partitions not being reassigned are left out,
// as Kafka's controller does; with no reassignment in progress the list is
// empty.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ListPartitionReassignments, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	if !c.authorizeCluster(acl.OpDescribe) { // authorize.go
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}

	add := func(t controller.TopicInfo, partitions []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, pi := range t.Partitions {
			if partitions != nil && !slices.Contains(partitions, pi.Partition) {
				continue
			}
			if len(pi.AddingReplicas) == 0 && len(pi.RemovingReplicas) == 0 {
				continue
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = pi.Partition
			rp.Replicas = slices.Clone(pi.Replicas)
			rp.AddingReplicas = append([]int32{}, pi.AddingReplicas...)
			rp.RemovingReplicas = append([]int32{}, pi.RemovingReplicas...)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if req.Topics == nil {
		for _, t := range s.ctrl.Topics() {
			add(t, nil)
		}
	} else {
		for _, rt := range req.Topics {
			if t, ok := s.ctrl.Topic(rt.Topic); ok {
				add(t, append([]int32{}, rt.Partitions...))
			}
		}
	}
	x.respond(resp)
}
