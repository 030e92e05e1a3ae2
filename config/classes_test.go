package config

import (
	"errors"
	"testing"
)

// replica.selector.class accepts Kafka's two ReplicaSelector classes, which
// Strait implements, and refuses every other class.
func TestReplicaSelectorClass(t *testing.T) {
	for _, tc := range []struct {
		value     string
		rackAware bool
	}{
		{"", false},
		{LeaderSelector, false},
		{RackAwareReplicaSelector, true},
		{" " + RackAwareReplicaSelector + " ", true},
	} {
		cfg, _, err := Parse(map[string]string{"replica.selector.class": tc.value})
		if err != nil {
			t.Errorf("%q: %v", tc.value, err)
			continue
		}
		if cfg.Replication.RackAwareSelector != tc.rackAware {
			t.Errorf("%q: RackAwareSelector = %v, want %v", tc.value, cfg.Replication.RackAwareSelector, tc.rackAware)
		}
	}
	for _, v := range []string{"com.example.Selector", "org.apache.kafka.common.replica.ReplicaSelector", "RackAwareReplicaSelector"} {
		_, _, err := Parse(map[string]string{"replica.selector.class": v})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != "replica.selector.class" {
			t.Errorf("%q: error %v, want a ConfigError naming replica.selector.class", v, err)
		}
	}
}
