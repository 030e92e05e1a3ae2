package acl

import (
	"net/netip"
	"strconv"
	"strings"
)

// Authorizer decides whether a request may perform an operation on a
// resource: Kafka's org.apache.kafka.server.authorizer.Authorizer as the
// broker consults it.
type Authorizer interface {
	Authorize(rc RequestContext, op Operation, rt ResourceType, name string) bool
}

// RequestContext is who asks: the principal as Kafka writes it
// ("User:alice"; Kafka compares type and name only) and the client's
// address, also as Kafka's ACLs name it (InetAddress.getHostAddress: dotted
// IPv4, uncompressed IPv6). A connection makes it once.
type RequestContext struct {
	Principal string
	Addr      netip.Addr
	Host      string
}

// NewRequestContext is the context of principal connected from addr.
func NewRequestContext(principal string, addr netip.Addr) RequestContext {
	return RequestContext{Principal: principal, Addr: addr, Host: JavaHostAddress(addr)}
}

// JavaHostAddress writes addr as Java's InetAddress.getHostAddress does.
func JavaHostAddress(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case !addr.IsValid():
		return ""
	case addr.Is4():
		return addr.String()
	}
	b := addr.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := addr.Zone(); z != "" {
		sb.WriteString("%" + z)
	}
	return sb.String()
}

// Standard is Kafka's StandardAuthorizer over the bindings ACLs returns:
// super users may do everything; otherwise a matching DENY refuses, a
// matching ALLOW permits, and a resource without any binding is allowed
// only with AllowIfNoACL.
type Standard struct {
	ACLs         func() *Set // the current bindings; never nil
	SuperUsers   map[string]bool
	AllowIfNoACL bool
}

var _ Authorizer = (*Standard)(nil)

// Operations a matching ALLOW binding implies (StandardAuthorizerData's
// IMPLIES_DESCRIBE and IMPLIES_DESCRIBE_CONFIGS); a DENY implies nothing.
func implies(granted, asked Operation) bool {
	switch {
	case granted == OpAll || granted == asked:
		return true
	case asked == OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case asked == OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// Authorize implements Authorizer.
func (a *Standard) Authorize(rc RequestContext, op Operation, rt ResourceType, name string) bool {
	if a.SuperUsers[rc.Principal] {
		return true
	}
	return a.decide(a.ACLs(), rc, op, rt, name)
}

func (a *Standard) decide(s *Set, rc RequestContext, op Operation, rt ResourceType, name string) bool {
	host := rc.Host
	found, allowed, denied := false, false, false
	s.forResource(rt, name, func(bs []Binding) bool {
		found = true
		for _, b := range bs {
			if b.Principal != rc.Principal && b.Principal != WildcardPrincipal {
				continue
			}
			if !hostMatches(b.Host, host, rc.Addr) {
				continue
			}
			switch b.Permission {
			case PermissionDeny:
				if b.Operation == OpAll || b.Operation == op {
					denied = true
					return false
				}
			case PermissionAllow:
				if implies(b.Operation, op) {
					allowed = true
				}
			}
		}
		return true
	})
	switch {
	case denied:
		return false
	case allowed:
		return true
	}
	return !found && a.AllowIfNoACL
}

// ParseSuperUsers reads super.users: principals separated by semicolons
// (Kafka's StandardAuthorizer.getConfiguredSuperUsers).
func ParseSuperUsers(v string) map[string]bool {
	out := map[string]bool{}
	for _, p := range strings.Split(v, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out[p] = true
		}
	}
	return out
}
