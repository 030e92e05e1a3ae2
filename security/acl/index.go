package acl

import (
	"net/netip"
	"slices"
	"strings"
)

// Set is an immutable, indexed set of bindings: what one snapshot of the
// controller's cache holds. Authorization looks up the resource's literal
// name, the literal wildcard and the prefixes of the name that some
// PREFIXED binding uses, so its cost depends on the bindings of the
// resource, not on the size of the set.
type Set struct {
	all    []Binding // sorted, unique
	byType map[ResourceType]*typeIndex
}

type typeIndex struct {
	literal  map[string][]Binding // by resource name, Wildcard included
	prefixed map[string][]Binding // by prefix
	// prefixLens are the distinct lengths of the prefixes, ascending: a name
	// is checked against at most len(prefixLens) map entries.
	prefixLens []int
}

// EmptySet has no bindings.
var EmptySet = NewSet(nil)

// NewSet indexes bindings (duplicates are kept once); it does not keep bs.
func NewSet(bs []Binding) *Set {
	all := slices.Clone(bs)
	slices.SortFunc(all, compare)
	all = slices.Compact(all)
	s := &Set{all: all, byType: map[ResourceType]*typeIndex{}}
	for _, b := range all {
		ti := s.byType[b.ResourceType]
		if ti == nil {
			ti = &typeIndex{literal: map[string][]Binding{}, prefixed: map[string][]Binding{}}
			s.byType[b.ResourceType] = ti
		}
		switch b.Pattern {
		case PatternLiteral:
			ti.literal[b.Name] = append(ti.literal[b.Name], b)
		case PatternPrefixed:
			if len(ti.prefixed[b.Name]) == 0 {
				ti.prefixLens = append(ti.prefixLens, len(b.Name))
			}
			ti.prefixed[b.Name] = append(ti.prefixed[b.Name], b)
		}
	}
	for _, ti := range s.byType {
		slices.Sort(ti.prefixLens)
		ti.prefixLens = slices.Compact(ti.prefixLens)
	}
	return s
}

func compare(a, b Binding) int {
	switch {
	case a.ResourceType != b.ResourceType:
		return int(a.ResourceType) - int(b.ResourceType)
	case a.Pattern != b.Pattern:
		return int(a.Pattern) - int(b.Pattern)
	case a.Name != b.Name:
		return strings.Compare(a.Name, b.Name)
	case a.Principal != b.Principal:
		return strings.Compare(a.Principal, b.Principal)
	case a.Host != b.Host:
		return strings.Compare(a.Host, b.Host)
	case a.Operation != b.Operation:
		return int(a.Operation) - int(b.Operation)
	}
	return int(a.Permission) - int(b.Permission)
}

// Len is the number of bindings.
func (s *Set) Len() int { return len(s.all) }

// Contains reports whether b is in the set.
func (s *Set) Contains(b Binding) bool {
	_, ok := slices.BinarySearchFunc(s.all, b, compare)
	return ok
}

// Match returns the bindings f matches, in a stable order (DescribeAcls and
// DeleteAcls; a scan, as Kafka's, since they are admin requests).
func (s *Set) Match(f Filter) []Binding {
	var out []Binding
	for _, b := range s.all {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// forResource calls fn with each group of bindings that applies to the
// resource (rt, name): its literal name, the literal wildcard, the PREFIXED
// ones whose prefix starts name. fn returns false to stop.
func (s *Set) forResource(rt ResourceType, name string, fn func([]Binding) bool) {
	ti := s.byType[rt]
	if ti == nil {
		return
	}
	if bs := ti.literal[name]; len(bs) > 0 && !fn(bs) {
		return
	}
	for _, n := range ti.prefixLens {
		if n > len(name) {
			break
		}
		if bs := ti.prefixed[name[:n]]; len(bs) > 0 && !fn(bs) {
			return
		}
	}
	if name != Wildcard {
		if bs := ti.literal[Wildcard]; len(bs) > 0 {
			fn(bs)
		}
	}
}

// hostMatches is the host part of StandardAuthorizerData.findResult: the
// wildcard, the client's address as written, or (Kafka 4.4) a CIDR range
// holding it.
func hostMatches(aclHost, host string, addr netip.Addr) bool {
	if aclHost == Wildcard || aclHost == host {
		return true
	}
	if !strings.Contains(aclHost, "/") || !addr.IsValid() {
		return false
	}
	p, err := netip.ParsePrefix(aclHost)
	return err == nil && p.Contains(addr.Unmap())
}
