package security

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"testing"

	"github.com/strait/strait/config"
)

func mapper(t *testing.T, rules string) *principalMapper {
	t.Helper()
	m, err := newPrincipalMapper(&config.TLS{PrincipalMappingRules: rules, Keys: map[string]string{}})
	if err != nil {
		t.Fatalf("rules %q: %v", rules, err)
	}
	return m
}

// The cases of Kafka's SslPrincipalMapperTest.

func TestPrincipalMappingValidRules(t *testing.T) {
	for _, r := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		mapper(t, r)
	}
}

func TestPrincipalMappingInvalidRules(t *testing.T) {
	for _, r := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
	} {
		_, err := newPrincipalMapper(&config.TLS{PrincipalMappingRules: r,
			Keys: map[string]string{"ssl.principal.mapping.rules": "listener.name.ssl.ssl.principal.mapping.rules"}})
		var ce *config.ConfigError
		if !errors.As(err, &ce) || ce.Key != "listener.name.ssl.ssl.principal.mapping.rules" {
			t.Errorf("rules %q: %v, want a ConfigError naming the key", r, err)
		}
	}
}

func TestPrincipalMapping(t *testing.T) {
	m := mapper(t, "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, "+
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "+
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, "+
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, "+
		"DEFAULT")
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.name(dn); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", dn, got, err, want)
		}
	}
	// Kafka's testCommaWithWhitespace.
	m = mapper(t, `RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if got, err := m.name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Errorf("comma with whitespace: %q %v", got, err)
	}
	// No rule applies: an error (Kafka fails the authentication).
	m = mapper(t, "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if got, err := m.name("CN=x,OU=Other"); err == nil {
		t.Errorf("no matching rule gave %q", got)
	}
	// A reference to a group the pattern lacks is literal text (Kafka's
	// escapeLiteralBackReferences); $0 is the whole match.
	m = mapper(t, "RULE:^CN=(.*?),(.*)$/$1@$3:$0/")
	if got, err := m.name("CN=a,O=b"); err != nil || got != "a@$3:CN=a,O=b" {
		t.Errorf("back references: %q %v", got, err)
	}
}

func TestPrincipalMappingRulesSplitting(t *testing.T) {
	for _, tc := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"},
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		{`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`},
	} {
		m, err := newPrincipalMapper(&config.TLS{PrincipalMappingRules: tc.rules, Keys: map[string]string{}})
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		if got := rulesString(m.rules); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.rules, got, tc.want)
		}
	}
}

// TestDistinguishedNameAsJava: the subject as X500Principal.getName()
// writes it: last RDN first, RFC 2253 keywords, others as OID=#hex,
// special characters and outer spaces escaped.
func TestDistinguishedNameAsJava(t *testing.T) {
	oid := func(s ...int) asn1.ObjectIdentifier { return asn1.ObjectIdentifier(s) }
	printable := func(s string) asn1.RawValue {
		return asn1.RawValue{Tag: asn1.TagPrintableString, Bytes: []byte(s)}
	}
	utf8 := func(s string) asn1.RawValue { return asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte(s)} }
	ia5 := func(s string) asn1.RawValue { return asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(s)} }
	for _, tc := range []struct {
		rdns [][]pkix.AttributeTypeAndValue
		want string
	}{
		{[][]pkix.AttributeTypeAndValue{
			{{Type: oid(2, 5, 4, 6), Value: printable("US")}},
			{{Type: oid(2, 5, 4, 10), Value: utf8("Acme")}},
			{{Type: oid(2, 5, 4, 11), Value: utf8("eng")}},
			{{Type: oid(2, 5, 4, 3), Value: utf8("alice")}},
		}, "CN=alice,OU=eng,O=Acme,C=US"},
		{[][]pkix.AttributeTypeAndValue{
			{{Type: oid(0, 9, 2342, 19200300, 100, 1, 25), Value: ia5("com")}},
			{{Type: oid(2, 5, 4, 3), Value: utf8(`Tkac, Adam+1 "x" <y>;#=\`)}},
		}, `CN=Tkac\, Adam\+1 \"x\" \<y\>\;\#\=\\,DC=com`},
		{[][]pkix.AttributeTypeAndValue{
			{{Type: oid(2, 5, 4, 3), Value: utf8(" padded ")}},
		}, `CN=\ padded\ `},
		{[][]pkix.AttributeTypeAndValue{
			{{Type: oid(2, 5, 4, 3), Value: utf8("bob")}, {Type: oid(0, 9, 2342, 19200300, 100, 1, 1), Value: utf8("42")}},
		}, "CN=bob+UID=42"},
		{[][]pkix.AttributeTypeAndValue{
			{{Type: oid(2, 5, 4, 10), Value: utf8("Acme")}},
			{{Type: oid(1, 2, 840, 113549, 1, 9, 1), Value: ia5("a@b.c")}},
			{{Type: oid(2, 5, 4, 5), Value: printable("7")}},
		}, "2.5.4.5=#130137,1.2.840.113549.1.9.1=#16056140622e63,O=Acme"},
	} {
		var seq pkix.RDNSequence
		for _, rdn := range tc.rdns {
			seq = append(seq, pkix.RelativeDistinguishedNameSET(rdn))
		}
		raw, err := asn1.Marshal(seq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := distinguishedName(&x509.Certificate{RawSubject: raw})
		if err != nil || got != tc.want {
			t.Errorf("got %q %v, want %q", got, err, tc.want)
		}
	}
}
