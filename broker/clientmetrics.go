package broker

// Client telemetry (KIP-714) and its CLIENT_METRICS config resources
// (resource type 16, `kafka-client-metrics`):
//
//   - DescribeConfigs lists a subscription's keys that are set (source
//     CLIENT_METRICS_CONFIG), as Kafka's ConfigHelper; the empty name is
//     INVALID_REQUEST;
//   - AlterConfigs and IncrementalAlterConfigs validate the resulting
//     configs as Kafka's ClientMetricsConfigs.validate (package
//     metrics/telemetry) and store them in etcd
//     (controller/client_metrics_configs.go); deleting every key removes
//     the subscription;
//   - ListConfigResources lists the subscriptions;
//   - GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72) are
//     answered by the telemetry manager, which matches each client against
//     the subscriptions and keeps what it pushes for /metrics. They need no
//     authorization, as in Kafka. Kafka serves them only with an exporter
//     plugin configured; Strait always does, its exporter being /metrics.
//
// Authorization is the cluster's DESCRIBE_CONFIGS and ALTER_CONFIGS
// (authorize.go), as Kafka.

import (
	"context"
	"maps"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/metrics/telemetry"
)

func init() {
	register(kmsg.GetTelemetrySubscriptions, 0, 0, handleGetTelemetrySubscriptions)
	register(kmsg.PushTelemetry, 0, 0, handlePushTelemetry)
}

// newTelemetry builds the manager and registers its store on the broker's
// registry.
func (s *Server) newTelemetry() {
	store := &telemetry.Store{Now: s.clock.Now}
	s.telemetry = &telemetry.Manager{
		Subscriptions: s.ctrl.ClientMetricsSubscriptions,
		MaxBytes:      s.dynamicConfigs().state.Load().layers.TelemetryMaxBytes(),
		Now:           s.clock.Now,
		Store:         store,
	}
	s.metrics.Registry.MustRegister(store)
}

func telemetryError(err error) int16 {
	if ce, ok := err.(*telemetry.ConfigError); ok {
		return ce.Err.Code
	}
	return kerr.UnknownServerError.Code
}

func (c *conn) telemetryClient(x *exchange) telemetry.Client {
	cl := telemetry.Client{ClientID: x.req.ClientIDString(), SourceAddress: c.ip}
	if _, port, err := net.SplitHostPort(c.nc.RemoteAddr().String()); err == nil {
		cl.SourcePort = port
	}
	if sw := c.software.Load(); sw != nil {
		cl.SoftwareName, cl.SoftwareVersion = sw[0], sw[1]
	}
	return cl
}

func handleGetTelemetrySubscriptions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	sub, err := c.srv.telemetry.Get(req.ClientInstanceID, c.telemetryClient(x))
	if err != nil {
		c.logger().Debug("get telemetry subscriptions refused", "err", err)
		resp.ErrorCode = telemetryError(err)
		x.respond(resp)
		return
	}
	resp.ClientInstanceID = sub.InstanceID
	resp.SubscriptionID = sub.SubscriptionID
	resp.AcceptedCompressionTypes = slices.Clone(telemetry.AcceptedCompressionTypes)
	resp.PushIntervalMillis = sub.IntervalMs
	resp.TelemetryMaxBytes = c.srv.telemetry.MaxBytes
	resp.DeltaTemporality = true
	resp.RequestedMetrics = sub.Metrics
	x.respond(resp)
}

func handlePushTelemetry(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	err := c.srv.telemetry.Push(telemetry.Push{
		InstanceID: req.ClientInstanceID, SubscriptionID: req.SubscriptionID, Terminating: req.Terminating,
		Compression: req.CompressionType, Metrics: req.Metrics,
	}, c.telemetryClient(x))
	if err != nil {
		c.logger().Debug("push telemetry refused", "err", err)
		resp.ErrorCode = telemetryError(err)
	}
	x.respond(resp)
}

func (s *Server) describeClientMetrics(name string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if name == "" {
		return nil, &controller.Error{Err: kerr.InvalidRequest, Message: "Client metrics subscription name must not be empty"}
	}
	configs := s.ctrl.ClientMetricsConfigs(name)
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(configs))
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Value, e.Source = k, ptr(configs[k]), kmsg.ConfigSourceClientMetricsConfig
		e.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
		if doc := telemetry.KeyDoc(k); doc != "" {
			e.Documentation = ptr(doc)
		}
		out = append(out, e)
	}
	return out, nil
}

// clientMetricsListKey is applyControllerOps' listKey: metrics and match
// are LISTs (default empty).
func clientMetricsListKey(name string) (*string, bool) {
	if telemetry.IsList(name) {
		return ptr(""), true
	}
	return nil, false
}

func (s *Server) alterClientMetrics(ctx context.Context, r alterResource, validateOnly bool) error {
	if r.name == "" {
		return requestError("Subscription name can't be empty")
	}
	update := func(current map[string]string) (map[string]string, error) {
		next, err := applyControllerOps(current, r, clientMetricsListKey)
		if err != nil {
			return nil, err
		}
		if _, err := telemetry.Parse(r.name, next); err != nil {
			ce := err.(*telemetry.ConfigError)
			return nil, &controller.Error{Err: ce.Err, Message: ce.Message}
		}
		return next, nil
	}
	if validateOnly {
		_, err := update(maps.Clone(s.ctrl.ClientMetricsConfigs(r.name)))
		return err
	}
	return s.ctrl.UpdateClientMetricsConfigs(ctx, r.name, update)
}
