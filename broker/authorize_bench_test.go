package broker

import (
	"fmt"
	"net"
	"testing"

	"github.com/strait/strait/security/acl"
)

// remoteOnly is a net.Conn whose only use here is its remote address.
type remoteOnly struct {
	net.Conn
	addr net.Addr
}

func (r remoteOnly) RemoteAddr() net.Addr { return r.addr }

// BenchmarkAuthorizeTopic is what Produce and Fetch pay per topic: one
// decision through the connection's helper, with the authorizer holding
// 1,000 ACLs (a quarter PREFIXED) and, for comparison, without one.
func BenchmarkAuthorizeTopic(b *testing.B) {
	var bs []acl.Binding
	for i := 0; i < 1000; i++ {
		pt := acl.PatternLiteral
		if i%4 == 0 {
			pt = acl.PatternPrefixed
		}
		bs = append(bs, acl.Binding{ResourceType: acl.ResourceTopic, Name: fmt.Sprintf("topic-%d", i), Pattern: pt,
			Principal: "User:ANONYMOUS", Host: "*", Operation: acl.OpWrite, Permission: acl.PermissionAllow})
	}
	set := acl.NewSet(bs)
	nc := remoteOnly{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}}
	for _, tc := range []struct {
		name  string
		authz *acl.Standard
	}{
		{"none", nil},
		{"1000-acls", &acl.Standard{ACLs: func() *acl.Set { return set }}},
	} {
		c := &conn{srv: &Server{authz: tc.authz}, nc: nc}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !c.authorizeTopic(acl.OpWrite, "topic-613") {
					b.Fatal("denied")
				}
			}
		})
	}
}
