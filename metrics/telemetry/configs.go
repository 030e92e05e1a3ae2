// Package telemetry owns client telemetry (KIP-714) on the broker's side:
// the CLIENT_METRICS subscriptions' configs and their validation, the
// client instances that GetTelemetrySubscriptions and PushTelemetry
// create, their matching against the subscriptions, the checks Kafka's
// ClientMetricsManager makes on a push, and the pushed OTLP metrics, held
// per client instance until it departs and re-exported as Prometheus
// samples (Kafka needs an exporter plugin for that).
//
// Bounds: at most MaxInstances client instances, MaxSeriesPerClient series
// per instance and MaxSeries series in all; a payload is at most
// telemetry.max.bytes, compressed and decompressed. An instance expires
// max(60 s, 3 push intervals) after its last request, and its series with
// it.
package telemetry

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The keys of a CLIENT_METRICS resource (Kafka's ClientMetricsConfigs).
const (
	KeyMetrics  = "metrics"
	KeyInterval = "interval.ms"
	KeyMatch    = "match"
)

// The match selectors of the match key.
const (
	MatchInstanceID      = "client_instance_id"
	MatchClientID        = "client_id"
	MatchSoftwareName    = "client_software_name"
	MatchSoftwareVersion = "client_software_version"
	MatchSourceAddress   = "client_source_address"
	MatchSourcePort      = "client_source_port"
)

const (
	// DefaultIntervalMs is interval.ms's default (5 minutes).
	DefaultIntervalMs = 5 * 60 * 1000
	minIntervalMs     = 100
	maxIntervalMs     = 3600000
	// allMetrics in metrics subscribes to every metric.
	allMetrics = "*"
)

var matchSelectors = []string{MatchInstanceID, MatchClientID, MatchSoftwareName, MatchSoftwareVersion, MatchSourceAddress, MatchSourcePort}

// Keys lists the keys of a CLIENT_METRICS resource, sorted.
func Keys() []string { return []string{KeyInterval, KeyMatch, KeyMetrics} }

// KeyDoc is Kafka's documentation of a key.
func KeyDoc(name string) string {
	switch name {
	case KeyMetrics:
		return "Telemetry metric name prefix list"
	case KeyInterval:
		return "Metrics push interval in milliseconds"
	case KeyMatch:
		return "Client match criteria"
	}
	return ""
}

// Default is a key's default value, as DescribeConfigs shows it.
func Default(name string) string {
	if name == KeyInterval {
		return strconv.Itoa(DefaultIntervalMs)
	}
	return ""
}

// IsList says whether a key is a LIST (APPEND and SUBTRACT apply).
func IsList(name string) bool { return name == KeyMetrics || name == KeyMatch }

// ConfigError is a refused subscription: Err is INVALID_REQUEST or
// INVALID_CONFIG, as Kafka's controller answers, with its message.
type ConfigError struct {
	Err     *kerr.Error
	Message string
}

func (e *ConfigError) Error() string { return e.Message }

// Subscription is one parsed CLIENT_METRICS resource.
type Subscription struct {
	Name       string
	Metrics    []string // prefixes; "*" (or "") is every metric
	IntervalMs int32
	Match      map[string]*regexp.Regexp // selector -> pattern, all must match the whole value
}

// splitList is Kafka's LIST parsing: comma separated, trimmed, an empty
// string is the empty list.
func splitList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Parse validates a subscription's configs as Kafka's
// ClientMetricsConfigs.validate does and returns it parsed.
func Parse(name string, configs map[string]string) (Subscription, error) {
	if name == "" {
		return Subscription{}, &ConfigError{kerr.InvalidRequest, "Subscription name can't be empty"}
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if !slices.Contains(Keys(), k) {
			return Subscription{}, &ConfigError{kerr.InvalidRequest, "Unknown client metrics configuration: " + k}
		}
	}
	sub := Subscription{Name: name, IntervalMs: DefaultIntervalMs, Metrics: splitList(configs[KeyMetrics])}
	if v, ok := configs[KeyInterval]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return Subscription{}, &ConfigError{kerr.InvalidConfig, "Invalid value " + v + " for configuration " + KeyInterval + ": Not a number of type INT"}
		}
		if n < minIntervalMs || n > maxIntervalMs {
			return Subscription{}, &ConfigError{kerr.InvalidRequest, "Invalid value " + strconv.FormatInt(n, 10) + " for " + KeyInterval +
				", interval must be between 100 and 3600000 (1 hour)"}
		}
		sub.IntervalMs = int32(n)
	}
	patterns := splitList(configs[KeyMatch])
	if len(patterns) > 0 {
		sub.Match = make(map[string]*regexp.Regexp, len(patterns))
	}
	for _, p := range patterns {
		// Java's String.split("=") drops trailing empty strings: "a=b="
		// is two parts, "a==b" three.
		parts := strings.Split(p, "=")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		illegal := &ConfigError{kerr.InvalidConfig, "Illegal client matching pattern: " + p}
		if len(parts) != 2 {
			return Subscription{}, illegal
		}
		sel := strings.TrimSpace(parts[0])
		if !slices.Contains(matchSelectors, sel) {
			return Subscription{}, illegal
		}
		// Java's Matcher.matches: the pattern must match the whole value.
		re, err := regexp.Compile(`^(?:` + strings.TrimSpace(parts[1]) + `)$`)
		if err != nil {
			return Subscription{}, illegal
		}
		sub.Match[sel] = re
	}
	return sub, nil
}
