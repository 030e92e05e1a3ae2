package broker

// AddRaftVoter (key 80) and RemoveRaftVoter (key 81); versions: see the
// registrations below.
//
// `kafka-metadata-quorum add-controller / remove-controller`. Kafka's broker
// forwards them to the controller, whose raft leader changes the voter set.
// Strait's voters are the etcd members (describequorum.go), so with the
// embedded etcd these change its membership, in etcd's steps:
//
//   - AddRaftVoter with a listener named ETCD_PEER (the one DescribeQuorum
//     lists; its host and port make the member's peer URL): a URL no member
//     has is added as a learner, and the answer is Kafka's "not ready"
//     REQUEST_TIMED_OUT, since etcd needs the member announced before it
//     starts (its broker then starts with etcd.initial.cluster.state=
//     existing); the same request once the learner is in sync promotes it
//     to voter (before: REQUEST_TIMED_OUT, lagging behind, as Kafka). The
//     member is recorded as the voter id's broker.
//   - RemoveRaftVoter: the member listed with that voter id and directory
//     id (DescribeQuorum's) leaves the cluster.
//
// With an external etcd (etcd.endpoints) the quorum is static, as a Kafka
// cluster at kraft.version 0, and both answer Kafka's UNSUPPORTED_VERSION
// for that. Checked first, as Kafka: ALTER on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED), the cluster id when given
// (INCONSISTENT_CLUSTER_ID), a voter with a directory id (INVALID_REQUEST).

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() {
	register(kmsg.AddRaftVoter, 0, 1, handleAddRaftVoter)
	register(kmsg.RemoveRaftVoter, 0, 0, handleRemoveRaftVoter)
}

// quorumListener is the listener name of the members' peer URLs.
const quorumListener = "ETCD_PEER"

// voterRefusal is the error code and message a voter change is refused
// with, or a zero code.
type voterRefusal struct {
	code int16
	msg  string
}

// voterPreamble runs the checks both APIs make before the change itself.
func voterPreamble(c *conn, clusterID *string, dir [16]byte, verb string) voterRefusal {
	switch {
	case !c.authorizeCluster(acl.OpAlter): // authorize.go
		return voterRefusal{kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Description}
	case clusterID != nil && *clusterID != c.srv.ctrl.ClusterID():
		return voterRefusal{kerr.InconsistentClusterID.Code,
			fmt.Sprintf("The given id %q doesn't match the cluster id %q", *clusterID, c.srv.ctrl.ClusterID())}
	case c.srv.kraftVersion() == 0:
		return voterRefusal{kerr.UnsupportedVersion.Code,
			"Cluster doesn't support " + verb + " voter because the kraft.version feature is 0"}
	case dir == [16]byte{}:
		what := "Add"
		if verb == "removing" {
			what = "Remove"
		}
		return voterRefusal{kerr.InvalidRequest.Code, what + " voter request didn't include a valid voter"}
	}
	return voterRefusal{}
}

// unhealthyRefusal answers a change etcd refused because a voter is not
// (or not long enough) connected: a timeout to retry, as Kafka's leader
// answers while the last voter change is not committed.
var unhealthyRefusal = voterRefusal{kerr.RequestTimedOut.Code,
	"Request timed out waiting for every voter to be connected (etcd's check before a membership change)"}

// replicaKey prints a voter as Kafka's ReplicaKey does.
func replicaKey(id int32, dir [16]byte) string {
	return fmt.Sprintf("ReplicaKey(id=%d, directoryId=Optional[%s])", id, controller.FormatUUID(dir))
}

// voterKeys prints the current voters as Kafka's VoterSet.voterKeys.
func voterKeys(q controller.Quorum) string {
	var keys []string
	for _, m := range q.Members {
		if !m.Learner {
			keys = append(keys, replicaKey(quorumReplicaID(m), memberDirectoryID(m.ID)))
		}
	}
	return "[" + strings.Join(keys, ", ") + "]"
}

func handleAddRaftVoter(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	refuse := func(r voterRefusal) {
		resp.ErrorCode, resp.ErrorMessage = r.code, &r.msg
		x.respond(resp)
	}
	if r := voterPreamble(c, req.ClusterID, req.VoterDirectoryID, "adding"); r.code != 0 {
		refuse(r)
		return
	}
	key := replicaKey(req.VoterID, req.VoterDirectoryID)
	var peer string
	var listeners []string
	for _, l := range req.Listeners {
		addr := net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		listeners = append(listeners, "ListenerName("+l.Name+")="+addr)
		if l.Name == quorumListener && peer == "" {
			peer = addr
		}
	}
	if peer == "" {
		refuse(voterRefusal{kerr.InvalidRequest.Code, fmt.Sprintf(
			"Add voter request didn't include the endpoint (Endpoints(endpoints={%s})) for the default listener %s",
			strings.Join(listeners, ", "), quorumListener)})
		return
	}
	scheme := "http"
	if c.srv.cfg.Etcd.Security.PeerCertFile != "" {
		scheme = "https"
	}
	ctx, cancel := requestContext(req.TimeoutMillis)
	defer cancel()
	q, err := c.srv.ctrl.Quorum(ctx)
	if err == nil {
		for _, m := range q.Members {
			if !m.Learner && quorumReplicaID(m) == req.VoterID {
				refuse(voterRefusal{kerr.DuplicateVoter.Code, fmt.Sprintf(
					"The voter id for %s is already part of the set of voters %s.", key, voterKeys(q))})
				return
			}
		}
		err = c.srv.ctrl.AddVoter(ctx, req.VoterID, scheme+"://"+peer)
	}
	switch {
	case err == nil:
		x.respond(resp)
	case errors.Is(err, controller.ErrMemberExists):
		refuse(voterRefusal{kerr.DuplicateVoter.Code, fmt.Sprintf(
			"The voter id for %s is already part of the set of voters %s.", key, voterKeys(q))})
	case errors.Is(err, controller.ErrMemberAddedLearner):
		refuse(voterRefusal{kerr.RequestTimedOut.Code, fmt.Sprintf(
			"New voter %s is not ready to receive requests: it was added to the etcd cluster as a learner; "+
				"start its broker with etcd.initial.cluster.state=existing, then add it again once it has caught up", key)})
	case errors.Is(err, controller.ErrUnhealthy):
		refuse(unhealthyRefusal)
	case errors.Is(err, controller.ErrLearnerNotReady):
		refuse(voterRefusal{kerr.RequestTimedOut.Code, fmt.Sprintf(
			"Aborted add voter operation for %s since it is lagging behind", key)})
	default:
		code, _ := c.srv.apiErrorFields(err, "AddRaftVoter", "")
		refuse(voterRefusal{code, fmt.Sprintf("Unable to add %s to the set of voters %s", key, voterKeys(q))})
	}
}

func handleRemoveRaftVoter(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	refuse := func(r voterRefusal) {
		resp.ErrorCode, resp.ErrorMessage = r.code, &r.msg
		x.respond(resp)
	}
	if r := voterPreamble(c, req.ClusterID, req.VoterDirectoryID, "removing"); r.code != 0 {
		refuse(r)
		return
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	q, err := c.srv.ctrl.Quorum(ctx)
	if err != nil {
		code, msg := c.srv.apiErrorFields(err, "RemoveRaftVoter", "")
		resp.ErrorCode, resp.ErrorMessage = code, msg
		x.respond(resp)
		return
	}
	for _, m := range q.Members {
		if quorumReplicaID(m) != req.VoterID || memberDirectoryID(m.ID) != req.VoterDirectoryID {
			continue
		}
		switch err := c.srv.ctrl.RemoveMember(ctx, m.ID); {
		case err == nil, errors.Is(err, controller.ErrMemberNotFound):
		case errors.Is(err, controller.ErrUnhealthy):
			refuse(unhealthyRefusal)
			return
		default:
			code, msg := c.srv.apiErrorFields(err, "RemoveRaftVoter", "")
			resp.ErrorCode, resp.ErrorMessage = code, msg
		}
		x.respond(resp)
		return
	}
	refuse(voterRefusal{kerr.VoterNotFound.Code, fmt.Sprintf("Cannot remove voter %s from the set of voters %s",
		replicaKey(req.VoterID, req.VoterDirectoryID), voterKeys(q))})
}
