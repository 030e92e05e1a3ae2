package config

import "strings"

// StandardAuthorizerClass is the authorizer.class.name that enables ACLs:
// Kafka's KRaft authorizer, whose ACLs live in the cluster metadata (for
// Strait: in etcd). Kafka 4 removed the ZooKeeper AclAuthorizer
// (kafka.security.authorizer.AclAuthorizer): a broker naming it does not
// start, in Kafka as here.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Authorizer is authorizer.class.name and the keys the StandardAuthorizer
// reads from the broker's properties.
type Authorizer struct {
	// Enabled is authorizer.class.name set to StandardAuthorizerClass; unset
	// (the default), every request is allowed and the ACL APIs answer
	// SECURITY_DISABLED.
	Enabled bool
	// SuperUsers is super.users: principals (User:alice) separated by
	// semicolons, allowed everything.
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found: a resource
	// without any ACL is open to all.
	AllowEveryoneIfNoACL bool
}

func init() {
	// Not KafkaConfig's keys but the authorizer's, which Kafka passes it
	// from the same properties.
	straitKeys["super.users"] = typeString
	straitKeys["allow.everyone.if.no.acl.found"] = typeString
}

// parseAuthorizer reads the three keys as Kafka's StandardAuthorizer.configure
// does: super.users only when the authorizer is enabled, each entry a
// principal with a colon (SecurityUtils.parseKafkaPrincipal);
// allow.everyone.if.no.acl.found with Boolean.parseBoolean (anything but
// "true" is false, never an error).
func parseAuthorizer(p *props) (Authorizer, error) {
	var a Authorizer
	switch class := p.str("authorizer.class.name"); class {
	case "":
		return a, nil
	case StandardAuthorizerClass:
		a.Enabled = true
	default:
		return a, invalidValue("authorizer.class.name", class,
			"Strait's only authorizer is "+StandardAuthorizerClass+" (ACLs stored in etcd)")
	}
	for _, v := range strings.Split(p.raw("super.users"), ";") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if i := strings.IndexByte(v, ':'); i < 0 {
			return Authorizer{}, &ConfigError{Key: "super.users",
				Message: "expected a string in format principalType:principalName but got " + v}
		}
		a.SuperUsers = append(a.SuperUsers, v)
	}
	a.AllowEveryoneIfNoACL = strings.EqualFold(p.str("allow.everyone.if.no.acl.found"), "true")
	return a, nil
}
