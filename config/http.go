package config

import (
	"net"
	"strconv"
)

// HTTP is Strait's own HTTP listener (no Kafka counterpart): Prometheus
// metrics, health probes.
type HTTP struct {
	// Listener is strait.http.listener: host:port to serve /metrics,
	// /healthz and /readyz on; empty (the default) serves nothing. Port 0
	// picks a free one (Server.HTTPAddr tells which).
	Listener string
}

func parseHTTP(p *props) HTTP {
	const key = "strait.http.listener"
	h := HTTP{Listener: p.str(key)}
	if h.Listener == "" {
		return h
	}
	host, port, err := net.SplitHostPort(h.Listener)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n < 0 || n > 65535 || (host != "" && net.ParseIP(host) == nil && !validHostname(host)) {
		p.fail(invalidValue(key, h.Listener, "Must be host:port (an empty host listens on every address)"))
	}
	return h
}

// validHostname accepts what a listener's host may be besides an IP.
func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
