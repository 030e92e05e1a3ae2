package broker

// AlterClientQuotas (key 49); versions: see the registration below.
//
// As Kafka 4's controller (ClientQuotaControlManager.alterClientQuotas):
// entities of user and/or client-id, or of ip, each named or the default
// (a null name); the keys each accepts, values above 0 and integral for the
// byte rates and connection_creation_rate; a removal of a key not set is no
// change; validate_only judges without writing. The quotas live in etcd
// (controller/quotas.go) and every broker's cache sees the change; the
// request returns once this broker's does. Kafka requires ALTER_CONFIGS on
// CLUSTER (CLUSTER_AUTHORIZATION_FAILED for every entity); with no
// authorizer every connection may.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/quota"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.AlterClientQuotas, 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AlterClientQuotasRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	alts := make([]quota.Alteration, 0, len(req.Entries))
	for _, e := range req.Entries {
		a := quota.Alteration{}
		for _, p := range e.Entity {
			a.Parts = append(a.Parts, quota.Part{Type: p.Type, Name: p.Name})
		}
		for _, op := range e.Ops {
			a.Ops = append(a.Ops, quota.Op{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		alts = append(alts, a)
	}
	addEntry := func(parts []quota.Part, code int16, msg *string) {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode, re.ErrorMessage = code, msg
		for _, p := range parts {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.Type, p.Name
			re.Entity = append(re.Entity, ee)
		}
		resp.Entries = append(resp.Entries, re)
	}
	if !c.authorizeCluster(acl.OpAlterConfigs) { // authorize.go; as ControllerApis: every entity refused
		msg := kerr.ClusterAuthorizationFailed.Description
		for _, a := range alts {
			addEntry(a.Parts, kerr.ClusterAuthorizationFailed.Code, &msg)
		}
		x.respond(resp)
		return
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	results, err := s.ctrl.AlterClientQuotas(ctx, alts, req.ValidateOnly)
	if err != nil {
		// AlterClientQuotasRequest.getErrorResponse: the error for every entity.
		code, msg := s.apiErrorFields(err, "AlterClientQuotas", "")
		for _, a := range alts {
			addEntry(a.Parts, code, msg)
		}
		x.respond(resp)
		return
	}
	for _, r := range results {
		if r.Err != nil {
			m := r.Err.Message
			addEntry(r.Parts, r.Err.Code, &m)
		} else {
			addEntry(r.Parts, 0, nil)
		}
	}
	x.respond(resp)
}
