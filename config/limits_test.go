package config

import "testing"

func init() {
	invalidCases = append(invalidCases, struct {
		key, value string
		extra      map[string]string
		msg        string
	}{"queued.max.requests", "0", nil, "Invalid value 0 for configuration queued.max.requests: Value must be at least 1"})
	// Kafka's queued.max.request.bytes has no validator: a value up to 0
	// leaves requests unbounded.
	anyValueOfItsType = append(anyValueOfItsType, "queued.max.request.bytes")
}

func TestLimitsParsed(t *testing.T) {
	c := Default()
	if c.Limits.QueuedMaxRequests != 500 || c.Limits.QueuedMaxRequestBytes != -1 {
		t.Fatalf("defaults: %+v; want queued.max.requests 500, queued.max.request.bytes -1", c.Limits)
	}
	c, _, err := Parse(map[string]string{"queued.max.requests": "8", "queued.max.request.bytes": "1048576"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.QueuedMaxRequests != 8 || c.Limits.QueuedMaxRequestBytes != 1<<20 {
		t.Fatalf("parsed %+v", c.Limits)
	}
}
