package config

// Listeners: listeners, advertised.listeners, listener.security.protocol.map,
// inter.broker.listener.name and controller.listener.names, validated as
// KafkaConfig does.

import (
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	Name             string // listener name, e.g. PLAINTEXT (upper case, as Kafka normalises it)
	Host             string // may be "" (all interfaces) for listeners
	Port             int32  // 0 = pick a free port (tests)
	SecurityProtocol string // from listener.security.protocol.map, default: the name if it is a protocol name
}

// String renders the listener as Kafka writes it: NAME://host:port.
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
}

// listenerPattern is SocketServerConfigs.URI_PARSE_REGEXP, anchored as matches() is.
var listenerPattern = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// parseListeners fills c.Network (listeners, advertised listeners, the inter-broker and
// controller listener names), validating them as KafkaConfig does.
func (c *Config) parseListeners(p *props) error {
	c.Network.ControllerListenerNames = nil
	for _, n := range strings.Split(p.str("controller.listener.names"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			c.Network.ControllerListenerNames = append(c.Network.ControllerListenerNames, n)
		}
	}
	isController := func(name string) bool { return slices.Contains(c.Network.ControllerListenerNames, name) }

	// listener.security.protocol.map (KafkaConfig.effectiveListenerSecurityProtocolMap).
	protoMap := map[string]string{}
	for _, sp := range securityProtocols {
		protoMap[sp] = sp
	}
	listenersRaw := p.str("listeners")
	if p.has("listener.security.protocol.map") {
		m, err := parseProtocolMap(p.m["listener.security.protocol.map"])
		if err != nil {
			return err
		}
		protoMap = m
	} else {
		// KRaft adds PLAINTEXT for controller listener names when nothing uses
		// SSL or SASL and no map was given.
		sslOrSasl := func(n string) bool { return n == "SSL" || n == "SASL_SSL" || n == "SASL_PLAINTEXT" }
		usesSecure := slices.ContainsFunc(c.Network.ControllerListenerNames, sslOrSasl)
		for _, e := range parseCsvList(listenersRaw) {
			if name, _, ok := strings.Cut(e, "://"); ok && sslOrSasl(name) {
				usesSecure = true
			}
		}
		if !usesSecure {
			for _, n := range c.Network.ControllerListenerNames {
				protoMap[strings.ToUpper(n)] = "PLAINTEXT"
			}
		}
	}

	all, err := parseListenerList("listeners", listenersRaw, protoMap, true)
	if err != nil {
		return err
	}
	var names []string
	c.Network.Listeners = nil
	for _, l := range all {
		names = append(names, l.Name)
		if !isController(l.Name) {
			c.Network.Listeners = append(c.Network.Listeners, l)
		}
	}
	if len(c.Network.Listeners) == 0 {
		return invalidValue("listeners", p.raw("listeners"), "There must be at least one broker listener (one not in controller.listener.names)")
	}

	if p.has("advertised.listeners") {
		adv, err := parseListenerList("advertised.listeners", p.str("advertised.listeners"), protoMap, false)
		if err != nil {
			return err
		}
		c.Network.Advertised = nil
		for _, l := range adv {
			if !isController(l.Name) {
				c.Network.Advertised = append(c.Network.Advertised, l)
			}
		}
	} else {
		c.Network.Advertised = slices.Clone(c.Network.Listeners)
	}
	var advNames []string
	for _, l := range c.Network.Advertised {
		advNames = append(advNames, l.Name)
	}
	if len(advNames) == 0 {
		return &ConfigError{Key: "advertised.listeners", Message: "There must be at least one advertised listener. Perhaps all listeners appear in controller.listener.names?"}
	}

	// inter.broker.listener.name or security.inter.broker.protocol.
	if p.has("inter.broker.listener.name") {
		if p.has("security.inter.broker.protocol") {
			return &ConfigError{Key: "inter.broker.listener.name", Message: "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."}
		}
		name := strings.ToUpper(p.str("inter.broker.listener.name"))
		if _, ok := protoMap[name]; !ok {
			return &ConfigError{Key: "inter.broker.listener.name", Message: "Listener with name " + name +
				" defined in inter.broker.listener.name not found in listener.security.protocol.map."}
		}
		c.Network.InterBrokerListenerName = name
	} else {
		proto := p.str("security.inter.broker.protocol")
		if !slices.Contains(securityProtocols, strings.ToUpper(proto)) {
			return &ConfigError{Key: "security.inter.broker.protocol", Message: "Invalid security protocol `" + proto + "` defined in security.inter.broker.protocol"}
		}
		c.Network.InterBrokerListenerName = strings.ToUpper(proto)
	}
	if !slices.Contains(advNames, c.Network.InterBrokerListenerName) {
		return &ConfigError{Key: "inter.broker.listener.name", Message: "inter.broker.listener.name must be a listener name defined in advertised.listeners. " +
			"The valid options based on currently configured listeners are " + strings.Join(advNames, ",")}
	}
	for _, n := range advNames {
		if !slices.Contains(names, n) {
			return &ConfigError{Key: "advertised.listeners", Message: "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. " +
				"Found " + strings.Join(advNames, ",") + ". The valid options based on the current configuration are " + strings.Join(names, ",")}
		}
	}
	for _, l := range c.Network.Advertised {
		if l.Host == "0.0.0.0" {
			return &ConfigError{Key: "advertised.listeners", Message: "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."}
		}
	}
	return nil
}

// parseProtocolMap parses listener.security.protocol.map (Csv.parseCsvMap: the
// last ':' of an entry splits name from protocol).
func parseProtocolMap(raw string) (map[string]string, error) {
	const key = "listener.security.protocol.map"
	m := map[string]string{}
	for _, e := range strings.Split(strings.TrimSpace(raw), ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndexByte(e, ':')
		if i < 0 {
			return nil, &ConfigError{Key: key, Message: "Error parsing configuration property '" + key + "': entry " + e + " is not of the form NAME:PROTOCOL"}
		}
		name, proto := strings.TrimSpace(e[:i]), strings.TrimSpace(e[i+1:])
		if !slices.Contains(securityProtocols, strings.ToUpper(proto)) {
			return nil, &ConfigError{Key: key, Message: "Invalid security protocol `" + proto + "` defined in " + key}
		}
		m[strings.ToUpper(name)] = strings.ToUpper(proto)
	}
	return m, nil
}

// parseListenerList is CoreUtils.listenerListToEndPoints: NAME://host:port
// entries, names normalised to upper case, unique names, and (for listeners)
// unique non-zero ports unless exactly one IPv4 and one IPv6 address share one.
func parseListenerList(key, raw string, protoMap map[string]string, requireDistinctPorts bool) ([]Listener, error) {
	var out []Listener
	for _, e := range parseCsvList(raw) {
		m := listenerPattern.FindStringSubmatch(e)
		if m == nil {
			return nil, invalidValue(key, raw, "Unable to parse "+e+" to a broker endpoint")
		}
		port, err := strconv.ParseInt(m[3], 10, 32)
		if err != nil || port < 0 || port > 65535 {
			return nil, invalidValue(key, raw, "Invalid port "+m[3]+" in "+e)
		}
		name := strings.ToUpper(m[1])
		proto, ok := protoMap[name]
		if !ok {
			return nil, invalidValue(key, raw, "No security protocol defined for listener "+name)
		}
		out = append(out, Listener{Name: name, Host: m[2], Port: int32(port), SecurityProtocol: proto})
	}
	seen := map[string]bool{}
	for _, l := range out {
		if seen[l.Name] {
			return nil, invalidValue(key, raw, "Each listener must have a different name, listeners: "+raw)
		}
		seen[l.Name] = true
	}
	if !requireDistinctPorts {
		return out, nil
	}
	byPort := map[int32][]Listener{}
	for _, l := range out {
		if l.Port != 0 { // port 0 is for tests: every one gets its own port
			byPort[l.Port] = append(byPort[l.Port], l)
		}
	}
	for _, port := range slices.Sorted(maps.Keys(byPort)) {
		ls := byPort[port]
		if len(ls) < 2 {
			continue
		}
		var v4, v6, other int
		for _, l := range ls {
			ip := net.ParseIP(l.Host)
			switch {
			case ip == nil:
				other++
			case ip.To4() != nil:
				v4++
			default:
				v6++
			}
		}
		switch {
		case other > 1 || (other == 1 && v4+v6 == 0):
			return nil, invalidValue(key, raw, "Each listener must have a different port, listeners: "+raw)
		case len(ls) > 2:
			return nil, invalidValue(key, raw, "Each listener must have a different port unless exactly one listener has "+
				"an IPv4 address and the other IPv6 address, listeners: "+raw+", port: "+strconv.Itoa(int(port)))
		case v4 != 1 || v6 != 1:
			return nil, invalidValue(key, raw, "If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: "+
				raw+", port: "+strconv.Itoa(int(port)))
		}
	}
	return out, nil
}
