package broker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
)

// TestNewRefusesListenersItCannotSecure: a listener whose security protocol
// is SSL or SASL (by its name or through listener.security.protocol.map)
// stops the broker in New with an error naming the key, instead of being
// served as plaintext; PLAINTEXT under any name is accepted.
func TestNewRefusesListenersItCannotSecure(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		proto string // "" = accepted
	}{
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}, "SSL"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "security.inter.broker.protocol": "SASL_PLAINTEXT"}, "SASL_PLAINTEXT"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"}, "SASL_SSL"},
		{map[string]string{"listeners": "CLIENTS://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
			"listener.security.protocol.map": "CLIENTS:SASL_SSL,PLAINTEXT:PLAINTEXT"}, "SASL_SSL"},
		{map[string]string{"listeners": "INTERNAL://127.0.0.1:0", "inter.broker.listener.name": "INTERNAL",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT"}, ""},
	} {
		tc.props["log.dirs"] = t.TempDir()
		cfg, _, err := config.Parse(tc.props)
		if err != nil {
			t.Fatalf("%v: parse: %v", tc.props, err)
		}
		srv, err := broker.New(cfg)
		if tc.proto == "" {
			if err != nil {
				t.Errorf("%v: %v, want a broker", tc.props, err)
			}
			continue
		}
		if srv != nil {
			t.Errorf("%v: New returned a broker", tc.props)
		}
		var ce *config.ConfigError
		if !errors.As(err, &ce) || ce.Key != "listeners" || !strings.Contains(ce.Error(), "has security protocol "+tc.proto) {
			t.Errorf("%v: error %v, want a ConfigError on listeners naming %s", tc.props, err, tc.proto)
		}
	}
}
