package broker

// DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31);
// versions: see the registrations below (Kafka 4 removed v0, KIP-896).
//
// As Kafka's AclApis. A request naming the UNKNOWN code (0) of a resource
// type, pattern type, operation or permission does not parse in Kafka (the
// request classes' validation) and closes the connection, here too. The
// principal needs DESCRIBE (DescribeAcls) or ALTER (the others) on the
// CLUSTER, else CLUSTER_AUTHORIZATION_FAILED. Without authorizer.class.name
// every one of them is answered with SECURITY_DISABLED and Kafka's message,
// which is what the ACL pages of the admin UIs and MirrorMaker's ACL sync
// expect from a cluster without ACLs. With it, the bindings are the
// controller's (stored in etcd): Describe matches its filter against the
// cached set, Create validates each binding (INVALID_REQUEST with Kafka's
// messages) and stores the rest, Delete returns what each filter matched.

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() {
	register(kmsg.DescribeACLs, 1, 3, handleDescribeAcls)
	register(kmsg.CreateACLs, 1, 3, handleCreateAcls)
	register(kmsg.DeleteACLs, 1, 3, handleDeleteAcls)
}

// Kafka's messages without an authorizer; DescribeAcls has its own wording.
var (
	noAuthorizerMsg         = "No Authorizer is configured."
	noAuthorizerDescribeMsg = "No Authorizer is configured on the broker"
)

// anyUnknownCode reports a field sent as the UNKNOWN code, 0.
func anyUnknownCode(codes ...int8) bool { return slices.Contains(codes, 0) }

// refuseUnparsable closes the connection without an answer, as Kafka does
// for a request its request class refuses to build.
func refuseUnparsable(c *conn, x *exchange, api string) {
	c.logRefused("malformed "+api, errUnknownACLElements)
	x.closeConn = true
	x.noResponse()
}

type aclRequestError string

func (e aclRequestError) Error() string { return string(e) }

const errUnknownACLElements = aclRequestError("a resource type, pattern type, operation or permission is UNKNOWN (0)")

func handleDescribeAcls(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeACLsRequest)
	if anyUnknownCode(int8(req.ResourceType), int8(req.ResourcePatternType), int8(req.Operation), int8(req.PermissionType)) {
		refuseUnparsable(c, x, "DescribeAcls")
		return
	}
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	switch {
	case !c.authorizeCluster(acl.OpDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	case c.srv.authz == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, &noAuthorizerDescribeMsg
	default:
		f := acl.Filter{ResourceType: acl.ResourceType(req.ResourceType), Name: req.ResourceName,
			Pattern: acl.PatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
			Operation: acl.Operation(req.Operation), Permission: acl.Permission(req.PermissionType)}
		resp.Resources = describedResources(c.srv.ctrl.ACLs().Match(f))
	}
	x.respond(resp)
}

// describedResources groups bindings by resource pattern
// (DescribeAclsResponse.aclsResources), in a stable order.
func describedResources(bs []acl.Binding) []kmsg.DescribeACLsResponseResource {
	type pattern struct {
		rt   acl.ResourceType
		name string
		pt   acl.PatternType
	}
	var out []kmsg.DescribeACLsResponseResource
	idx := map[pattern]int{}
	for _, b := range bs {
		p := pattern{b.ResourceType, b.Name, b.Pattern}
		i, ok := idx[p]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
			out = append(out, r)
			i = len(out) - 1
			idx[p] = i
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		out[i].ACLs = append(out[i].ACLs, a)
	}
	slices.SortStableFunc(out, func(a, b kmsg.DescribeACLsResponseResource) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ResourcePatternType, b.ResourcePatternType),
			cmp.Compare(a.ResourceName, b.ResourceName))
	})
	return out
}

// aclAlterRefused is CreateAcls' and DeleteAcls' check of the whole
// request (ALTER on the cluster, then an authorizer to hold the bindings):
// the error code and message of every result, 0 when it may go on.
func (c *conn) aclAlterRefused() (int16, *string) {
	switch {
	case !c.authorizeCluster(acl.OpAlter):
		return kerr.ClusterAuthorizationFailed.Code, nil
	case c.srv.authz == nil:
		return kerr.SecurityDisabled.Code, &noAuthorizerMsg
	}
	return 0, nil
}

func handleCreateAcls(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.CreateACLsRequest)
	for _, cr := range req.Creations {
		if anyUnknownCode(int8(cr.ResourceType), int8(cr.ResourcePatternType), int8(cr.Operation), int8(cr.PermissionType)) {
			refuseUnparsable(c, x, "CreateAcls")
			return
		}
	}
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	code, msg := c.aclAlterRefused()
	var errs []error
	if code == 0 {
		bs := make([]acl.Binding, 0, len(req.Creations))
		for _, cr := range req.Creations {
			bs = append(bs, acl.Binding{ResourceType: acl.ResourceType(cr.ResourceType), Name: cr.ResourceName,
				Pattern: acl.PatternType(cr.ResourcePatternType), Principal: cr.Principal, Host: cr.Host,
				Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.PermissionType)})
		}
		ctx, cancel := requestContext(0)
		defer cancel()
		var err error
		if errs, err = c.srv.ctrl.CreateACLs(ctx, bs); err != nil {
			code, msg = c.srv.apiErrorFields(err, "CreateAcls", "")
		}
	}
	for i := range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = code, msg
		if errs != nil {
			r.ErrorCode, r.ErrorMessage = c.srv.apiErrorFields(errs[i], "CreateAcls", "")
		}
		resp.Results = append(resp.Results, r)
	}
	x.respond(resp)
}

func handleDeleteAcls(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DeleteACLsRequest)
	for _, f := range req.Filters {
		if anyUnknownCode(int8(f.ResourceType), int8(f.ResourcePatternType), int8(f.Operation), int8(f.PermissionType)) {
			refuseUnparsable(c, x, "DeleteAcls")
			return
		}
	}
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	code, msg := c.aclAlterRefused()
	var results []controller.ACLDeleteResult
	if code == 0 {
		fs := make([]acl.Filter, 0, len(req.Filters))
		for _, f := range req.Filters {
			fs = append(fs, acl.Filter{ResourceType: acl.ResourceType(f.ResourceType), Name: f.ResourceName,
				Pattern: acl.PatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
				Operation: acl.Operation(f.Operation), Permission: acl.Permission(f.PermissionType)})
		}
		ctx, cancel := requestContext(0)
		defer cancel()
		var err error
		if results, err = c.srv.ctrl.DeleteACLs(ctx, fs); err != nil {
			code, msg = c.srv.apiErrorFields(err, "DeleteAcls", "")
		}
	}
	for i := range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = code, msg
		if results != nil {
			res := results[i]
			r.ErrorCode, r.ErrorMessage = c.srv.apiErrorFields(res.Err, "DeleteAcls", "")
			for _, b := range res.Deleted {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
				m.Principal, m.Host = b.Principal, b.Host
				m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
				r.MatchingACLs = append(r.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	x.respond(resp)
}
