package broker

// Authorization: the one place a handler asks whether the connection's
// principal may do something, as KafkaApis asks its AuthHelper. Each
// resource type has its helper (authorizeCluster, authorizeTopic, ...), so a
// handler states what it authorizes in a line. Without authorizer.class.name
// every helper allows everything at the cost of a nil check; with it, the
// decision is the acl.Standard authorizer's over the controller's cached
// ACLs, never an etcd round trip.

import (
	"net"
	"net/netip"

	"github.com/strait/strait/security/acl"
)

// newAuthorizer builds the authorizer the configuration asks for, nil for
// none. It reads the ACLs from the controller's cache, which Start creates.
func newAuthorizer(s *Server) *acl.Standard {
	a := s.cfg.Security.Authorizer
	if !a.Enabled {
		return nil
	}
	super := map[string]bool{}
	for _, u := range a.SuperUsers {
		super[u] = true
	}
	return &acl.Standard{
		ACLs: func() *acl.Set {
			if s.ctrl == nil {
				return acl.EmptySet
			}
			return s.ctrl.ACLs()
		},
		SuperUsers:   super,
		AllowIfNoACL: a.AllowEveryoneIfNoACL,
	}
}

// requestContext is who the connection is, as the authorizer sees it.
func (c *conn) requestContext() acl.RequestContext {
	var addr netip.Addr
	if ta, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		addr, _ = netip.AddrFromSlice(ta.IP)
	}
	return acl.NewRequestContext(c.principal().String(), addr)
}

// authorize is the decision for one operation on one resource.
func (c *conn) authorize(op acl.Operation, rt acl.ResourceType, name string) bool {
	a := c.srv.authz
	if a == nil {
		return true
	}
	return a.Authorize(c.requestContext(), op, rt, name)
}

// authorizeCluster is AuthHelper.authorize on the CLUSTER resource.
func (c *conn) authorizeCluster(op acl.Operation) bool {
	return c.authorize(op, acl.ResourceCluster, acl.ClusterName)
}

// authorizeTopic is the decision on a TOPIC.
func (c *conn) authorizeTopic(op acl.Operation, topic string) bool {
	return c.authorize(op, acl.ResourceTopic, topic)
}

// authorizeGroup is the decision on a GROUP.
func (c *conn) authorizeGroup(op acl.Operation, group string) bool {
	return c.authorize(op, acl.ResourceGroup, group)
}

// authorizeTransactionalID is the decision on a TRANSACTIONAL_ID.
func (c *conn) authorizeTransactionalID(op acl.Operation, id string) bool {
	return c.authorize(op, acl.ResourceTransactionalID, id)
}
