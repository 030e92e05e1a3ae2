package config

import (
	"slices"
	"testing"
)

func init() {
	invalidCases = append(invalidCases, []struct {
		key, value string
		extra      map[string]string
		msg        string
	}{
		{"authorizer.class.name", "kafka.security.authorizer.AclAuthorizer", nil,
			"Invalid value kafka.security.authorizer.AclAuthorizer for configuration authorizer.class.name: Strait's only authorizer is org.apache.kafka.metadata.authorizer.StandardAuthorizer (ACLs stored in etcd)"},
		{"super.users", "User:admin;alice", map[string]string{"authorizer.class.name": StandardAuthorizerClass},
			"expected a string in format principalType:principalName but got alice"},
	}...)
	anyValueOfItsType = append(anyValueOfItsType, "allow.everyone.if.no.acl.found")
}

func TestAuthorizerConfig(t *testing.T) {
	c, warnings, err := Parse(map[string]string{
		"authorizer.class.name":          " " + StandardAuthorizerClass + " ",
		"super.users":                    " User:admin ; User:broker;;",
		"allow.everyone.if.no.acl.found": "TRUE",
	})
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	a := c.Security.Authorizer
	if !a.Enabled || !slices.Equal(a.SuperUsers, []string{"User:admin", "User:broker"}) || !a.AllowEveryoneIfNoACL {
		t.Errorf("%+v", a)
	}
	// Boolean.parseBoolean: anything but true is false.
	c, _, err = Parse(map[string]string{"authorizer.class.name": StandardAuthorizerClass, "allow.everyone.if.no.acl.found": "yes"})
	if err != nil || c.Security.Authorizer.AllowEveryoneIfNoACL {
		t.Errorf("yes: %+v %v", c.Security.Authorizer, err)
	}
	// Without an authorizer the other two are not read (Kafka passes them
	// to no one): a malformed super.users does not stop the broker.
	c, _, err = Parse(map[string]string{"super.users": "alice"})
	if err != nil || c.Security.Authorizer.Enabled || c.Security.Authorizer.SuperUsers != nil {
		t.Errorf("no authorizer: %+v %v", c.Security.Authorizer, err)
	}
}
