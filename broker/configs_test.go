package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicKeysAreKafkas: the topic keys ValidateTopicConfigs knows are
// Kafka's, in Kafka's order and with Kafka's types (config_catalog.go is
// generated from Kafka's LogConfig).
func TestTopicKeysAreKafkas(t *testing.T) {
	var want, got []string
	for _, k := range topicCatalog {
		want = append(want, k.name+":"+typeName(k.typ))
	}
	for _, k := range topicKeys {
		got = append(got, k.name+":"+typeName(k.typ))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("topicKeys differ from Kafka %s's LogConfig:\n got %v\nwant %v", kafkaVersionOfCatalog, got, want)
	}
}

// TestJavaSetString: Kafka prints sets of config names in java.util.HashSet
// order; these are the orders Kafka 4.4 printed.
func TestJavaSetString(t *testing.T) {
	if got := javaSetString([]string{"log.dirs", "num.partitions"}, 2*4/3+1); got != "[num.partitions, log.dirs]" {
		t.Errorf("got %s", got)
	}
	if got := javaSetString([]string{"listeners"}, 0); got != "[listeners]" {
		t.Errorf("got %s", got)
	}
}

func TestJavaDouble(t *testing.T) {
	for in, want := range map[float64]string{
		0.5: "0.5", 1: "1.0", 0.9: "0.9", 1.7976931348623157e308: "1.7976931348623157E308",
		1e7: "1.0E7", 1234567: "1234567.0", 0.001: "0.001", 0.0001: "1.0E-4", -2.5: "-2.5",
	} {
		if got := javaDouble(in); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestRenderValue(t *testing.T) {
	for _, c := range []struct {
		raw  string
		typ  configType
		want string
	}{
		{" compact, delete ", typeList, "compact,delete"},
		{"TRUE", typeBoolean, "true"},
		{" 0010", typeLong, "10"},
		{"0.50", typeDouble, "0.5"},
		{"abc", typeInt, "abc"},
		{" x ", typeString, "x"},
	} {
		if got := renderValue(c.raw, c.typ); got != c.want {
			t.Errorf("renderValue(%q, %s) = %q, want %q", c.raw, typeName(c.typ), got, c.want)
		}
	}
}

func TestJavaSplit(t *testing.T) {
	for in, want := range map[string][]string{"": {""}, "a,b,": {"a", "b"}, ",a": {"", "a"}, ",": {}, "a": {"a"}} {
		if got := javaSplit(in); !slices.Equal(got, want) {
			t.Errorf("javaSplit(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCreateTopicsResponseConfigs: a new topic's configs as CreateTopics
// v5+ lists them, every one with its value and source, as Kafka 4.4 did for
// the same broker and topic configs.
func TestCreateTopicsResponseConfigs(t *testing.T) {
	cfg, _, err := ParseConfig(map[string]string{"message.max.bytes": "2000000"})
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
	if len(got) != len(topicCatalog) {
		t.Errorf("%d configs, want %d", len(got), len(topicCatalog))
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
