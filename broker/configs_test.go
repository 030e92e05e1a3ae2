package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
)

// TestCreateTopicsResponseConfigs: a new topic's configs as CreateTopics
// v5+ lists them, every one with its value and source, as Kafka 4.4 did for
// the same broker and topic configs.
func TestCreateTopicsResponseConfigs(t *testing.T) {
	cfg, _, err := config.Parse(map[string]string{"message.max.bytes": "2000000"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg) // not started: the static layers only
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range s.createTopicsResponseConfigs(map[string]string{"retention.ms": "1000"}) {
		v := "<nil>"
		if c.Value != nil {
			v = *c.Value
		}
		got[c.Name] = v + "@" + kmsg.ConfigSource(c.Source).String()
	}
	if n := len(s.dynamicConfigs().state.Load().layers.TopicEntries(nil, false, false)); len(got) != n || n < 37 {
		t.Errorf("%d configs, want every topic config (%d)", len(got), n)
	}
	for name, want := range map[string]string{
		"retention.ms":      "1000@DYNAMIC_TOPIC_CONFIG",
		"max.message.bytes": "2000000@STATIC_BROKER_CONFIG",
		"segment.ms":        "604800000@DEFAULT_CONFIG",
		"cleanup.policy":    "delete@DEFAULT_CONFIG",
		"flush.ms":          "9223372036854775807@DEFAULT_CONFIG",
	} {
		if got[name] != want {
			t.Errorf("%s = %s, want %s", name, got[name], want)
		}
	}
}
