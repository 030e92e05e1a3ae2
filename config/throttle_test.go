package config

import (
	"math"
	"slices"
	"testing"
)

// TestThrottledPartitions is Kafka's parseThrottledPartitions: the entries
// naming the broker, "*" for every partition, nothing for an invalid list.
func TestThrottledPartitions(t *testing.T) {
	for _, c := range []struct {
		raw   string
		all   bool
		parts []int32
	}{
		{"", false, nil},
		{"*", true, nil},
		{" * ", true, nil},
		{"0:1,1:2,2:1", false, []int32{0, 2}},
		{"0:1, 3:1 ", false, []int32{0, 3}},
		{"0:2", false, nil},
		{"0:1,x", false, nil}, // invalid: nothing throttled
	} {
		all, parts := ThrottledPartitions(c.raw, 1)
		if all != c.all || !slices.Equal(parts, c.parts) {
			t.Errorf("%q on broker 1: all %v partitions %v, want %v %v", c.raw, all, parts, c.all, c.parts)
		}
	}
}

// TestThrottleRates: the rates are dynamic only, this broker's value over
// the cluster default's over unlimited; AlterConfigs refuses a negative or
// non-numeric one with Kafka's message.
func TestThrottleRates(t *testing.T) {
	cfg, _, err := Parse(map[string]string{"leader.replication.throttled.rate": "5"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Replication.LeaderThrottledRate != math.MaxInt64 {
		t.Fatalf("a static leader.replication.throttled.rate was applied: %d", cfg.Replication.LeaderThrottledRate)
	}
	l := NewLayers(cfg, map[string]string{"leader.replication.throttled.rate": "100", "follower.replication.throttled.rate": "200"},
		map[string]string{"leader.replication.throttled.rate": "10"})
	with, err := cfg.WithDynamic(l)
	if err != nil {
		t.Fatal(err)
	}
	if with.Replication.LeaderThrottledRate != 10 || with.Replication.FollowerThrottledRate != 200 {
		t.Fatalf("rates %d/%d, want 10 (this broker's) and 200 (the cluster default's)",
			with.Replication.LeaderThrottledRate, with.Replication.FollowerThrottledRate)
	}
	without, _ := cfg.WithDynamic(NewLayers(cfg, nil, nil))
	if without.Replication.LeaderThrottledRate != math.MaxInt64 || without.Replication.FollowerThrottledRate != math.MaxInt64 {
		t.Fatal("rates without dynamic configs are not unlimited")
	}
	for _, c := range []struct{ value, msg string }{
		{"-1", "Invalid value -1 for configuration follower.replication.throttled.rate: Value must be at least 0"},
		{"1MB", "Invalid value 1MB for configuration follower.replication.throttled.rate: Not a number of type LONG"},
	} {
		err := l.Validate(map[string]string{"follower.replication.throttled.rate": c.value}, false)
		if err == nil || err.Error() != c.msg {
			t.Errorf("%s: %v, want %q", c.value, err, c.msg)
		}
	}
	if err := l.Validate(map[string]string{"replica.alter.log.dirs.io.max.bytes.per.second": "0"}, true); err != nil {
		t.Errorf("a zero rate refused: %v", err)
	}
	e := l.BrokerEntry("leader.replication.throttled.rate", true, false, false)
	if e.Value == nil || *e.Value != "10" || e.IsSensitive {
		t.Errorf("described as %+v, want the value 10, not sensitive", e)
	}
}
