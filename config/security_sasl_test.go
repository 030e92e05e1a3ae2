package config

import (
	"errors"
	"maps"
	"os"
	"strings"
	"testing"
	"time"
)

const (
	plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required;`
	oauthJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";`
)

// saslBroker are the properties of a broker whose only listener is
// SASL_PLAINTEXT with PLAIN, also used between brokers.
func saslBroker(extra map[string]string) map[string]string {
	m := map[string]string{
		"listeners":                                           "SASL_PLAINTEXT://127.0.0.1:9092",
		"security.inter.broker.protocol":                      "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                             "PLAIN",
		"sasl.mechanism.inter.broker.protocol":                "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
	}
	maps.Copy(m, extra)
	return m
}

func init() {
	const jaasKey = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
	base := saslBroker(nil)
	without := func(keys ...string) map[string]string {
		m := maps.Clone(base)
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	invalidCases = append(invalidCases, []struct {
		key, value string
		extra      map[string]string
		msg        string
	}{
		{"sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256", without("sasl.mechanism.inter.broker.protocol"),
			"requirement failed: sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication"},
		{"sasl.enabled.mechanisms", "GSSAPI,PLAIN", without("sasl.enabled.mechanisms"),
			"Invalid value GSSAPI,PLAIN for configuration sasl.enabled.mechanisms: Strait supports only the SASL mechanisms PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; GSSAPI cannot be enabled"},
		{"listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,DIGEST-MD5", base,
			"Invalid value PLAIN,DIGEST-MD5 for configuration listener.name.sasl_plaintext.sasl.enabled.mechanisms: Strait supports only the SASL mechanisms PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; DIGEST-MD5 cannot be enabled"},
		{jaasKey, `org.apache.kafka.common.security.plain.PlainLoginModule user_a="b";`, without(jaasKey),
			"Invalid value [hidden] for configuration " + jaasKey + ": Invalid login module control flag 'user_a' in JAAS config"},
		{"sasl.server.max.receive.size", "0", base,
			"Invalid value 0 for configuration sasl.server.max.receive.size: Value must be at least 1"},
		{"listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class", "com.example.Handler", base,
			"Invalid value com.example.Handler for configuration listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class: Strait cannot load classes: PLAIN uses its built-in server callback handler"},
	}...)
}

func TestSASLListener(t *testing.T) {
	c, _, err := Parse(saslBroker(map[string]string{
		"sasl.enabled.mechanisms":                                            "PLAIN, SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":        scramJAAS,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":          oauthJAAS,
		"connections.max.reauth.ms":                                          "60000",
		"listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": "1000",
		"listener.name.sasl_plaintext.sasl.server.max.receive.size":          "1000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Security.Listeners["SASL_PLAINTEXT"].SASL
	if s == nil {
		t.Fatal("no SASL settings")
	}
	if got := strings.Join(s.EnabledMechanisms, ","); got != "PLAIN,SCRAM-SHA-512,OAUTHBEARER" {
		t.Fatalf("mechanisms %s", got)
	}
	if s.MaxReceiveSize != 1000 || s.ReauthFor("PLAIN") != time.Minute || s.ReauthFor("OAUTHBEARER") != time.Second {
		t.Fatalf("receive %d reauth %v %v", s.MaxReceiveSize, s.ReauthFor("PLAIN"), s.ReauthFor("OAUTHBEARER"))
	}
	if s.JAAS["PLAIN"].Options["user_alice"].Reveal() != "alice-secret" || s.JAAS["SCRAM-SHA-512"].LoginModule != "org.apache.kafka.common.security.scram.ScramLoginModule" {
		t.Fatalf("JAAS %v", s.JAAS)
	}
	if !s.OAuth.Unsecured || s.OAuth.ClockSkew != 30*time.Second || s.OAuth.SubClaimName != "sub" || s.OAuth.ScopeClaimName != "scope" {
		t.Fatalf("OAuth %+v", s.OAuth)
	}
	if c.Security.InterBrokerMechanism != "PLAIN" {
		t.Fatalf("inter-broker mechanism %q", c.Security.InterBrokerMechanism)
	}

	// Defaults: 524288 bytes, no re-authentication.
	c, _, err = Parse(saslBroker(nil))
	if err != nil {
		t.Fatal(err)
	}
	s = c.Security.Listeners["SASL_PLAINTEXT"].SASL
	if s.MaxReceiveSize != 524288 || s.ReauthFor("PLAIN") != 0 {
		t.Fatalf("defaults: receive %d reauth %v", s.MaxReceiveSize, s.MaxReauth)
	}
}

func TestSASLListenerErrors(t *testing.T) {
	jwks := t.TempDir() + "/jwks.json"
	oauth := func(extra map[string]string) map[string]string {
		m := saslBroker(map[string]string{
			"sasl.enabled.mechanisms":                                   "OAUTHBEARER",
			"sasl.mechanism.inter.broker.protocol":                      "OAUTHBEARER",
			"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": oauthJAAS,
		})
		maps.Copy(m, extra)
		return m
	}
	const handler = "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"
	jwt := map[string]string{handler: OAuthBearerJWTValidator}
	with := func(a, b map[string]string) map[string]string { m := maps.Clone(a); maps.Copy(m, b); return m }
	cases := []struct {
		props    map[string]string
		key, msg string
	}{
		{saslBroker(map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}), "sasl.enabled.mechanisms",
			"Invalid value GSSAPI for configuration sasl.enabled.mechanisms: Strait supports only the SASL mechanisms PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; GSSAPI cannot be enabled"},
		// Kafka's default is GSSAPI.
		{func() map[string]string { m := saslBroker(nil); delete(m, "sasl.enabled.mechanisms"); return m }(), "sasl.enabled.mechanisms",
			"Invalid value GSSAPI for configuration sasl.enabled.mechanisms: Strait supports only the SASL mechanisms PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; GSSAPI cannot be enabled"},
		{saslBroker(map[string]string{"sasl.enabled.mechanisms": " "}), "sasl.enabled.mechanisms",
			"Invalid value  for configuration sasl.enabled.mechanisms: SASL listener SASL_PLAINTEXT has no SASL mechanism enabled"},
		// The broker-wide sasl.jaas.config is not read by brokers.
		{saslBroker(map[string]string{"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256", "sasl.jaas.config": scramJAAS}),
			"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config",
			"Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration. System property 'java.security.auth.login.config' is not set: " +
				"Strait reads JAAS only from listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config (the broker-wide sasl.jaas.config is ignored: server configs must be prefixed with the listener and SASL mechanism name)"},
		{saslBroker(map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": scramJAAS}),
			"listener.name.sasl_plaintext.plain.sasl.jaas.config",
			"Invalid value [hidden] for configuration listener.name.sasl_plaintext.plain.sasl.jaas.config: login module org.apache.kafka.common.security.scram.ScramLoginModule is not org.apache.kafka.common.security.plain.PlainLoginModule (Strait cannot load classes; PLAIN needs that module)"},
		{saslBroker(map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS + scramJAAS}),
			"listener.name.sasl_plaintext.plain.sasl.jaas.config",
			"Invalid value [hidden] for configuration listener.name.sasl_plaintext.plain.sasl.jaas.config: JAAS config property contains 2 login modules, should be 1 module"},
		{oauth(map[string]string{handler: "com.example.Validator"}), handler,
			"Invalid value com.example.Validator for configuration " + handler + ": Strait cannot load classes: the OAUTHBEARER validator is either the default unsecured one or " + OAuthBearerJWTValidator},
		{oauth(jwt), "sasl.oauthbearer.jwks.endpoint.url",
			"The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url value must be non-null"},
		{oauth(with(jwt, map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "ftp://127.0.0.1/jwks"})), "sasl.oauthbearer.jwks.endpoint.url",
			`The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url contains a URL (ftp://127.0.0.1/jwks) that contains an invalid protocol (ftp); only "http", "https", and "file" protocol are supported`},
		{oauth(with(jwt, map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "file://" + jwks})), "sasl.oauthbearer.jwks.endpoint.url",
			"The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url contains a file (" + jwks + ") that doesn't exist"},
		{oauth(with(jwt, map[string]string{"listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url": "https://127.0.0.1/jwks"})), "sasl.oauthbearer.expected.audience",
			"The OAuth configuration option sasl.oauthbearer.expected.audience must be set when listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url is configured, unless sasl.oauthbearer.allow.unverified.audience is true"},
		{oauth(map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": strings.Replace(oauthJAAS, "required", `required unsecuredValidatorAllowableClockSkewMs="-5"`, 1)}),
			"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config",
			"Invalid value [hidden] for configuration listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config: Allowable clock skew millis must not be negative: unsecuredValidatorAllowableClockSkewMs=-5"},
		{oauth(map[string]string{"sasl.oauthbearer.clock.skew.seconds": "-1"}), "sasl.oauthbearer.clock.skew.seconds",
			"Invalid value -1 for configuration sasl.oauthbearer.clock.skew.seconds: Value must be at least 0"},
		{saslBroker(map[string]string{"listener.name.sasl_plaintext.connections.max.reauth.ms": "soon"}), "listener.name.sasl_plaintext.connections.max.reauth.ms",
			"Invalid value soon for configuration listener.name.sasl_plaintext.connections.max.reauth.ms: Not a number of type LONG"},
	}
	for _, tc := range cases {
		_, _, err := Parse(tc.props)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v, want a *ConfigError", tc.key, err)
			continue
		}
		if ce.Key != tc.key || ce.Message != tc.msg {
			t.Errorf("%s:\n got %s: %s\nwant %s", tc.key, ce.Key, ce.Message, tc.msg)
		}
		if strings.Contains(ce.Message, "secret") {
			t.Errorf("%s: message reveals a secret: %s", tc.key, ce.Message)
		}
	}

	// The JWT validator with everything it needs.
	if err := os.WriteFile(jwks, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := Parse(oauth(with(jwt, map[string]string{
		"sasl.oauthbearer.jwks.endpoint.url":  "file://" + jwks,
		"sasl.oauthbearer.expected.audience":  "kafka, other",
		"sasl.oauthbearer.expected.issuer":    "https://issuer.test",
		"sasl.oauthbearer.sub.claim.name":     "client_id",
		"sasl.oauthbearer.clock.skew.seconds": "5",
	})))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Security.Listeners["SASL_PLAINTEXT"].SASL.OAuth
	if o.Unsecured || o.JWKSURL != "file://"+jwks || strings.Join(o.ExpectedAudience, "|") != "kafka|other" ||
		o.ExpectedIssuer != "https://issuer.test" || o.SubClaimName != "client_id" || o.ClockSkew != 5*time.Second {
		t.Fatalf("OAuth %+v", o)
	}
}

func TestParseJAAS(t *testing.T) {
	got, err := ParseJAAS(`
		// a comment
		org.apache.kafka.common.security.plain.PlainLoginModule Required /* inline */
		  username=admin
		  password="a \"quoted\" pa$$word;\t\101"
		  $weird-key_1 = "x";
		other.Module optional;`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].LoginModule != "org.apache.kafka.common.security.plain.PlainLoginModule" || got[0].Flag != "required" ||
		got[1].LoginModule != "other.Module" || got[1].Flag != "optional" || len(got[1].Options) != 0 {
		t.Fatalf("entries %+v", got)
	}
	if got[0].Options["password"].Reveal() != "a \"quoted\" pa$$word;\tA" || got[0].Options["$weird-key_1"].Reveal() != "x" {
		t.Fatalf("options %v", got[0].Options)
	}
	// 'it''s' is two quoted strings: the second is the next key, without a value.
	if _, err := ParseJAAS(`M required user_bob='it''s';`); err == nil || err.Error() != "Value not specified for key 's' in JAAS config" {
		t.Fatalf("adjacent quoted strings: %v", err)
	}

	got, err = ParseJAAS(`M required username=admin password="a \"quoted\" pa$$word;\t\101" $weird-key_1 = "x" path="/a/b" v2=x.y-z;`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"username": "admin", "password": "a \"quoted\" pa$$word;\tA", "$weird-key_1": "x", "path": "/a/b", "v2": "x.y-z"}
	for k, v := range want {
		if got[0].Options[k].Reveal() != v {
			t.Errorf("option %s = %q, want %q", k, got[0].Options[k].Reveal(), v)
		}
	}
	if len(got[0].Options) != len(want) {
		t.Errorf("options %v", got[0].Options)
	}

	for in, msg := range map[string]string{
		``:                         "Login module not specified in JAAS config",
		`// only a comment`:        "Login module not specified in JAAS config",
		`M`:                        "Login module control flag not specified in JAAS config",
		`M mandatory;`:             "Invalid login module control flag 'mandatory' in JAAS config",
		`M required`:               "JAAS config entry not terminated by semi-colon",
		`M required a="b"`:         "JAAS config entry not terminated by semi-colon",
		`M required a=;`:           "Value not specified for key 'a' in JAAS config",
		`M required a=123;`:        "Value not specified for key 'a' in JAAS config",
		`M required a;`:            "Value not specified for key 'a' in JAAS config",
		`M required a="secret" b;`: "Value not specified for key 'b' in JAAS config",
	} {
		_, err := ParseJAAS(in)
		if err == nil || err.Error() != msg {
			t.Errorf("%q: %v, want %s", in, err, msg)
		}
	}
}
