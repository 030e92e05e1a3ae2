package broker

// ShareGroupDescribe (key 77, KIP-932): the share groups' state, epochs,
// members and assignments (coordinator/share). A group the principal may
// not DESCRIBE is GROUP_AUTHORIZATION_FAILED; one that is no share group
// here is GROUP_ID_NOT_FOUND.

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/share"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ShareGroupDescribe, 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ShareGroupDescribeRequest)
	var allowed, denied []string
	for _, id := range req.GroupIDs {
		if c.authorizeGroup(acl.OpDescribe, id) {
			allowed = append(allowed, id)
		} else {
			denied = append(denied, id)
		}
	}
	all := req.GroupIDs
	req.GroupIDs = allowed
	resp := c.srv.shares().Describe(req, func(id string) int32 {
		// Without an authorizer every group operation is allowed, as
		// Kafka answers (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS,
		// ALTER_CONFIGS).
		var all int32
		for _, op := range operationsOf[acl.ResourceGroup] {
			all |= 1 << op
		}
		return c.authorizedOperations(acl.ResourceGroup, id, all)
	})
	byID := map[string]kmsg.ShareGroupDescribeResponseGroup{}
	for _, g := range resp.Groups {
		byID[g.GroupID] = g
	}
	for _, id := range denied {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		msg := "Group authorization failed."
		g.ErrorCode, g.ErrorMessage = kerr.GroupAuthorizationFailed.Code, &msg
		g.AuthorizedOperations = -2147483648
		byID[id] = g
	}
	// Answer in the order asked.
	resp.Groups = resp.Groups[:0]
	for _, id := range all {
		resp.Groups = append(resp.Groups, byID[id])
	}
	x.respond(resp)
}

// addShareGroups adds the share groups this broker coordinates to a
// ListGroups answer (type "share", protocol type "share"), with the
// request's state and type filters, in group order.
func addShareGroups(sc *share.Coordinator, req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse) {
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[strings.ToLower(strings.TrimSpace(s))] = true
	}
	types := map[string]bool{}
	for _, t := range req.TypesFilter {
		types[strings.ToLower(strings.TrimSpace(t))] = true
	}
	if len(types) > 0 && !types["share"] {
		return
	}
	added := false
	for _, g := range sc.List() {
		if len(states) > 0 && !states[strings.ToLower(g.State)] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State, "share"
		resp.Groups = append(resp.Groups, lg)
		added = true
	}
	if added {
		slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	}
}

// deleteShareGroups deletes the share groups among req's groups (removing
// them from req) and returns their answers: NON_EMPTY_GROUP while a member
// is live, else the stored state of the share-partitions the group
// initialized is deleted at the share coordinators (sharestate.go), their
// topics recorded as deleting meanwhile, then the group (kept, with the
// error, when that fails).
func deleteShareGroups(s *Server, req *kmsg.DeleteGroupsRequest) []kmsg.DeleteGroupsResponseGroup {
	sc := s.shares()
	var out []kmsg.DeleteGroupsResponseGroup
	req.Groups = slices.DeleteFunc(req.Groups, func(id string) bool {
		if !sc.IsShareGroup(id) {
			return false
		}
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = id
		if !sc.GroupEmpty(id) {
			r.ErrorCode = kerr.NonEmptyGroup.Code
		} else if parts, code := sc.BeginDelete(id, nil); code != 0 {
			r.ErrorCode = code
		} else if code := s.shareState().deleteGroup(id, parts, time.Now().Add(shareStateTimeout)); code != 0 {
			r.ErrorCode = code
		} else {
			r.ErrorCode, _ = sc.Delete(id)
		}
		out = append(out, r)
		return true
	})
	return out
}
