package broker

// DescribeCluster (key 60); versions: see the registration below.
//
// The cluster id, the active controller's node id and every live broker with
// the endpoint of the listener the request came in on (as Metadata lists
// them). Strait's controller is one of the brokers (elected through etcd), so
// the endpoint type a client may ask for is BROKER; CONTROLLER is
// MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0) and an unknown type
// UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers. No broker is ever
// listed as fenced (v2): a broker whose registration lapsed is not listed at
// all. With no authorizer every cluster operation is allowed, so
// include_cluster_authorized_operations gets Kafka's full set for a cluster.

import (
	"math"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeCluster, 0, 2, handleDescribeCluster) }

// Kafka's DescribeClusterRequest endpoint types.
const (
	endpointTypeBroker     int8 = 1
	endpointTypeController int8 = 2
)

// AclOperation bits of what may be done to a CLUSTER (CREATE, ALTER,
// DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE)
// and to a TOPIC (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
// DESCRIBE_CONFIGS, ALTER_CONFIGS): what Kafka reports without an authorizer.
const (
	clusterAuthorizedOperations int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	topicAuthorizedOperations   int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
)

func handleDescribeCluster(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeClusterRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	fail := func(code *kerr.Error, msg string) {
		if x.req.Version == 0 {
			code = kerr.InvalidRequest
		}
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		x.respond(resp)
	}
	switch req.EndpointType {
	case endpointTypeBroker:
	case endpointTypeController:
		fail(kerr.MismatchedEndpointType, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		return
	default:
		fail(kerr.UnsupportedEndpointType, "Unsupported endpoint type "+strconv.Itoa(int(req.EndpointType)))
		return
	}
	resp.ClusterID = s.ctrl.ClusterID()
	resp.ClusterAuthorizedOperations = math.MinInt32 // the schema's "not asked"
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = c.authorizedOperations(acl.ResourceCluster, acl.ClusterName, clusterAuthorizedOperations) // authorize.go
	}
	var ids []int32
	for _, b := range s.ctrl.Brokers() {
		ep, ok := endpointFor(b, c.listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.NodeID, ep.Host, ep.Port
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
		ids = append(ids, b.NodeID)
	}
	// A controller id the client cannot find among the brokers would only
	// confuse it: Kafka answers -1 then.
	resp.ControllerID = -1
	if id := s.ctrl.ControllerID(); slices.Contains(ids, id) {
		resp.ControllerID = id
	}
	x.respond(resp)
}
