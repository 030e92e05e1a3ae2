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

// AuthorizeByResourceType is Kafka's Authorizer.authorizeByResourceType:
// may the principal perform op on at least one resource of type rt? What
// an idempotent producer's InitProducerId asks (WRITE on some TOPIC). The
// principal is allowed when it is a super user or the decision for a
// resource named "hardcode" allows it (Kafka's own shortcut, which also
// lets allow.everyone.if.no.acl.found apply), or when one of its ALLOW
// bindings (op or ALL) is not dominated by a DENY: a DENY on the wildcard
// refuses outright, a literal ALLOW is dominated by a literal DENY of the
// same name, and any ALLOW by a PREFIXED DENY on a prefix of its name.
func (a *Standard) AuthorizeByResourceType(rc RequestContext, op Operation, rt ResourceType) bool {
	if a.Authorize(rc, op, rt, "hardcode") {
		return true
	}
	ti := a.ACLs().byType[rt]
	if ti == nil {
		return false
	}
	applies := func(b Binding) bool {
		return (b.Host == rc.Host || b.Host == Wildcard) &&
			(b.Principal == rc.Principal || b.Principal == WildcardPrincipal) &&
			(b.Operation == op || b.Operation == OpAll)
	}
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	for name, bs := range ti.literal {
		for _, b := range bs {
			if !applies(b) {
				continue
			}
			switch {
			case b.Permission == PermissionDeny && name == Wildcard:
				return false
			case b.Permission == PermissionDeny:
				denyLiteral[name] = true
			case b.Permission == PermissionAllow && name == Wildcard:
				allowLiteral = append(allowLiteral, Wildcard) // allows, unless a wildcard DENY is met
			case b.Permission == PermissionAllow:
				allowLiteral = append(allowLiteral, name)
			}
		}
	}
	for name, bs := range ti.prefixed {
		for _, b := range bs {
			if !applies(b) {
				continue
			}
			switch b.Permission {
			case PermissionDeny:
				denyPrefix[name] = true
			case PermissionAllow:
				allowPrefix = append(allowPrefix, name)
			}
		}
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefix[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if name == Wildcard {
			return true
		}
	}
	for _, name := range allowLiteral {
		if !denyLiteral[name] && !dominated(name) {
			return true
		}
	}
	for _, name := range allowPrefix {
		if !dominated(name) {
			return true
		}
	}
	return false
}
