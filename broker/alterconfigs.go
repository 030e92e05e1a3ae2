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
// validate_only checks everything and writes nothing. BROKER_LOGGER (log
// levels), GROUP and CLIENT_METRICS resources are not supported: INVALID_REQUEST.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
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
	legacy bool // AlterConfigs: ops are the resource's whole new configuration
}

func requestError(msg string) error { return &controller.Error{Err: kerr.InvalidRequest, Message: msg} }
func configError(msg string) error  { return &controller.Error{Err: kerr.InvalidConfig, Message: msg} }

func handleAlterConfigs(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resources := make([]alterResource, len(req.Resources))
	for i, r := range req.Resources {
		ar := alterResource{typ: r.ResourceType, name: r.ResourceName, legacy: true}
		for _, cf := range r.Configs {
			ar.ops = append(ar.ops, alterOp{name: cf.Name, op: kmsg.IncrementalAlterConfigOpSet, value: cf.Value})
		}
		resources[i] = ar
	}
	errs := c.srv.alterConfigs(resources, req.ValidateOnly)
	for i, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = alterErrorFields(errs[i])
		resp.Resources = append(resp.Resources, rr)
	}
	x.respond(resp)
}

func handleIncrementalAlterConfigs(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resources := make([]alterResource, len(req.Resources))
	for i, r := range req.Resources {
		ar := alterResource{typ: r.ResourceType, name: r.ResourceName}
		for _, cf := range r.Configs {
			ar.ops = append(ar.ops, alterOp{name: cf.Name, op: cf.Op, value: cf.Value})
		}
		resources[i] = ar
	}
	errs := c.srv.alterConfigs(resources, req.ValidateOnly)
	for i, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = alterErrorFields(errs[i])
		resp.Resources = append(resp.Resources, rr)
	}
	x.respond(resp)
}

func alterErrorFields(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	code, _ := errorCode(err)
	msg := controller.ErrorMessage(err)
	var te *TopicConfigError
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
	for i, r := range resources {
		if count[resourceID{r.typ, r.name}] > 1 {
			errs[i] = requestError("Each resource must appear at most once.")
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
		next, err := applyTopicOps(current, r)
		if err != nil {
			return nil, err
		}
		if err := ValidateTopicConfigs(next); err != nil {
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

// applyTopicOps is the controller's side of a topic alteration
// (ConfigurationControlManager): APPEND and SUBTRACT work on the current
// value, else the topic default, split on commas.
func applyTopicOps(current map[string]string, r alterResource) (map[string]string, error) {
	if r.legacy {
		next := make(map[string]string, len(r.ops))
		for _, op := range r.ops {
			next[op.name] = *op.value
		}
		return next, nil
	}
	next := current
	for _, op := range r.ops {
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.name] = *op.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			k := topicCatalogByName[op.name]
			if k == nil || k.typ != typeList {
				return nil, configError("Can't " + op.op.String() + " to key " + op.name + " because its type is not LIST.")
			}
			var parts []string
			old, ok := current[op.name]
			if !ok && k.def != nil {
				old, ok = *k.def, true
			}
			if ok {
				for _, p := range javaSplit(old) {
					if p != "" {
						parts = append(parts, p)
					}
				}
			}
			for _, v := range javaSplit(*op.value) {
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
		current := layers.dynamicDefault
		if perBrokerEntity {
			current = layers.dynamicBroker
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
		next := make(map[string]string, len(r.ops))
		for _, op := range r.ops {
			next[op.name] = *op.value
		}
		return next, nil
	}
	for _, op := range r.ops {
		if op.op > kmsg.IncrementalAlterConfigOpSubtract {
			return nil, requestError("Unknown operations type " + strconv.Itoa(int(op.op)))
		}
	}
	next := current
	for _, op := range r.ops {
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.name] = *op.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.name)
		default:
			k := brokerCatalogByName[op.name]
			if k == nil {
				return nil, configError("Unknown config name: " + op.name)
			}
			verb := "append"
			if op.op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			if k.typ != typeList {
				return nil, configError("Config value " + verb + " is not allowed for config key: " + op.name)
			}
			old, ok := next[op.name]
			if !ok && k.def != nil {
				old, ok = *k.def, true
			}
			if op.op == kmsg.IncrementalAlterConfigOpAppend {
				var parts []string
				if ok && old != "" {
					parts = javaSplit(old)
				}
				existing := slices.Clone(parts)
				for _, v := range javaSplit(*op.value) {
					if !slices.Contains(existing, v) {
						parts = append(parts, v)
					}
				}
				next[op.name] = strings.Join(parts, ",")
				continue
			}
			parts := javaSplit(old)
			for _, v := range javaSplit(*op.value) {
				if i := slices.Index(parts, v); i >= 0 {
					parts = slices.Delete(parts, i, i+1)
				}
			}
			next[op.name] = strings.Join(parts, ",")
		}
	}
	return next, nil
}

// clusterLevelListenerConfigs are listener configs that may be set for the
// whole cluster even with a listener prefix.
var clusterLevelListenerConfigs = []string{"max.connections", "max.connection.creation.rate", "num.network.threads"}

// validateDynamicBrokerConfigs is DynamicBrokerConfig.validate for an
// entity's whole new set of dynamic configs: what may be set dynamically
// and where, the values' types and ranges, and the configuration the broker
// would run with. Every failure is INVALID_REQUEST (KAFKA-13609).
func (s *Server) validateDynamicBrokerConfigs(layers *brokerLayers, props map[string]string, perBrokerEntity bool) error {
	names := slices.Sorted(maps.Keys(props))
	var nonDynamic, security, perBrokerOnly []string
	for _, n := range names {
		if nonDynamicBrokerConfigs[n] {
			nonDynamic = append(nonDynamic, n)
		}
		if dynamicSecurityConfigs[n] {
			security = append(security, n)
		}
		if k := brokerCatalogByName[n]; k != nil && k.mode == perBroker {
			perBrokerOnly = append(perBrokerOnly, n)
		} else if base, ok := listenerConfigName(n); ok && !slices.Contains(clusterLevelListenerConfigs, base) {
			perBrokerOnly = append(perBrokerOnly, n)
		}
	}
	if len(nonDynamic) > 0 {
		return requestError("Cannot update these configs dynamically: " + javaSetString(nonDynamic, len(props)*4/3+1))
	}
	if len(security) > 0 {
		return requestError("These security configs can be dynamically updated only per-listener using the listener prefix: " +
			javaSetString(security, 0))
	}
	for _, n := range names {
		base := n
		if b, ok := listenerConfigName(n); ok {
			base = b
		}
		if k := brokerCatalogByName[base]; k != nil {
			if err := checkType(base, props[n], k.typ); err != nil {
				return requestError(err.Error())
			}
		}
	}
	if !perBrokerEntity && len(perBrokerOnly) > 0 {
		return requestError("Cannot update these configs at default cluster level, broker id must be specified: " +
			javaSetString(perBrokerOnly, 0))
	}
	// The configuration this broker would run with: its own dynamic
	// configs over the cluster default over the static ones.
	merged := maps.Clone(layers.static)
	if perBrokerEntity {
		maps.Copy(merged, layers.dynamicDefault)
		maps.Copy(merged, props)
	} else {
		maps.Copy(merged, props)
		maps.Copy(merged, layers.dynamicBroker)
	}
	if _, _, err := ParseConfig(merged); err != nil {
		return requestError(err.Error())
	}
	return nil
}

// javaSplit is Java's String.split(","): trailing empty strings dropped, but
// "" gives one empty string.
func javaSplit(s string) []string {
	if s == "" {
		return []string{""}
	}
	parts := strings.Split(s, ",")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// javaSetString renders names as a java.util.HashSet of them prints,
// "[a, b]", in its iteration order: by hash bucket of a table of at least
// minCapacity (16 by default) grown at a load factor of 0.75. Kafka's error
// messages print such sets.
func javaSetString(names []string, minCapacity int) string {
	capacity := 16
	for capacity < minCapacity {
		capacity *= 2
	}
	for float64(len(names)) > 0.75*float64(capacity) {
		capacity *= 2
	}
	bucket := func(s string) uint32 {
		var h int32
		for _, r := range s {
			if r >= 0x10000 { // a surrogate pair in Java's UTF-16
				r -= 0x10000
				h = 31*h + int32(0xD800+(r>>10))
				h = 31*h + int32(0xDC00+(r&0x3FF))
				continue
			}
			h = 31*h + int32(r)
		}
		u := uint32(h)
		return (u ^ u>>16) & uint32(capacity-1)
	}
	sorted := slices.Clone(names)
	slices.SortStableFunc(sorted, func(a, b string) int { return int(bucket(a)) - int(bucket(b)) })
	return "[" + strings.Join(sorted, ", ") + "]"
}
