package broker

// GROUP config resources (resource type 32) of DescribeConfigs,
// AlterConfigs and IncrementalAlterConfigs, as Kafka 4.4 serves
// `kafka-configs --entity-type groups`:
//
//   - the keys are GroupConfig's (config/groups.go); a group need not exist,
//     its configs may be set before it does;
//   - the empty name is "Default group resources are not allowed."
//     (INVALID_REQUEST) to alter and "Group name must not be empty" to
//     describe;
//   - the group's whole resulting configs are validated as Kafka's controller
//     does (GroupConfig.validate): an unknown key, a malformed value or one
//     outside the broker's group.* bounds is INVALID_CONFIG with Kafka's
//     message; APPEND and SUBTRACT are INVALID_CONFIG ("... its type is not
//     LIST.", as Kafka answers for every group key);
//   - AlterConfigs (legacy) replaces the group's configs, as Kafka 4.4's
//     controller does;
//   - the configs live in etcd (controller/group_configs.go); the group
//     coordinator reads consumer.session.timeout.ms and
//     consumer.heartbeat.interval.ms on every heartbeat (groupConsumerTimeouts),
//     so a change reaches the running group at its members' next heartbeat;
//     streams.session.timeout.ms, streams.heartbeat.interval.ms and
//     streams.num.standby.replicas likewise for streams groups
//     (groupStreamsSettings). The share coordinator (share_service.go)
//     reads the share.* keys at each share group request. The other
//     streams.* keys are stored and described, and have no effect yet.

import (
	"context"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
)

func (s *Server) describeGroupConfigs(layers *config.Layers, name string, withSynonyms, withDocs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if name == "" {
		return nil, &controller.Error{Err: kerr.InvalidRequest, Message: "Group name must not be empty"}
	}
	return layers.GroupEntries(s.ctrl.GroupConfigs(name), withSynonyms, withDocs), nil
}

// groupListKey is applyControllerOps' listKey for group configs: no group
// key is a LIST, so Kafka refuses APPEND and SUBTRACT on every one.
func groupListKey(string) (*string, bool) { return nil, false }

func (s *Server) alterGroupConfigs(ctx context.Context, r alterResource, validateOnly bool) error {
	if r.name == "" {
		return requestError("Default group resources are not allowed.")
	}
	layers := s.dynamicConfigs().state.Load().layers
	update := func(current map[string]string) (map[string]string, error) {
		next, err := applyControllerOps(current, r, groupListKey)
		if err != nil {
			return nil, err
		}
		if err := layers.ValidateGroupConfigs(next); err != nil {
			return nil, err
		}
		return next, nil
	}
	if validateOnly {
		current := maps.Clone(s.ctrl.GroupConfigs(r.name))
		if current == nil {
			current = map[string]string{}
		}
		_, err := update(current)
		return err
	}
	return s.ctrl.UpdateGroupConfigs(ctx, r.name, update)
}

// groupConsumerTimeouts is the coordinator's ConsumerTimeouts: the group's
// configs over the broker's group.consumer.* settings (session and
// heartbeat), read from the controller's cache and the current dynamic
// config layers, without I/O.
func (s *Server) groupConsumerTimeouts(session, heartbeat time.Duration) func(string) (time.Duration, time.Duration) {
	return func(groupID string) (time.Duration, time.Duration) {
		overrides := s.ctrl.GroupConfigs(groupID)
		if len(overrides) == 0 {
			return session, heartbeat
		}
		return s.dynamicConfigs().state.Load().layers.GroupConsumerTimeouts(overrides, session, heartbeat)
	}
}

// groupStreamsSettings is the coordinator's StreamsSettings: a streams
// group's configs over the broker's group.streams.* settings (def), read
// from the controller's cache and the current dynamic config layers.
func (s *Server) groupStreamsSettings(def group.StreamsSettings) func(string) group.StreamsSettings {
	return func(groupID string) group.StreamsSettings {
		overrides := s.ctrl.GroupConfigs(groupID)
		if len(overrides) == 0 {
			return def
		}
		out := def
		out.Session, out.Heartbeat, out.NumStandby = s.dynamicConfigs().state.Load().layers.GroupStreamsSettings(
			overrides, def.Session, def.Heartbeat, def.NumStandby)
		return out
	}
}
