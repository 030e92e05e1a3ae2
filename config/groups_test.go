package config

import (
	"testing"
	"time"
)

func TestValidateGroupConfigsShareAutoOffsetReset(t *testing.T) {
	l := NewLayers(Config{}, nil, nil)
	for v, ok := range map[string]bool{
		"latest": true, "earliest": true, " earliest ": true, "by_duration:PT1H": true, "by_duration:P1D": true,
		"by_duration:P1DT2H3M4.5S": true, "by_duration:PT0S": true, "by_duration:pt1h": true,
		"by_duration:-PT1H": false, "by_duration:PT-1S": false, "by_duration:P": false, "by_duration:PT": false,
		"by_duration:": false, "by_duration:1H": false, "EARLIEST": false, "none": false, "": false,
	} {
		err := l.ValidateGroupConfigs(map[string]string{"share.auto.offset.reset": v})
		if (err == nil) != ok {
			t.Errorf("share.auto.offset.reset=%q: error %v, want valid %v", v, err, ok)
		}
	}
}

// A group's overrides are capped to the broker's bounds when it runs
// (GroupConfig.evaluate), which may have changed since they were set.
func TestGroupConsumerTimeouts(t *testing.T) {
	l := NewLayers(Config{}, nil, map[string]string{"group.consumer.max.heartbeat.interval.ms": "8000"})
	s, h := l.GroupConsumerTimeouts(map[string]string{"consumer.heartbeat.interval.ms": "12000"}, 45*time.Second, 5*time.Second)
	if s != 45*time.Second || h != 8*time.Second {
		t.Errorf("capped: %v %v, want 45s 8s", s, h)
	}
	s, h = l.GroupConsumerTimeouts(map[string]string{"consumer.session.timeout.ms": "50000"}, 45*time.Second, 5*time.Second)
	if s != 50*time.Second || h != 5*time.Second {
		t.Errorf("session override: %v %v, want 50s 5s", s, h)
	}
	s, h = l.GroupConsumerTimeouts(nil, 45*time.Second, 500*time.Millisecond)
	if s != 45*time.Second || h != 500*time.Millisecond {
		t.Errorf("no overrides: %v %v, want the broker's 45s 500ms", s, h)
	}
}

func TestShareResetDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"by_duration:PT1H":     time.Hour,
		"by_duration:P1DT30M":  24*time.Hour + 30*time.Minute,
		"by_duration:PT0.5S":   500 * time.Millisecond,
		"by_duration:PT-1H2H":  -1,
		"by_duration:-PT1H":    -1,
		"by_duration:P":        -1,
		"latest":               -1,
		"by_duration:PT10M30S": 10*time.Minute + 30*time.Second,
	} {
		got, ok := ShareResetDuration(in)
		if want < 0 {
			if ok {
				t.Errorf("%s: %v accepted", in, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, ok, want)
		}
	}
}
