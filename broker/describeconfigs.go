package broker

// DescribeConfigs (key 32); versions: see the registration below (v0 was
// removed in Kafka 4).
//
// TOPIC resources list every topic config of Kafka 4.4 (config/catalog.go)
// with the value in force: the topic's override (DYNAMIC_TOPIC_CONFIG), else
// the broker key it falls back to, from whichever layer sets it
// (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG),
// else Kafka's default (DEFAULT_CONFIG). BROKER resources are named by node
// id and list every broker key the same way; the empty name is the cluster
// default and lists only what is set there. Synonyms (v1+, when asked) are the
// layers that set the key or its other spellings, highest first, as Kafka's
// ConfigHelper builds them; documentation (v3+, when asked) is Kafka's.
// Passwords, and keys Kafka does not know, are sensitive: no value.
//
// Errors, per resource: a malformed topic name is INVALID_TOPIC_EXCEPTION, a
// missing topic UNKNOWN_TOPIC_OR_PARTITION, another broker's id (the client
// must ask that broker) INVALID_REQUEST. BROKER_LOGGER lists the root
// logger's level; GROUP resources are groupconfigs.go's; CLIENT_METRICS
// resources are clientmetrics.go's.

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeConfigs, 1, 4, handleDescribeConfigs) }

func handleDescribeConfigs(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeConfigsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	layers := s.dynamicConfigs().state.Load().layers
	withDocs := req.IncludeDocumentation && x.req.Version >= 3
	// Each distinct resource is answered once (dedup.go): every copy of a
	// topic would bring back its whole configuration.
	seen := make(map[string]struct{}, min(len(req.Resources), 1024))
	for i := range req.Resources {
		r := &req.Resources[i]
		k := describeConfigsKey(r)
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorMessage = ptr("") // Kafka's default for the field, even on success
		rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		var configs []kmsg.DescribeConfigsResponseResourceConfig
		err := c.configsDenied(r.ResourceType, r.ResourceName, acl.OpDescribeConfigs) // authorize.go
		switch {
		case err != nil:
		case r.ResourceType == kmsg.ConfigResourceTypeTopic:
			configs, err = s.describeTopicConfigs(layers, r.ResourceName, req.IncludeSynonyms, withDocs)
		case r.ResourceType == kmsg.ConfigResourceTypeBroker:
			configs, err = s.describeBrokerConfigs(layers, r.ResourceName, req.IncludeSynonyms, withDocs)
		case r.ResourceType == kmsg.ConfigResourceTypeBrokerLogger:
			configs, err = s.describeBrokerLoggers(r.ResourceName)
		case r.ResourceType == kmsg.ConfigResourceTypeGroupConfig:
			configs, err = s.describeGroupConfigs(layers, r.ResourceName, req.IncludeSynonyms, withDocs)
		case r.ResourceType == kmsg.ConfigResourceTypeClientMetrics:
			configs, err = s.describeClientMetrics(r.ResourceName) // clientmetrics.go
		default:
			err = &controller.Error{Err: kerr.InvalidRequest, Message: "Unsupported resource type: " + resourceTypeName(r.ResourceType)}
		}
		if err != nil {
			code, _ := errorCode(err)
			rr.ErrorCode = code
			if msg := controller.ErrorMessage(err); msg != "" && code != kerr.UnknownTopicOrPartition.Code {
				rr.ErrorMessage = &msg
			}
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		for _, e := range configs {
			if len(r.ConfigNames) == 0 || slices.Contains(r.ConfigNames, e.Name) {
				rr.Configs = append(rr.Configs, e)
			}
		}
		resp.Resources = append(resp.Resources, rr)
	}
	x.respond(resp)
}

func (s *Server) describeTopicConfigs(layers *config.Layers, name string, withSynonyms, withDocs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if err := controller.ValidateTopicName(name); err != nil {
		return nil, err
	}
	t, ok := s.ctrl.Topic(name)
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	out := layers.TopicEntries(t.Configs, withSynonyms, withDocs)
	// Overrides Kafka no longer knows (stored by an older version) are
	// listed as Kafka lists unknown originals: sensitive, without a value.
	for name := range t.Configs {
		if !config.IsTopicKey(name) {
			e := kmsg.NewDescribeConfigsResponseResourceConfig()
			e.Name, e.Source, e.IsSensitive = name, kmsg.ConfigSourceDynamicTopicConfig, true
			if withSynonyms {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Source = name, kmsg.ConfigSourceDynamicTopicConfig
				e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *Server) describeBrokerConfigs(layers *config.Layers, name string, withSynonyms, withDocs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if name == "" {
		var out []kmsg.DescribeConfigsResponseResourceConfig
		for _, n := range slices.Sorted(maps.Keys(layers.DynamicDefault)) {
			out = append(out, layers.BrokerEntry(n, false, withSynonyms, withDocs))
		}
		return out, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return nil, &controller.Error{Err: kerr.InvalidRequest, Message: "Broker id must be an integer, but it is: " + name}
	}
	if int32(id) != s.cfg.NodeID {
		return nil, &controller.Error{Err: kerr.InvalidRequest, Message: "Unexpected broker id, expected " +
			strconv.Itoa(int(s.cfg.NodeID)) + " or empty string, but received " + name}
	}
	names := layers.BrokerEntryNames()
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(names))
	for _, n := range names {
		out = append(out, layers.BrokerEntry(n, true, withSynonyms, withDocs))
	}
	return out, nil
}

// describeBrokerLoggers lists the root logger's level, as Kafka lists its
// log4j loggers (Strait has one logger).
func (s *Server) describeBrokerLoggers(name string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if name == "" {
		return nil, &controller.Error{Err: kerr.InvalidRequest, Message: "Broker id must not be empty"}
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return nil, &controller.Error{Err: kerr.InvalidRequest, Message: "Broker id must be an integer, but it is: " + name}
	}
	if int32(id) != s.cfg.NodeID {
		return nil, &controller.Error{Err: kerr.InvalidRequest, Message: "Unexpected broker id, expected " +
			strconv.Itoa(int(s.cfg.NodeID)) + " but received " + name}
	}
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name, e.Value, e.Source = "root", ptr(logLevelName(s)), kmsg.ConfigSourceDynamicBrokerLoggerConfig
	e.Documentation = ptr("") // as Kafka leaves it for loggers
	e.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
	return []kmsg.DescribeConfigsResponseResourceConfig{e}, nil
}

// resourceTypeName is Kafka's ConfigResource.Type name.
func resourceTypeName(t kmsg.ConfigResourceType) string {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return "TOPIC"
	case kmsg.ConfigResourceTypeBroker:
		return "BROKER"
	case kmsg.ConfigResourceTypeBrokerLogger:
		return "BROKER_LOGGER"
	case kmsg.ConfigResourceTypeClientMetrics:
		return "CLIENT_METRICS"
	case kmsg.ConfigResourceTypeGroupConfig:
		return "GROUP"
	}
	return "UNKNOWN"
}

// createTopicsResponseConfigs is the configs list of a CreateTopics v5+
// response for a topic created with overrides: every topic config with the
// value, source and sensitivity DescribeConfigs would give it, as Kafka's
// controller answers.
func (s *Server) createTopicsResponseConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	layers := s.dynamicConfigs().state.Load().layers
	entries := layers.TopicEntries(overrides, false, false)
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.IsSensitive
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b kmsg.CreateTopicsResponseTopicConfig) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func ptr(s string) *string { return &s }
