package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

func alterClientMetrics(t *testing.T, cl *kgo.Client, name string, ops ...groupOp) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.name, o.op, o.value
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	if m := resp.Resources[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Resources[0].ErrorCode, msg
}

func describeClientMetrics(t *testing.T, cl *kgo.Client, name string) (int16, map[string]string) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		if c.Source != kmsg.ConfigSourceClientMetricsConfig || c.Value == nil {
			t.Errorf("entry %s: source %v", c.Name, c.Source)
			continue
		}
		out[c.Name] = *c.Value
	}
	return resp.Resources[0].ErrorCode, out
}

func listClientMetrics(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeClientMetrics)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("list: %v %d", err, resp.ErrorCode)
	}
	var names []string
	for _, r := range resp.ConfigResources {
		names = append(names, r.Name)
	}
	return names
}

func TestClientMetricsConfigsAndTelemetry(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	cl := newClient(t, srv, kgo.ClientID("telemetry-app"))

	// Kafka's validation, in its codes and words.
	for _, c := range []struct {
		name string
		ops  []groupOp
		code int16
		msg  string
	}{
		{"", []groupOp{set("metrics", "a")}, kerr.InvalidRequest.Code, "Subscription name can't be empty"},
		{"s", []groupOp{set("color", "red")}, kerr.InvalidRequest.Code, "Unknown client metrics configuration: color"},
		{"s", []groupOp{set("interval.ms", "10")}, kerr.InvalidRequest.Code, "Invalid value 10 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", []groupOp{set("match", "rack=x")}, kerr.InvalidConfig.Code, "Illegal client matching pattern: rack=x"},
		{"s", []groupOp{{"interval.ms", kmsg.IncrementalAlterConfigOpAppend, ptrTo("5")}}, kerr.InvalidConfig.Code,
			"Can't APPEND to key interval.ms because its type is not LIST."},
	} {
		if code, msg := alterClientMetrics(t, cl, c.name, c.ops...); code != c.code || msg != c.msg {
			t.Errorf("alter %q %v: %d %q; want %d %q", c.name, c.ops, code, msg, c.code, c.msg)
		}
	}
	if names := listClientMetrics(t, cl); len(names) != 0 {
		t.Fatalf("refused alterations left subscriptions: %v", names)
	}
	// kafka-client-metrics --alter --name sub1 --metrics ... --interval 1000
	if code, msg := alterClientMetrics(t, cl, "sub1", set("metrics", "org.apache.kafka.producer."), set("interval.ms", "1000"),
		set("match", "client_id=telemetry-.*")); code != 0 {
		t.Fatalf("alter sub1: %d %s", code, msg)
	}
	if code, _ := alterClientMetrics(t, cl, "sub1", groupOp{"metrics", kmsg.IncrementalAlterConfigOpAppend, ptrTo("org.apache.kafka.consumer.")}); code != 0 {
		t.Fatalf("append: %d", code)
	}
	code, configs := describeClientMetrics(t, cl, "sub1")
	if code != 0 || configs["metrics"] != "org.apache.kafka.producer.,org.apache.kafka.consumer." || configs["interval.ms"] != "1000" ||
		configs["match"] != "client_id=telemetry-.*" || len(configs) != 3 {
		t.Fatalf("describe sub1: %d %v", code, configs)
	}
	if code, _ := describeClientMetrics(t, cl, ""); code != kerr.InvalidRequest.Code {
		t.Fatalf("describe of the empty name: %d", code)
	}
	if names := listClientMetrics(t, cl); strings.Join(names, ",") != "sub1" {
		t.Fatalf("list: %v", names)
	}

	// The client matches sub1.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	sub, err := get.RequestWith(ctx, cl)
	if err != nil || sub.ErrorCode != 0 {
		t.Fatalf("get subscriptions: %v %d", err, sub.ErrorCode)
	}
	if sub.PushIntervalMillis != 1000 || strings.Join(sub.RequestedMetrics, ",") != "org.apache.kafka.consumer.,org.apache.kafka.producer." ||
		!sub.DeltaTemporality || sub.TelemetryMaxBytes != 1048576 || len(sub.AcceptedCompressionTypes) != 4 || sub.AcceptedCompressionTypes[0] != 4 {
		t.Fatalf("subscription %+v", sub)
	}
	md := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{
		Name: "org.apache.kafka.producer.record.queue.time.avg",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{
			Attributes: []*commonpb.KeyValue{{Key: "node.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "1"}}}},
			Value:      &metricspb.NumberDataPoint_AsDouble{AsDouble: 1.5}}}}},
	}}}}}}}
	payload, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	push := kmsg.NewPtrPushTelemetryRequest()
	push.ClientInstanceID, push.SubscriptionID, push.Metrics = sub.ClientInstanceID, sub.SubscriptionID, payload
	pr, err := push.RequestWith(ctx, cl)
	if err != nil || pr.ErrorCode != 0 {
		t.Fatalf("push: %v %d", err, pr.ErrorCode)
	}
	// Too early again.
	pr, err = push.RequestWith(ctx, cl)
	if err != nil || pr.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("early push: %v %d", err, pr.ErrorCode)
	}
	fams, err := srv.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range fams {
		if f.GetName() != "kafka_client_org_apache_kafka_producer_record_queue_time_avg" {
			continue
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			found = labels["client_id"] == "telemetry-app" && labels["node_id"] == "1" && labels["client_instance_id"] != "" && m.GetGauge().GetValue() == 1.5
		}
	}
	if !found {
		t.Fatal("the pushed metric is not in the broker's registry")
	}

	// Deleting every key removes the subscription.
	if code, _ := alterClientMetrics(t, cl, "sub1", del("metrics"), del("interval.ms"), del("match")); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if names := listClientMetrics(t, cl); len(names) != 0 {
		t.Fatalf("list after delete: %v", names)
	}
}

// CLIENT_METRICS resources need the cluster's ALTER_CONFIGS (and
// DESCRIBE_CONFIGS, which it implies); the telemetry APIs need nothing.
func TestClientMetricsAuthorized(t *testing.T) {
	srv := startBroker(t, t.TempDir(),
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found", "true")
	defer srv.Close()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	allow := func(ops ...kadm.ACLOperation) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, kadm.NewACLs().Clusters().Allow("User:ANONYMOUS").Operations(ops...).ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil || res[0].Err != nil {
			t.Fatalf("create ACL: %v %v", err, res)
		}
	}
	// The cluster has ACLs now: what they do not allow is denied.
	allow(kadm.OpAlter, kadm.OpDescribe)
	if code, _ := alterClientMetrics(t, cl, "s", set("metrics", "a.")); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter without ALTER_CONFIGS: %d", code)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "s"
	req.Resources = append(req.Resources, r)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe without DESCRIBE_CONFIGS: %v %v", err, resp)
	}
	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	if resp, err := get.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("get telemetry subscriptions: %v %v", err, resp)
	}
	allow(kadm.OpAlterConfigs)
	if code, msg := alterClientMetrics(t, cl, "s", set("metrics", "a.")); code != 0 {
		t.Fatalf("alter with ALTER_CONFIGS: %d %s", code, msg)
	}
	if code, configs := describeClientMetrics(t, cl, "s"); code != 0 || configs["metrics"] != "a." {
		t.Fatalf("describe with ALTER_CONFIGS: %d %v", code, configs)
	}
}
