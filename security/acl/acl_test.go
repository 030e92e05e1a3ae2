package acl

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func allow(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	return Binding{rt, name, pt, principal, host, op, PermissionAllow}
}

func deny(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	return Binding{rt, name, pt, principal, host, op, PermissionDeny}
}

func ctx(principal, ip string) RequestContext {
	return NewRequestContext(principal, netip.MustParseAddr(ip))
}

func standard(allowIfNoACL bool, super string, bs ...Binding) *Standard {
	s := NewSet(bs)
	return &Standard{ACLs: func() *Set { return s }, SuperUsers: ParseSuperUsers(super), AllowIfNoACL: allowIfNoACL}
}

// The decisions of Kafka's StandardAuthorizer (its StandardAuthorizerTest
// and AuthorizerTest cover the same rules).
func TestAuthorize(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	const ip = "192.168.1.1"
	for _, tc := range []struct {
		name         string
		acls         []Binding
		allowIfNoACL bool
		super        string
		rc           RequestContext
		op           Operation
		rt           ResourceType
		res          string
		want         bool
	}{
		{"no acls, default deny", nil, false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", false},
		{"no acls, allow.everyone.if.no.acl.found", nil, true, "", ctx(alice, ip), OpRead, ResourceTopic, "t", true},
		{"acls on another resource only: allow.everyone applies", []Binding{allow(ResourceTopic, "u", PatternLiteral, bob, "*", OpRead)},
			true, "", ctx(alice, ip), OpRead, ResourceTopic, "t", true},
		{"an acl for someone else on the resource: allow.everyone does not apply", []Binding{allow(ResourceTopic, "t", PatternLiteral, bob, "*", OpRead)},
			true, "", ctx(alice, ip), OpRead, ResourceTopic, "t", false},
		{"super user without acls", nil, false, "User:admin; User:alice", ctx(alice, ip), OpAlter, ResourceCluster, ClusterName, true},
		{"super user despite a deny", []Binding{deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)},
			false, "User:alice", ctx(alice, ip), OpRead, ResourceTopic, "t", true},
		{"super users are exact principals", nil, false, "User:alice", ctx("User:alicex", ip), OpRead, ResourceTopic, "t", false},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", true},
		{"literal allow, other operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			false, "", ctx(alice, ip), OpWrite, ResourceTopic, "t", false},
		{"literal allow, other principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			false, "", ctx(bob, ip), OpRead, ResourceTopic, "t", false},
		{"literal is not a prefix", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "tt", false},
		{"resource types are separate", []Binding{allow(ResourceGroup, "t", PatternLiteral, alice, "*", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", false},
		{"deny wins over allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", false},
		{"wildcard deny wins over literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "*", PatternLiteral, WildcardPrincipal, "*", OpAll)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", false},
		{"prefixed deny wins over literal allow", []Binding{allow(ResourceTopic, "foo.bar", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "foo.", PatternPrefixed, alice, "*", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "foo.bar", false},
		{"deny on another host does not apply", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, alice, "10.0.0.1", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", true},
		{"deny READ does not deny DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDescribe), deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			false, "", ctx(alice, ip), OpDescribe, ResourceTopic, "t", true},
		{"deny ALL denies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDescribe), deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)},
			false, "", ctx(alice, ip), OpDescribe, ResourceTopic, "t", false},
		{"allow ALL", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)},
			false, "", ctx(alice, ip), OpDelete, ResourceTopic, "t", true},
		{"wildcard principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, "*", OpRead)},
			false, "", ctx(bob, ip), OpRead, ResourceTopic, "t", true},
		{"wildcard resource", []Binding{allow(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite)},
			false, "", ctx(alice, ip), OpWrite, ResourceTopic, "anything", true},
		{"prefixed", []Binding{allow(ResourceTopic, "foo", PatternPrefixed, alice, "*", OpWrite)},
			false, "", ctx(alice, ip), OpWrite, ResourceTopic, "foobar", true},
		{"prefixed equal to the name", []Binding{allow(ResourceTopic, "foo", PatternPrefixed, alice, "*", OpWrite)},
			false, "", ctx(alice, ip), OpWrite, ResourceTopic, "foo", true},
		{"prefixed longer than the name", []Binding{allow(ResourceTopic, "foobar", PatternPrefixed, alice, "*", OpWrite)},
			false, "", ctx(alice, ip), OpWrite, ResourceTopic, "foo", false},
		{"prefixed star is a prefix, not a wildcard", []Binding{allow(ResourceTopic, "*", PatternPrefixed, alice, "*", OpWrite)},
			false, "", ctx(alice, ip), OpWrite, ResourceTopic, "foo", false},
		{"host exact", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, ip, OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", true},
		{"host other", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "192.168.1.2", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", false},
		{"host CIDR", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "192.168.0.0/16", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", true},
		{"host CIDR outside", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "10.0.0.0/8", OpRead)},
			false, "", ctx(alice, ip), OpRead, ResourceTopic, "t", false},
		{"IPv6 host as Java writes it", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "0:0:0:0:0:0:0:1", OpRead)},
			false, "", ctx(alice, "::1"), OpRead, ResourceTopic, "t", true},
		{"IPv6 compressed form does not match", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "::1", OpRead)},
			false, "", ctx(alice, "::1"), OpRead, ResourceTopic, "t", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := standard(tc.allowIfNoACL, tc.super, tc.acls...)
			if got := a.Authorize(tc.rc, tc.op, tc.rt, tc.res); got != tc.want {
				t.Errorf("Authorize(%s %s %s %q) = %v, want %v", tc.rc.Principal, tc.op, tc.rt, tc.res, got, tc.want)
			}
		})
	}
}

// The implied operations: an ALLOW of READ, WRITE, DELETE or ALTER allows
// DESCRIBE; of ALTER_CONFIGS, DESCRIBE_CONFIGS; nothing else is implied.
func TestImpliedOperations(t *testing.T) {
	const alice = "User:alice"
	ops := []Operation{OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpClusterAction,
		OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpCreateTokens, OpDescribeTokens, OpTwoPhaseCommit}
	want := map[[2]Operation]bool{
		{OpRead, OpDescribe}: true, {OpWrite, OpDescribe}: true, {OpDelete, OpDescribe}: true, {OpAlter, OpDescribe}: true,
		{OpAlterConfigs, OpDescribeConfigs}: true,
	}
	for _, granted := range ops {
		a := standard(false, "", allow(ResourceTopic, "t", PatternLiteral, alice, "*", granted))
		for _, asked := range ops {
			w := granted == asked || want[[2]Operation{granted, asked}]
			if got := a.Authorize(ctx(alice, "127.0.0.1"), asked, ResourceTopic, "t"); got != w {
				t.Errorf("ALLOW %s, asked %s: %v, want %v", granted, asked, got, w)
			}
		}
	}
}

// naive is the decision by a scan of every binding: what the index must
// agree with.
func naive(bs []Binding, allowIfNoACL bool, rc RequestContext, op Operation, rt ResourceType, name string) bool {
	found, allowed := false, false
	for _, b := range bs {
		if b.ResourceType != rt {
			continue
		}
		applies := b.Pattern == PatternLiteral && (b.Name == name || b.Name == Wildcard) ||
			b.Pattern == PatternPrefixed && strings.HasPrefix(name, b.Name)
		if !applies {
			continue
		}
		found = true
		if b.Principal != rc.Principal && b.Principal != WildcardPrincipal || !hostMatches(b.Host, rc.Host, rc.Addr) {
			continue
		}
		if b.Permission == PermissionDeny && (b.Operation == OpAll || b.Operation == op) {
			return false
		}
		if b.Permission == PermissionAllow && implies(b.Operation, op) {
			allowed = true
		}
	}
	return allowed || !found && allowIfNoACL
}

// Random sets of bindings over a small alphabet of names, so that literal,
// prefix and wildcard bindings overlap: the index decides as the scan does.
func TestIndexAgreesWithScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "ab", "abc", "abd", "b", "ba", "*", "abcd", "x"}
	principals := []string{"User:alice", "User:bob", WildcardPrincipal}
	hosts := []string{"*", "10.0.0.1", "10.0.0.2", "10.0.0.0/24"}
	ops := []Operation{OpAll, OpRead, OpWrite, OpDescribe, OpAlter, OpAlterConfigs, OpDescribeConfigs}
	for round := 0; round < 300; round++ {
		var bs []Binding
		for i := r.IntN(12); i > 0; i-- {
			bs = append(bs, Binding{
				ResourceType: []ResourceType{ResourceTopic, ResourceGroup}[r.IntN(2)],
				Name:         names[r.IntN(len(names))],
				Pattern:      []PatternType{PatternLiteral, PatternPrefixed}[r.IntN(2)],
				Principal:    principals[r.IntN(len(principals))],
				Host:         hosts[r.IntN(len(hosts))],
				Operation:    ops[r.IntN(len(ops))],
				Permission:   []Permission{PermissionAllow, PermissionDeny}[r.IntN(2)],
			})
		}
		allowIfNoACL := r.IntN(2) == 0
		a := standard(allowIfNoACL, "", bs...)
		for _, name := range append(names, "abcde", "c") {
			for _, p := range principals[:2] {
				for _, ip := range []string{"10.0.0.1", "10.0.1.1"} {
					for _, op := range ops[1:] {
						rc := ctx(p, ip)
						if got, want := a.Authorize(rc, op, ResourceTopic, name), naive(bs, allowIfNoACL, rc, op, ResourceTopic, name); got != want {
							t.Fatalf("round %d: %s %s %s on %q: index %v, scan %v; acls %v", round, p, ip, op, name, got, want, bs)
						}
					}
				}
			}
		}
	}
}

// Kafka's AclBindingFilter.matches, as DescribeAcls and DeleteAcls use it.
func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead)
	pre := allow(ResourceTopic, "fo", PatternPrefixed, "User:alice", "*", OpRead)
	grp := deny(ResourceGroup, "foo", PatternLiteral, "User:bob", "10.0.0.1", OpAll)
	all := []Binding{lit, wild, pre, grp}
	anyF := Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}
	with := func(mod func(*Filter)) Filter { f := anyF; mod(&f); return f }
	for _, tc := range []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"everything", anyF, all},
		{"topics", with(func(f *Filter) { f.ResourceType = ResourceTopic }), []Binding{lit, wild, pre}},
		{"ANY pattern with a name: exact names of any pattern", with(func(f *Filter) { f.Name = str("foo") }), []Binding{lit, grp}},
		{"LITERAL with a name", with(func(f *Filter) { f.Name = str("foo"); f.Pattern = PatternLiteral }), []Binding{lit, grp}},
		{"LITERAL without a name", with(func(f *Filter) { f.Pattern = PatternLiteral }), []Binding{lit, wild, grp}},
		{"LITERAL star matches only the wildcard binding", with(func(f *Filter) { f.Name = str("*"); f.Pattern = PatternLiteral }), []Binding{wild}},
		{"PREFIXED with its prefix", with(func(f *Filter) { f.Name = str("fo"); f.Pattern = PatternPrefixed }), []Binding{pre}},
		{"PREFIXED with a longer name", with(func(f *Filter) { f.Name = str("foo"); f.Pattern = PatternPrefixed }), nil},
		{"MATCH: what applies to foo", with(func(f *Filter) { f.Name = str("foo"); f.Pattern = PatternMatch }), []Binding{lit, wild, pre, grp}},
		{"MATCH: what applies to fa", with(func(f *Filter) { f.Name = str("fa"); f.Pattern = PatternMatch; f.ResourceType = ResourceTopic }), []Binding{wild}},
		{"principal", with(func(f *Filter) { f.Principal = str("User:bob") }), []Binding{grp}},
		{"host", with(func(f *Filter) { f.Host = str("*") }), []Binding{lit, wild, pre}},
		{"operation ALL is not ANY", with(func(f *Filter) { f.Operation = OpAll }), []Binding{grp}},
		{"permission", with(func(f *Filter) { f.Permission = PermissionAllow }), []Binding{lit, wild, pre}},
		{"unknown resource type matches nothing", with(func(f *Filter) { f.ResourceType = 42 }), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewSet(all).Match(tc.f)
			if fmt.Sprint(got) != fmt.Sprint(NewSet(tc.want).Match(anyF)) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
	if err := with(func(f *Filter) { f.Pattern = 0 }).Unknown(); err == nil || err.Error() != "Unknown patternFilter." {
		t.Errorf("unknown pattern: %v", err)
	}
	if err := with(func(f *Filter) { f.Permission = 9 }).Unknown(); err == nil || err.Error() != "Unknown entryFilter." {
		t.Errorf("unknown permission: %v", err)
	}
	if err := anyF.Unknown(); err != nil {
		t.Errorf("any filter: %v", err)
	}
}

// What CreateAcls refuses, with Kafka 4.4's messages.
func TestValidate(t *testing.T) {
	ok := allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)
	with := func(mod func(*Binding)) Binding { b := ok; mod(&b); return b }
	for _, tc := range []struct {
		b    Binding
		want string
	}{
		{ok, ""},
		{allow(ResourceCluster, ClusterName, PatternLiteral, "User:a", "*", OpAlter), ""},
		{with(func(b *Binding) { b.Host = "10.0.0.0/8" }), ""},
		{with(func(b *Binding) { b.ResourceType = ResourceAny }), "Invalid resourceType ANY"},
		{with(func(b *Binding) { b.ResourceType = 99 }), "Invalid resourceType UNKNOWN"},
		{with(func(b *Binding) { b.Pattern = PatternMatch }), "Invalid patternType MATCH"},
		{with(func(b *Binding) { b.Operation = OpAny }), "Invalid operation ANY"},
		{with(func(b *Binding) { b.Permission = PermissionAny }), "Invalid permissionType ANY"},
		{with(func(b *Binding) { b.Name = "" }), "Invalid empty resource name"},
		{with(func(b *Binding) { b.ResourceType = ResourceCluster }), "The only valid name for the CLUSTER resource is kafka-cluster"},
		{with(func(b *Binding) { b.Principal = "alice" }), "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
		{with(func(b *Binding) { b.Host = "" }), "Host pattern cannot be null or empty"},
		{with(func(b *Binding) { b.Host = "10.0.0.0/99" }), "Invalid CIDR notation '10.0.0.0/99'"},
	} {
		err := tc.b.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.b, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.b, err, tc.want)
		}
	}
}

func TestParseSuperUsers(t *testing.T) {
	got := ParseSuperUsers(" User:a ;User:b;;")
	if len(got) != 2 || !got["User:a"] || !got["User:b"] {
		t.Errorf("%v", got)
	}
}

// The cost of one decision with 1,000 bindings (reported in BENCHMARKS.md
// by the broker's benchmark, not asserted here).
func BenchmarkAuthorize1000(b *testing.B) {
	var bs []Binding
	for i := 0; i < 1000; i++ {
		pt := PatternLiteral
		if i%4 == 0 {
			pt = PatternPrefixed
		}
		bs = append(bs, allow(ResourceTopic, fmt.Sprintf("topic-%d", i), pt, fmt.Sprintf("User:u%d", i%50), "*", OpWrite))
	}
	a := standard(false, "", bs...)
	rc := ctx("User:u12", "127.0.0.1")
	b.ReportAllocs()
	for b.Loop() {
		a.Authorize(rc, OpWrite, ResourceTopic, "topic-612")
	}
}

// Kafka's authorizeByResourceType (its AuthorizerTest's
// testAuthorizeByResourceType* cases in spirit).
func TestAuthorizeByResourceType(t *testing.T) {
	const alice = "User:alice"
	rc := ctx(alice, "10.0.0.1")
	for _, tc := range []struct {
		name         string
		acls         []Binding
		allowIfNoACL bool
		super        string
		want         bool
	}{
		{"nothing", nil, false, "", false},
		{"allow.everyone with no ACLs", nil, true, "", true},
		{"super user", []Binding{deny(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite)}, false, alice, true},
		{"a literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false, "", true},
		{"ALL allows", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)}, false, "", true},
		{"another operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, false, "", false},
		{"another resource type", []Binding{allow(ResourceGroup, "t", PatternLiteral, alice, "*", OpWrite)}, false, "", false},
		{"another host", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "10.0.0.2", OpWrite)}, false, "", false},
		{"wildcard principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, "*", OpWrite)}, false, "", true},
		{"literal deny of the same name", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false, "", false},
		{"prefixed deny dominates a literal allow", []Binding{allow(ResourceTopic, "foo.bar", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "foo", PatternPrefixed, alice, "*", OpWrite)}, false, "", false},
		{"prefixed deny dominates a longer prefixed allow", []Binding{allow(ResourceTopic, "foo.bar", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "foo", PatternPrefixed, alice, "*", OpWrite)}, false, "", false},
		{"a longer prefixed deny does not dominate", []Binding{allow(ResourceTopic, "foo", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "foo.bar", PatternPrefixed, alice, "*", OpWrite)}, false, "", true},
		{"one allow not dominated is enough", []Binding{allow(ResourceTopic, "a", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "a", PatternLiteral, alice, "*", OpWrite), allow(ResourceTopic, "b", PatternLiteral, alice, "*", OpWrite)}, false, "", true},
		{"wildcard deny refuses", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "*", PatternLiteral, alice, "*", OpAll)}, false, "", false},
		{"wildcard allow wins over literal denies", []Binding{allow(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := standard(tc.allowIfNoACL, tc.super, tc.acls...).AuthorizeByResourceType(rc, OpWrite, ResourceTopic); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
