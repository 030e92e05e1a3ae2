package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat (key 12) for the classic protocol.
func (c *Coordinator) Heartbeat(cl Client, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if c.closed.Load() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g, code := c.lockGroup(req.Group, false)
	if code == kerr.CoordinatorLoadInProgress.Code {
		// Kafka answers heartbeats blindly while the group loads.
		return resp
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	defer g.mu.Unlock()
	resp.ErrorCode = g.heartbeatLocked(req)
	return resp
}

func (g *group) heartbeatLocked(req *kmsg.HeartbeatRequest) int16 {
	if g.kind == kindConsumer {
		return g.classicHeartbeatConsumerLocked(req)
	}
	cg := &g.classic
	if cg.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != cg.generation {
		return kerr.IllegalGeneration.Code
	}
	m := cg.members[req.MemberID]
	switch cg.state {
	case stateEmpty:
		return kerr.UnknownMemberID.Code
	case statePreparingRebalance:
		g.rescheduleHeartbeatLocked(m, m.sessionTimeoutDuration())
		return kerr.RebalanceInProgress.Code
	default:
		// CompletingRebalance or Stable: members may heartbeat as soon as
		// they have their JoinGroup answer.
		g.rescheduleHeartbeatLocked(m, m.sessionTimeoutDuration())
		return 0
	}
}

// LeaveGroup (key 13): one member (v0-2) or a batch of members, by member
// id or, for static members, by group.instance.id (v3+).
func (c *Coordinator) LeaveGroup(cl Client, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if cl.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	// Old versions carry one member and its error at the top level.
	finish := func() *kmsg.LeaveGroupResponse {
		if cl.Version < 3 {
			if resp.ErrorCode == 0 && len(resp.Members) == 1 {
				resp.ErrorCode = resp.Members[0].ErrorCode
			}
			resp.Members = nil
		}
		return resp
	}
	if c.closed.Load() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return finish()
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return finish()
	}
	g, code := c.lockGroup(req.Group, false)
	if code != 0 {
		resp.ErrorCode = code
		return finish()
	}
	if g != nil && g.kind == kindConsumer {
		defer g.mu.Unlock()
		resp.Members = g.classicLeaveConsumerLocked(members)
		return finish()
	}
	if g == nil {
		// Unknown group: every member is unknown.
		for _, m := range members {
			resp.Members = append(resp.Members, leaveResult(m, kerr.UnknownMemberID.Code))
		}
		return finish()
	}
	defer g.mu.Unlock()
	if g.classic.state == stateDead {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return finish()
	}
	resp.Members = g.leaveLocked(members)
	return finish()
}

func leaveResult(m kmsg.LeaveGroupRequestMember, code int16) kmsg.LeaveGroupResponseMember {
	r := kmsg.NewLeaveGroupResponseMember()
	r.MemberID, r.InstanceID, r.ErrorCode = m.MemberID, m.InstanceID, code
	return r
}

func (g *group) leaveLocked(members []kmsg.LeaveGroupRequestMember) []kmsg.LeaveGroupResponseMember {
	cg := &g.classic
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(members))
	var left []string
	for _, rm := range members {
		reason := "not provided"
		if rm.Reason != nil {
			reason = *rm.Reason
		}
		switch {
		case rm.MemberID == "":
			// Administrative removal by group.instance.id.
			id, ok := "", false
			if rm.InstanceID != nil {
				id, ok = cg.static[*rm.InstanceID]
			}
			if !ok {
				out = append(out, leaveResult(rm, kerr.UnknownMemberID.Code))
				continue
			}
			g.leaveMemberLocked(id, reason)
			left = append(left, id)
		case cg.pending[rm.MemberID] != nil:
			g.removeMemberLocked(rm.MemberID)
			g.c.logger.Info("pending member left group", "group", g.id, "member", rm.MemberID, "reason", reason)
		default:
			if code := cg.validateMember(rm.MemberID, rm.InstanceID); code != 0 {
				out = append(out, leaveResult(rm, code))
				continue
			}
			g.leaveMemberLocked(rm.MemberID, reason)
			left = append(left, rm.MemberID)
		}
		out = append(out, leaveResult(rm, 0))
	}
	if len(left) > 0 {
		reason := "explicit LeaveGroup request for (" + strings.Join(left, ", ") + ") members"
		switch cg.state {
		case stateStable, stateCompletingRebalance:
			g.maybePrepareRebalanceOrCompleteJoinLocked(reason)
		case statePreparingRebalance:
			g.maybeCompleteJoinPhaseLocked()
		}
	}
	return out
}

func (g *group) leaveMemberLocked(id, reason string) {
	g.c.logger.Info("member left group", "group", g.id, "member", id, "reason", reason)
	g.removeMemberLocked(id)
}
