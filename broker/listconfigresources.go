package broker

// ListConfigResources (key 74; v0 was ListClientMetricsResources, KIP-1142
// made it list every config resource in Kafka 4.1). v0 lists CLIENT_METRICS
// resources only; v1 lists the types asked for (none: all of them), in
// Kafka's order: GROUP (the groups that have configs; kafka-configs
// --entity-type groups --describe lists these and asks whether a group
// exists with it), CLIENT_METRICS (the subscriptions), BROKER_LOGGER and
// BROKER (the live brokers), TOPIC (every topic). A type Kafka does not list
// is UNSUPPORTED_VERSION, as Kafka answers it. It needs DESCRIBE_CONFIGS on
// the cluster (CLUSTER_AUTHORIZATION_FAILED), as in KafkaApis.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ListConfigResources, 0, 1, handleListConfigResources) }

func handleListConfigResources(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !c.authorizeCluster(acl.OpDescribeConfigs) { // authorize.go
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		x.respond(resp)
		return
	}
	supported := []int8{int8(kmsg.ConfigResourceTypeClientMetrics)}
	if x.req.Version >= 1 {
		supported = []int8{int8(kmsg.ConfigResourceTypeGroupConfig), int8(kmsg.ConfigResourceTypeClientMetrics),
			int8(kmsg.ConfigResourceTypeBrokerLogger), int8(kmsg.ConfigResourceTypeBroker), int8(kmsg.ConfigResourceTypeTopic)}
	}
	types := req.ResourceTypes
	if x.req.Version == 0 || len(types) == 0 {
		types = supported
	}
	for _, t := range types {
		if !slices.Contains(supported, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			x.respond(resp)
			return
		}
	}
	add := func(name string, t kmsg.ConfigResourceType) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	s := c.srv
	if slices.Contains(types, int8(kmsg.ConfigResourceTypeGroupConfig)) {
		for _, g := range s.ctrl.GroupConfigIDs() {
			add(g, kmsg.ConfigResourceTypeGroupConfig)
		}
	}
	if slices.Contains(types, int8(kmsg.ConfigResourceTypeClientMetrics)) {
		for _, n := range s.ctrl.ClientMetricsNames() {
			add(n, kmsg.ConfigResourceTypeClientMetrics)
		}
	}
	brokers := s.ctrl.Brokers()
	for _, t := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker} {
		if slices.Contains(types, int8(t)) {
			for _, b := range brokers {
				add(strconv.Itoa(int(b.NodeID)), t)
			}
		}
	}
	if slices.Contains(types, int8(kmsg.ConfigResourceTypeTopic)) {
		for _, t := range s.ctrl.Topics() {
			add(t.Name, kmsg.ConfigResourceTypeTopic)
		}
	}
	x.respond(resp)
}
