package broker

// UnregisterBroker (key 64); versions: see the registration below.
//
// `kafka-cluster unregister --id N`. Kafka's broker forwards it to the
// controller, which removes the registration of any registered broker
// (ReplicationControlManager.unregisterBroker: its partitions lose it as
// leader and ISR member; a broker still running registers again on its
// next heartbeat). Here the registration's lease is revoked, with the same
// effect (controller.UnregisterBroker). As ControllerApis answers: ALTER on
// the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED; a node id with no
// registration (a stopped broker's lapses with its lease):
// BROKER_ID_NOT_REGISTERED; error codes only, no message.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.UnregisterBroker, 0, 0, handleUnregisterBroker) }

func handleUnregisterBroker(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !c.authorizeCluster(acl.OpAlter) { // authorize.go
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		x.respond(resp)
		return
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	switch err := c.srv.ctrl.UnregisterBroker(ctx, req.BrokerID); {
	case errors.Is(err, controller.ErrBrokerNotRegistered):
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		msg := fmt.Sprintf("Broker ID not registered: %d", req.BrokerID) // Kafka's BrokerIdNotRegisteredException
		resp.ErrorMessage = &msg
	case err != nil:
		resp.ErrorCode, _ = c.srv.apiErrorFields(err, "UnregisterBroker", "")
	}
	x.respond(resp)
}
