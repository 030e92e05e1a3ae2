package broker

// AlterConfigs (key 33) and IncrementalAlterConfigs (key 44); versions: see
// the registrations below.
//
// AlterConfigs replaces a resource's whole configuration (keys left out are
// removed); IncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT
// (the last two on LIST keys only) to the current one. Both take TOPIC and
// BROKER resources and validate as Kafka 4 does, in its order and words:
//
//   - the request: a resource named twice (INVALID_REQUEST for each), a key
//     named twice, or a null value other than DELETE's (INVALID_REQUEST);
//   - TOPIC: the name ("" is INVALID_REQUEST: no default topic resource; a
//     malformed one INVALID_TOPIC_EXCEPTION), then the resulting configs
//     exactly as CreateTopics validates them (INVALID_CONFIG with Kafka's
//     message), then existence (UNKNOWN_TOPIC_OR_PARTITION). The configs
//     are stored with the topic in etcd and reach the open logs through the
//     metadata watch;
//   - BROKER: "" is the cluster-wide default, else the name must be this
//     broker's node id (the client sends each broker its own); read-only
//     keys ("Cannot update these configs dynamically"), SSL keys without a
//     listener prefix, per-broker keys at the cluster level and invalid
//     values are INVALID_REQUEST, as Kafka's broker-side check reports them.
//     Unknown keys are accepted and stored, as Kafka does. The response comes
//     once this broker has applied the change (see dynamicconfig.go).
//
// GROUP resources are groupconfigs.go's. validate_only checks everything and
// writes nothing. BROKER_LOGGER (log levels) is brokerloggers.go's, for
// IncrementalAlterConfigs only; CLIENT_METRICS resources are
// clientmetrics.go's.

import (
	"context"
	"errors"
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

func init() {
	register(kmsg.AlterConfigs, 0, 2, handleAlterConfigs)
	register(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs)
}

// alterOp is one config change of either request; AlterConfigs' entries are
// all SETs of a legacy resource.
type alterOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// alterResource is one resource of either request.
type alterResource struct {
	typ    kmsg.ConfigResourceType
	name   string
	ops    []alterOp
	legacy bool  // AlterConfigs: ops are the resource's whole new configuration
	denied error // not authorized (authorize.go): answered without a change
}

func requestError(msg string) error { return &controller.Error{Err: kerr.InvalidRequest, Message: msg} }
func configError(msg string) error  { return &controller.Error{Err: kerr.InvalidConfig, Message: msg} }

func handleAlterConfigs(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resources := make([]alterResource, len(req.Resources))
	for i, r := range req.Resources {
		ar := alterResource{typ: r.ResourceType, name: r.ResourceName, legacy: true,
			denied: c.configsDenied(r.ResourceType, r.ResourceName, acl.OpAlterConfigs)}
		for _, cf := range r.Configs {
			ar.ops = append(ar.ops, alterOp{name: cf.Name, op: kmsg.IncrementalAlterConfigOpSet, value: cf.Value})
		}
		resources[i] = ar
	}
	errs := c.srv.alterConfigs(resources, req.ValidateOnly)
	var fields errorFieldsMemo
	resp.Resources = make([]kmsg.AlterConfigsResponseResource, 0, len(req.Resources))
	for i, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = fields.of(errs[i])
		resp.Resources = append(resp.Resources, rr)
	}
	x.respond(resp)
}

func handleIncrementalAlterConfigs(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resources := make([]alterResource, len(req.Resources))
	for i, r := range req.Resources {
		ar := alterResource{typ: r.ResourceType, name: r.ResourceName,
			denied: c.configsDenied(r.ResourceType, r.ResourceName, acl.OpAlterConfigs)}
		for _, cf := range r.Configs {
			ar.ops = append(ar.ops, alterOp{name: cf.Name, op: cf.Op, value: cf.Value})
		}
		resources[i] = ar
	}
	errs := c.srv.alterConfigs(resources, req.ValidateOnly)
	var fields errorFieldsMemo
	resp.Resources = make([]kmsg.IncrementalAlterConfigsResponseResource, 0, len(req.Resources))
	for i, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = fields.of(errs[i])
		resp.Resources = append(resp.Resources, rr)
	}
	x.respond(resp)
}

// errorFieldsMemo is alterErrorFields remembering its last answer: the
// copies of a resource named many times share one error, and so one code
// and message.
type errorFieldsMemo struct {
	err  error
	code int16
	msg  *string
}

func (m *errorFieldsMemo) of(err error) (int16, *string) {
	if err == nil || err != m.err {
		m.err = err
		m.code, m.msg = alterErrorFields(err)
	}
	return m.code, m.msg
}

func alterErrorFields(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	code, _ := errorCode(err)
	msg := controller.ErrorMessage(err)
	var te *config.TopicConfigError
	if errors.As(err, &te) {
		msg = te.Message
	}
	return code, &msg
}

// alterConfigs applies each resource and returns its error (nil: done).
func (s *Server) alterConfigs(resources []alterResource, validateOnly bool) []error {
	type resourceID struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	count := make(map[resourceID]int, len(resources))
	for _, r := range resources {
		count[resourceID{r.typ, r.name}]++
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	errs := make([]error, len(resources))
	dup := requestError("Each resource must appear at most once.") // one for every copy
	for i, r := range resources {
		if count[resourceID{r.typ, r.name}] > 1 {
			errs[i] = dup
			continue
		}
		if r.denied != nil {
			errs[i] = r.denied
			continue
		}
		errs[i] = s.alterResource(ctx, r, validateOnly)
		if errs[i] != nil {
			s.logger.Info("alter configs refused", "resource_type", resourceTypeName(r.typ), "resource", r.name, "err", errs[i])
		}
	}
	return errs
}

func (s *Server) alterResource(ctx context.Context, r alterResource, validateOnly bool) error {
	seen := make(map[string]bool, len(r.ops))
	var nulls []string
	for _, op := range r.ops {
		if seen[op.name] {
			return requestError("Error due to duplicate config keys")
		}
		seen[op.name] = true
		if op.value == nil && (r.legacy || op.op != kmsg.IncrementalAlterConfigOpDelete) {
			nulls = append(nulls, op.name)
		}
	}
	if len(nulls) > 0 {
		return requestError("Null value not supported for : " + strings.Join(nulls, ", "))
	}
	switch r.typ {
	case kmsg.ConfigResourceTypeTopic:
		return s.alterTopicConfigs(ctx, r, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		return s.alterBrokerConfigs(ctx, r, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return s.alterGroupConfigs(ctx, r, validateOnly) // groupconfigs.go
	case kmsg.ConfigResourceTypeClientMetrics:
		return s.alterClientMetrics(ctx, r, validateOnly) // clientmetrics.go
	case kmsg.ConfigResourceTypeBrokerLogger:
		if !r.legacy {
			return s.alterBrokerLoggers(r, validateOnly) // brokerloggers.go
		}
	}
	return requestError("Unknown resource type " + strconv.Itoa(int(r.typ)))
}

func (s *Server) alterTopicConfigs(ctx context.Context, r alterResource, validateOnly bool) error {
	if r.name == "" {
		return requestError("Default topic resources are not allowed.")
	}
	if err := controller.ValidateTopicName(r.name); err != nil {
		return err
	}
	update := func(current map[string]string) (map[string]string, error) {
		next, err := applyControllerOps(current, r, topicListKey)
		if err != nil {
			return nil, err
		}
		if err := config.ValidateTopicConfigs(next); err != nil {
			return nil, err
		}
		return next, nil
	}
	t, ok := s.ctrl.Topic(r.name)
	if !ok || validateOnly {
		// Kafka validates before it checks that the topic exists.
		current := map[string]string{}
		if ok {
			current = maps.Clone(t.Configs)
		}
		if _, err := update(current); err != nil {
			return err
		}
		if !ok {
			return &controller.Error{Err: kerr.UnknownTopicOrPartition, Message: "The topic '" + r.name + "' does not exist."}
		}
		return nil
	}
	return s.ctrl.UpdateTopicConfigs(ctx, r.name, update)
}

// applyControllerOps is the controller's side of a topic or group
// alteration (ConfigurationControlManager): SET and DELETE; APPEND and
// SUBTRACT work on a LIST key's current value, else its default, split on
// commas. listKey says whether a key is a LIST and gives its default.
func applyControllerOps(current map[string]string, r alterResource, listKey func(name string) (def *string, isList bool)) (map[string]string, error) {
	if r.legacy {
		return legacyConfigs(r), nil
	}
	// A topic without overrides has a nil map (maps.Clone of nil is nil).
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range r.ops {
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.name] = *op.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			def, isList := listKey(op.name)
			if !isList {
				return nil, configError("Can't " + op.op.String() + " to key " + op.name + " because its type is not LIST.")
			}
			var parts []string
			old, ok := current[op.name]
			if !ok && def != nil {
				old, ok = *def, true
			}
			if ok {
				for _, p := range config.JavaSplit(old) {
					if p != "" {
						parts = append(parts, p)
					}
				}
			}
			for _, v := range config.JavaSplit(*op.value) {
				i := slices.Index(parts, v)
				switch {
				case op.op == kmsg.IncrementalAlterConfigOpAppend && i < 0:
					parts = append(parts, v)
				case op.op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0:
					parts = slices.Delete(parts, i, i+1)
				}
			}
			next[op.name] = strings.Join(parts, ",")
		default:
			return nil, requestError("Unknown operations type " + strconv.Itoa(int(op.op)))
		}
	}
	return next, nil
}

// topicListKey is applyControllerOps' listKey for topic configs.
func topicListKey(name string) (*string, bool) {
	k, known := config.TopicKey(name)
	return k.Default, known && k.List
}

// legacyConfigs is what an AlterConfigs (not incremental) request leaves: its
// values alone, every other dynamic config of the resource removed.
func legacyConfigs(r alterResource) map[string]string {
	next := make(map[string]string, len(r.ops))
	for _, op := range r.ops {
		next[op.name] = *op.value
	}
	return next
}

func (s *Server) alterBrokerConfigs(ctx context.Context, r alterResource, validateOnly bool) error {
	perBrokerEntity := r.name != ""
	if perBrokerEntity {
		id, err := strconv.ParseInt(r.name, 10, 32)
		if err != nil {
			return requestError("Node id must be an integer, but it is: " + r.name)
		}
		if int32(id) != s.cfg.NodeID {
			return requestError("Unexpected broker id, expected " + strconv.Itoa(int(s.cfg.NodeID)) + ", but received " + r.name)
		}
	}
	dyn := s.dynamicConfigs()
	update := func(current map[string]string) (map[string]string, error) {
		next, err := applyBrokerOps(current, r)
		if err != nil {
			return nil, err
		}
		if err := s.validateDynamicBrokerConfigs(dyn.state.Load().layers, next, perBrokerEntity); err != nil {
			return nil, err
		}
		return next, nil
	}
	if validateOnly {
		layers := dyn.state.Load().layers
		current := layers.DynamicDefault
		if perBrokerEntity {
			current = layers.DynamicBroker
		}
		current = maps.Clone(current)
		if current == nil {
			current = map[string]string{}
		}
		_, err := update(current)
		return err
	}
	rev, err := s.ctrl.UpdateBrokerConfigs(ctx, r.name, update)
	if err != nil {
		return err
	}
	if err := dyn.waitForRevision(ctx, rev); err != nil {
		return err
	}
	// The watch hands the new log defaults to the logs in the background;
	// doing it here as well means the response comes after the logs have them.
	dyn.reapply()
	return nil
}

// applyBrokerOps is the broker's side of a broker config alteration
// (ConfigAdminManager.prepareIncrementalConfigs).
func applyBrokerOps(current map[string]string, r alterResource) (map[string]string, error) {
	if r.legacy {
		return legacyConfigs(r), nil
	}
	for _, op := range r.ops {
		if op.op > kmsg.IncrementalAlterConfigOpSubtract {
			return nil, requestError("Unknown operations type " + strconv.Itoa(int(op.op)))
		}
	}
	// A topic without overrides has a nil map (maps.Clone of nil is nil).
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range r.ops {
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.name] = *op.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.name)
		default:
			k, known := config.BrokerKey(op.name)
			if !known {
				return nil, configError("Unknown config name: " + op.name)
			}
			verb := "append"
			if op.op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			if !k.List {
				return nil, configError("Config value " + verb + " is not allowed for config key: " + op.name)
			}
			old, ok := next[op.name]
			if !ok && k.Default != nil {
				old, ok = *k.Default, true
			}
			if op.op == kmsg.IncrementalAlterConfigOpAppend {
				var parts []string
				if ok && old != "" {
					parts = config.JavaSplit(old)
				}
				existing := slices.Clone(parts)
				for _, v := range config.JavaSplit(*op.value) {
					if !slices.Contains(existing, v) {
						parts = append(parts, v)
					}
				}
				next[op.name] = strings.Join(parts, ",")
				continue
			}
			parts := config.JavaSplit(old)
			for _, v := range config.JavaSplit(*op.value) {
				if i := slices.Index(parts, v); i >= 0 {
					parts = slices.Delete(parts, i, i+1)
				}
			}
			next[op.name] = strings.Join(parts, ",")
		}
	}
	return next, nil
}

// validateDynamicBrokerConfigs is DynamicBrokerConfig.validate for an
// entity's whole new set of dynamic configs (config.Layers.Validate). Every
// failure is INVALID_REQUEST (KAFKA-13609).
func (s *Server) validateDynamicBrokerConfigs(layers *config.Layers, props map[string]string, perBrokerEntity bool) error {
	if err := layers.Validate(props, perBrokerEntity); err != nil {
		return requestError(err.Error())
	}
	if perBrokerEntity {
		// New key or trust stores must load, and may replace the
		// current ones, before they are stored (Kafka's
		// SslFactory.validateReconfiguration).
		next, err := s.cfg.WithDynamic(config.NewLayers(s.cfg, layers.DynamicDefault, props))
		if err != nil {
			return requestError(err.Error())
		}
		for name, tlsCfg := range changedListenerTLS(s.currentConfig(), next) {
			if st := s.listenerTLS(name); st != nil {
				if err := st.CheckReload(tlsCfg); err != nil {
					return requestError(err.Error())
				}
			}
		}
	}
	return nil
}
