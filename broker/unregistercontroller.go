package broker

// UnregisterController (key 94, Kafka 4.4: KIP-1312); versions: see the
// registration below.
//
// `kafka-cluster unregister-controller --id N`. Kafka's controller removes
// controller N's registration, which outlives its removal from the voters
// (ClusterControlManager.unregisterController). Strait's controller
// registrations are the records naming the broker of each embedded etcd
// member (controller/quorum.go): those of members no longer in the etcd
// cluster (removed with RemoveRaftVoter) are deleted; that of a member
// still in it stays, as a running Kafka controller registers again at once.
// As ControllerApis: ALTER on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED);
// no record: CONTROLLER_ID_NOT_REGISTERED, "Controller ID N is not currently
// registered.".

import (
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.UnregisterController, 0, 0, handleUnregisterController) }

func handleUnregisterController(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.UnregisterControllerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
	if !c.authorizeCluster(acl.OpAlter) { // authorize.go
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	switch err := c.srv.ctrl.UnregisterController(ctx, req.ControllerID); {
	case errors.Is(err, controller.ErrControllerNotRegistered):
		msg := "Controller ID " + strconv.Itoa(int(req.ControllerID)) + " is not currently registered."
		resp.ErrorCode, resp.ErrorMessage = kerr.ControllerIDNotRegistered.Code, &msg
	case err != nil:
		resp.ErrorCode, resp.ErrorMessage = c.srv.apiErrorFields(err, "UnregisterController", "")
	}
	x.respond(resp)
}
