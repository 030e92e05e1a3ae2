package controller

import (
	"testing"

	"github.com/strait/strait/security/acl"
)

// The acls/<id> keys: classified, and their records decoded only when they
// are bindings CreateAcls would accept.
func TestACLKeysAndRecords(t *testing.T) {
	ks := keyspace{prefix: "/strait"}
	for key, want := range map[string]keyKind{
		"/strait/acls/0a1b":  keyACL,
		"/strait/acls/":      keyUnknown,
		"/strait/acls/a/b":   keyUnknown,
		"/strait/aclsx/0a1b": keyUnknown,
	} {
		if got := ks.parse(key).kind; got != want {
			t.Errorf("%s: kind %d, want %d", key, got, want)
		}
	}
	b := acl.Binding{ResourceType: acl.ResourceTopic, Name: "t", Pattern: acl.PatternPrefixed,
		Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}
	if ks.acl(aclID(b)) != "/strait/acls/"+aclID(b) || ks.parse(ks.acl(aclID(b))).aclID != aclID(b) {
		t.Errorf("key of %v: %s", b, ks.acl(aclID(b)))
	}
	other := b
	other.Operation = acl.OpWrite
	if aclID(b) == aclID(other) || aclID(b) != aclID(b) {
		t.Error("ids must be stable and distinct per binding")
	}
	v, err := jsonValue(toACLRecord(b))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeACL([]byte(v)); err != nil || got != b {
		t.Errorf("round trip: %v %v", got, err)
	}
	for _, bad := range []string{`{`, `{"resourceType":1,"name":"t","patternType":3,"principal":"User:a","host":"*","operation":3,"permissionType":3}`} {
		if _, err := decodeACL([]byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}
