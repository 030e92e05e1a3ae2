package config

func init() {
	invalidCases = append(invalidCases, []struct {
		key, value string
		extra      map[string]string
		msg        string
	}{
		{"max.connections", "-1", nil, "Invalid value -1 for configuration max.connections: Value must be at least 0"},
		{"max.connections.per.ip", "-1", nil, "Invalid value -1 for configuration max.connections.per.ip: Value must be at least 0"},
		{"max.connections.per.ip", "0", nil, "requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."},
		{"max.connections.per.ip.overrides", "127.0.0.1", nil, "Invalid value 127.0.0.1 for configuration max.connections.per.ip.overrides: Each entry must be host:count with a count of at least 0"},
		{"max.connections.per.ip.overrides", "h:x", nil, "Invalid value h:x for configuration max.connections.per.ip.overrides: Each entry must be host:count with a count of at least 0"},
	}...)
	anyValueOfItsType = append(anyValueOfItsType, "connections.max.idle.ms")
}
