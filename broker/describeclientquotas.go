package broker

// DescribeClientQuotas (key 48); versions: see the registration below.
//
// As Kafka 4's metadata image answers it (ClientQuotasImage.describe), from
// the controller's watch cache: the entities matching the filter's
// components (exact name, default, or any name of a type; strict: no other
// types), empty where no quota is set. A filter Kafka refuses is answered
// with its code and message for the whole request. Kafka requires
// DESCRIBE_CONFIGS on CLUSTER (CLUSTER_AUTHORIZATION_FAILED for the whole
// request); with no authorizer every connection may.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/quota"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeClientQuotas, 0, 1, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !c.authorizeCluster(acl.OpDescribeConfigs) { // authorize.go
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}
	comps := make([]quota.Component, 0, len(req.Components))
	for _, cp := range req.Components {
		comps = append(comps, quota.Component{EntityType: cp.EntityType, MatchType: int8(cp.MatchType), Match: cp.Match})
	}
	entries, qerr := c.srv.ctrl.ClientQuotas().Describe(comps, req.Strict)
	if qerr != nil {
		// DescribeClientQuotasRequest.getErrorResponse: no entries.
		resp.ErrorCode, resp.ErrorMessage = qerr.Code, &qerr.Message
		x.respond(resp)
		return
	}
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(entries))
	for _, e := range entries {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Entity.Parts() {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.Type, p.Name
			re.Entity = append(re.Entity, ee)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			re.Values = append(re.Values, v)
		}
		resp.Entries = append(resp.Entries, re)
	}
	x.respond(resp)
}
