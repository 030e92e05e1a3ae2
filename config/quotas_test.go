package config

import "testing"

func init() {
	invalidCases = append(invalidCases, []struct {
		key, value string
		extra      map[string]string
		msg        string
	}{
		{"quota.window.num", "0", nil, "Invalid value 0 for configuration quota.window.num: Value must be at least 1"},
		{"quota.window.size.seconds", "0", nil, "Invalid value 0 for configuration quota.window.size.seconds: Value must be at least 1"},
		{"controller.quota.window.num", "0", nil, "Invalid value 0 for configuration controller.quota.window.num: Value must be at least 1"},
		{"controller.quota.window.size.seconds", "0", nil, "Invalid value 0 for configuration controller.quota.window.size.seconds: Value must be at least 1"},
		{"max.connection.creation.rate", "-1", nil, "Invalid value -1 for configuration max.connection.creation.rate: Value must be at least 0"},
	}...)
}

// Kafka's defaults: 11 windows of 1 s for both kinds of quota.
func TestClientQuotaWindowDefaults(t *testing.T) {
	c, _ := mustParse(t, map[string]string{})
	if q := c.ClientQuotas; q != (ClientQuotas{WindowNum: 11, WindowSizeSeconds: 1, ControllerWindowNum: 11, ControllerWindowSizeSeconds: 1,
		MaxConnectionCreationRate: 1<<31 - 1}) {
		t.Fatalf("defaults: %+v", q)
	}
	c, _ = mustParse(t, map[string]string{"quota.window.num": "3", "quota.window.size.seconds": "2"})
	if c.ClientQuotas.WindowNum != 3 || c.ClientQuotas.WindowSizeSeconds != 2 {
		t.Fatalf("set: %+v", c.ClientQuotas)
	}
}
