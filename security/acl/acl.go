// Package acl owns Kafka's access control lists as values: the binding
// (resource pattern and access control entry), the filters DescribeAcls and
// DeleteAcls match with, an immutable index of a set of bindings, and the
// authorization decision of Kafka's StandardAuthorizer over it (DENY wins,
// the implied operations, super.users, allow.everyone.if.no.acl.found).
// Where the bindings live (etcd, the controller's watch cache) and which
// request needs which operation are not its business.
package acl

import (
	"fmt"
	"net/netip"
	"strings"
)

// ResourceType is Kafka's ResourceType, with its wire codes.
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType is Kafka's PatternType. MATCH and ANY exist only in filters.
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is Kafka's AclOperation. ANY exists only in filters.
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

// Permission is Kafka's AclPermissionType. ANY exists only in filters.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

// Wildcard is the resource name and host that match any (Kafka's
// ResourcePattern.WILDCARD_RESOURCE and AclEntry.WILDCARD_HOST).
const Wildcard = "*"

// WildcardPrincipal matches every principal (Kafka's WILDCARD_KAFKA_PRINCIPAL).
const WildcardPrincipal = "User:*"

// ClusterName is the one name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// Codes outside a type's range decode to its Unknown, as Kafka's fromCode.
func known[T ~int8](v, unknown, last T) T {
	if v < unknown || v > last {
		return unknown
	}
	return v
}

func (t ResourceType) known() ResourceType { return known(t, ResourceUnknown, ResourceUser) }
func (p PatternType) known() PatternType   { return known(p, PatternUnknown, PatternPrefixed) }
func (o Operation) known() Operation       { return known(o, OpUnknown, OpTwoPhaseCommit) }
func (p Permission) known() Permission     { return known(p, PermissionUnknown, PermissionAllow) }

var resourceNames = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
var patternNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
var operationNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
	"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
	"TWO_PHASE_COMMIT"}
var permissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

func (t ResourceType) String() string { return resourceNames[t.known()] }
func (p PatternType) String() string  { return patternNames[p.known()] }
func (o Operation) String() string    { return operationNames[o.known()] }
func (p Permission) String() string   { return permissionNames[p.known()] }

// Binding is one ACL: Kafka's AclBinding (a ResourcePattern and an
// AccessControlEntry).
type Binding struct {
	ResourceType ResourceType
	Name         string
	Pattern      PatternType
	Principal    string // "User:alice"
	Host         string
	Operation    Operation
	Permission   Permission
}

func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		b.ResourceType, b.Name, b.Pattern, b.Principal, b.Host, b.Operation, b.Permission)
}

// InvalidError is a binding or filter Kafka refuses with INVALID_REQUEST;
// its text is Kafka's message.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

// Validate is Kafka's AclControlManager.validateNewAcl: what CreateAcls
// refuses with INVALID_REQUEST, plus AclApis' check of the CLUSTER name.
func (b Binding) Validate() error {
	// AclApis.handleCreateAcls checks these two before the controller.
	if b.ResourceType == ResourceCluster && b.Name != ClusterName {
		return &InvalidError{"The only valid name for the CLUSTER resource is " + ClusterName}
	}
	if b.Name == "" {
		return &InvalidError{"Invalid empty resource name"}
	}
	switch b.ResourceType.known() {
	case ResourceUnknown, ResourceAny:
		return &InvalidError{"Invalid resourceType " + b.ResourceType.String()}
	}
	switch b.Pattern.known() {
	case PatternLiteral, PatternPrefixed:
	default:
		return &InvalidError{"Invalid patternType " + b.Pattern.String()}
	}
	switch b.Operation.known() {
	case OpUnknown, OpAny:
		return &InvalidError{"Invalid operation " + b.Operation.String()}
	}
	switch b.Permission.known() {
	case PermissionAllow, PermissionDeny:
	default:
		return &InvalidError{"Invalid permissionType " + b.Permission.String()}
	}
	if !strings.Contains(b.Principal, ":") {
		return &InvalidError{"Could not parse principal from `" + b.Principal + "` " +
			"(no colon is present separating the principal type from the principal name)"}
	}
	switch {
	case b.Host == "":
		return &InvalidError{"Host pattern cannot be null or empty"}
	case b.Host != Wildcard && strings.Contains(b.Host, "/"):
		// Kafka 4.4's CIDR host patterns (on a current metadata version).
		if _, err := netip.ParsePrefix(b.Host); err != nil {
			return &InvalidError{"Invalid CIDR notation '" + b.Host + "': " + err.Error()}
		}
	}
	return nil
}

// Filter is Kafka's AclBindingFilter: nil strings and the ANY codes match
// anything; PatternMatch matches the literal, wildcard and prefixed patterns
// that would apply to Name.
type Filter struct {
	ResourceType ResourceType
	Name         *string
	Pattern      PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Unknown reports a filter with an UNKNOWN (or undecodable) field, which
// DeleteAcls refuses (AclControlManager.validateFilter) and Describe matches
// nothing with.
func (f Filter) Unknown() error {
	if f.ResourceType.known() == ResourceUnknown || f.Pattern.known() == PatternUnknown {
		return &InvalidError{"Unknown patternFilter."}
	}
	if f.Operation.known() == OpUnknown || f.Permission.known() == PermissionUnknown {
		return &InvalidError{"Unknown entryFilter."}
	}
	return nil
}

// Matches is Kafka's AclBindingFilter.matches.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) && f.matchesEntry(b)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != b.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.Pattern == PatternAny || f.Pattern == b.Pattern {
		return *f.Name == b.Name
	}
	// MATCH: the patterns that apply to the resource named.
	switch b.Pattern {
	case PatternLiteral:
		return *f.Name == b.Name || b.Name == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(*f.Name, b.Name)
	}
	return false
}

func (f Filter) matchesEntry(b Binding) bool {
	return (f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) &&
		(f.Permission == PermissionAny || f.Permission == b.Permission)
}
