package telemetry

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/strait/strait/storage/compress"
)

func code(err error) int16 {
	if err == nil {
		return 0
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce.Err.Code
	}
	return -1
}

func TestParseValidatesAsKafka(t *testing.T) {
	cases := []struct {
		name    string
		configs map[string]string
		code    int16
		msg     string
	}{
		{"", map[string]string{"metrics": "a"}, kerr.InvalidRequest.Code, "Subscription name can't be empty"},
		{"s", map[string]string{"nope": "1"}, kerr.InvalidRequest.Code, "Unknown client metrics configuration: nope"},
		{"s", map[string]string{"interval.ms": "99"}, kerr.InvalidRequest.Code, "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"interval.ms": "3600001"}, kerr.InvalidRequest.Code, "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"interval.ms": "x"}, kerr.InvalidConfig.Code, "Invalid value x for configuration interval.ms: Not a number of type INT"},
		{"s", map[string]string{"match": "client_id"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id"},
		{"s", map[string]string{"match": "rack=a"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: rack=a"},
		{"s", map[string]string{"match": "client_id=a=b"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id=a=b"},
		{"s", map[string]string{"match": "client_id=(a"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id=(a"},
		{"s", map[string]string{"metrics": "org.apache.kafka.producer., org.apache.kafka.consumer.", "interval.ms": "1000",
			"match": "client_id = app-.*, client_software_name=apache-kafka-java"}, 0, ""},
	}
	for _, c := range cases {
		sub, err := Parse(c.name, c.configs)
		if code(err) != c.code || (err != nil && err.Error() != c.msg) {
			t.Errorf("Parse(%q, %v) = %v (code %d); want code %d %q", c.name, c.configs, err, code(err), c.code, c.msg)
		}
		if err == nil && (sub.IntervalMs != 1000 || len(sub.Metrics) != 2 || sub.Metrics[1] != "org.apache.kafka.consumer." || len(sub.Match) != 2) {
			t.Errorf("parsed %+v", sub)
		}
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newManager(subs map[string]map[string]string) (*Manager, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	src := subs
	m := &Manager{Subscriptions: func() map[string]map[string]string { return src }, MaxBytes: 1 << 20, Now: clk.now,
		Store: &Store{Now: clk.now}}
	return m, clk
}

var javaClient = Client{ClientID: "app-1", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.1.0", SourceAddress: "127.0.0.1", SourcePort: "50000"}

func TestMatchingAndSubscriptionID(t *testing.T) {
	m, _ := newManager(map[string]map[string]string{
		"producers": {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_software_name=apache-kafka-java"},
		"app":       {"metrics": "org.apache.kafka.consumer.", "interval.ms": "2000", "match": "client_id=app-.*,client_source_address=127\\.0\\.0\\.1"},
		"other":     {"metrics": "*", "interval.ms": "500", "match": "client_id=other"},
		"partial":   {"metrics": "x.", "match": "client_id=app"}, // must match the whole id
	})
	sub, err := m.Get([16]byte{}, javaClient)
	if err != nil {
		t.Fatal(err)
	}
	if sub.InstanceID == ([16]byte{}) || strings.Join(sub.Metrics, ",") != "org.apache.kafka.consumer.,org.apache.kafka.producer." || sub.IntervalMs != 1000 {
		t.Fatalf("subscription %+v", sub)
	}
	if want := SubscriptionID(sub.Metrics, 1000, sub.InstanceID); sub.SubscriptionID != want {
		t.Fatalf("subscription id %d, want %d", sub.SubscriptionID, want)
	}
	// Another client id matches only the unconditional-by-software one;
	// a client matching "*" gets every metric.
	sub2, _ := m.Get([16]byte{}, Client{ClientID: "other", SoftwareName: "apache-kafka-java"})
	if strings.Join(sub2.Metrics, ",") != "*" || sub2.IntervalMs != 500 {
		t.Fatalf("other's subscription %+v", sub2)
	}
	none, _ := m.Get([16]byte{}, Client{ClientID: "x", SoftwareName: "librdkafka"})
	if len(none.Metrics) != 0 || none.IntervalMs != DefaultIntervalMs {
		t.Fatalf("unmatched client's subscription %+v", none)
	}
	// Matching on the instance id.
	m2, _ := newManager(map[string]map[string]string{"one": {"metrics": "a.", "match": "client_instance_id=" + FormatUUID(none.InstanceID)}})
	if s, _ := m2.Get(none.InstanceID, Client{}); strings.Join(s.Metrics, ",") != "a." {
		t.Fatalf("instance id match: %+v", s)
	}
}

// otlpPayload is an ExportMetricsServiceRequest with n gauge points of
// name, and a delta monotonic sum.
func otlpPayload(name string, n int, sumDelta int64) []byte {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	var points []*metricspb.NumberDataPoint
	for i := range n {
		points = append(points, &metricspb.NumberDataPoint{Attributes: []*commonpb.KeyValue{str("topic", fmt.Sprintf("t%d", i))},
			Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(i) + 0.5}})
	}
	md := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("client_rack", "r1"), str("__bad", "x")}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: points}}},
			{Name: "org.apache.kafka.producer.record.send.total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
				IsMonotonic: true, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
				DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: sumDelta}}}}}},
		}}},
	}}}
	b, err := proto.Marshal(md)
	if err != nil {
		panic(err)
	}
	return b
}

func gather(t *testing.T, s *Store) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func TestPushErrorsAndExport(t *testing.T) {
	m, clk := newManager(map[string]map[string]string{"p": {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"}})
	sub, err := m.Get([16]byte{}, javaClient)
	if err != nil {
		t.Fatal(err)
	}
	id := sub.InstanceID
	// Asking again within the interval is throttled.
	if _, err := m.Get(id, javaClient); code(err) != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("early get: %v", err)
	}
	push := func(p Push) error { p.InstanceID = id; return m.Push(p, javaClient) }
	if err := m.Push(Push{}, javaClient); code(err) != kerr.InvalidRequest.Code {
		t.Fatalf("zero instance id: %v", err)
	}
	if err := push(Push{SubscriptionID: sub.SubscriptionID + 1, Metrics: []byte{1}}); code(err) != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("wrong subscription id: %v", err)
	}
	// The push above counted as this interval's: the next is early.
	if err := push(Push{SubscriptionID: sub.SubscriptionID}); code(err) != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("early push: %v", err)
	}
	clk.advance(time.Second)
	if err := push(Push{SubscriptionID: sub.SubscriptionID, Compression: 9}); code(err) != kerr.UnsupportedCompressionType.Code {
		t.Fatalf("compression 9: %v", err)
	}
	clk.advance(time.Second)
	if err := push(Push{SubscriptionID: sub.SubscriptionID, Metrics: make([]byte, 1<<20+1)}); code(err) != kerr.TelemetryTooLarge.Code {
		t.Fatalf("too large: %v", err)
	}
	clk.advance(time.Second)
	if err := push(Push{SubscriptionID: sub.SubscriptionID, Metrics: []byte{0xff, 0xff, 0xff}}); code(err) != kerr.InvalidRecord.Code {
		t.Fatalf("undecodable: %v", err)
	}
	clk.advance(time.Second)
	// A zstd payload that decompresses past telemetry.max.bytes.
	big, _ := compress.Compress(compress.Codec(4), nil, make([]byte, 2<<20))
	if err := push(Push{SubscriptionID: sub.SubscriptionID, Compression: 4, Metrics: big}); code(err) != kerr.TelemetryTooLarge.Code {
		t.Fatalf("decompressed too large: %v", err)
	}
	for i, c := range []int8{0, 4, 3, 1, 2} {
		clk.advance(time.Second)
		payload := otlpPayload("org.apache.kafka.producer.record.queue.time.avg", 3, 5)
		if c != 0 {
			payload, _ = compress.Compress(compress.Codec(c), nil, payload)
		}
		if err := push(Push{SubscriptionID: sub.SubscriptionID, Compression: c, Metrics: payload}); err != nil {
			t.Fatalf("push %d (codec %d): %v", i, c, err)
		}
	}
	fams := gather(t, m.Store)
	g := fams["kafka_client_org_apache_kafka_producer_record_queue_time_avg"]
	if g == nil || len(g.Metric) != 3 || g.GetType() != dto.MetricType_GAUGE {
		t.Fatalf("gauge family: %v", g)
	}
	labels := map[string]string{}
	for _, l := range g.Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["client_instance_id"] != FormatUUID(id) || labels["client_id"] != "app-1" || labels["client_rack"] != "r1" ||
		labels["attr___bad"] != "x" || !strings.HasPrefix(labels["topic"], "t") {
		t.Fatalf("labels %v", labels)
	}
	// Five delta pushes of 5: the counter is cumulative.
	c := fams["kafka_client_org_apache_kafka_producer_record_send_total"]
	if c == nil || c.GetType() != dto.MetricType_COUNTER || c.Metric[0].GetCounter().GetValue() != 25 {
		t.Fatalf("counter family: %v", c)
	}
	// Terminating: accepted early once, then every push is refused.
	if err := push(Push{SubscriptionID: sub.SubscriptionID, Terminating: true}); err != nil {
		t.Fatalf("terminating push: %v", err)
	}
	clk.advance(time.Second)
	if err := push(Push{SubscriptionID: sub.SubscriptionID}); code(err) != kerr.InvalidRequest.Code {
		t.Fatalf("push after terminating: %v", err)
	}
	// The client departs: its series expire after max(60 s, 3 intervals).
	clk.advance(61 * time.Second)
	if fams := gather(t, m.Store); fams["kafka_client_org_apache_kafka_producer_record_queue_time_avg"] != nil {
		t.Fatal("a departed client's series are still exported")
	}
	if m.Store.Series() != 0 {
		t.Fatalf("%d series held after expiry", m.Store.Series())
	}
}

func TestSubscriptionChangeReevaluates(t *testing.T) {
	subs := map[string]map[string]string{"p": {"metrics": "a.", "interval.ms": "60000"}}
	m, _ := newManager(nil)
	m.Subscriptions = func() map[string]map[string]string { return subs }
	s1, _ := m.Get([16]byte{}, javaClient)
	subs = map[string]map[string]string{"p": {"metrics": "b.", "interval.ms": "60000"}}
	// Within the interval, but the subscriptions changed: answered at once.
	s2, err := m.Get(s1.InstanceID, javaClient)
	if err != nil || strings.Join(s2.Metrics, ",") != "b." || s2.SubscriptionID == s1.SubscriptionID {
		t.Fatalf("after a change: %+v, %v (before %+v)", s2, err, s1)
	}
	// The old subscription id is now unknown.
	if err := m.Push(Push{InstanceID: s1.InstanceID, SubscriptionID: s1.SubscriptionID}, javaClient); code(err) != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("stale subscription id: %v", err)
	}
	// ... and so the client may ask again right away (Kafka lets it).
	if _, err := m.Get(s1.InstanceID, javaClient); err != nil {
		t.Fatalf("get after UNKNOWN_SUBSCRIPTION_ID: %v", err)
	}
}

// A client pushing many series, and many clients, stay within the bounds.
func TestStoreBounds(t *testing.T) {
	m, clk := newManager(map[string]map[string]string{"all": {"metrics": "*", "interval.ms": "100"}})
	sub, _ := m.Get([16]byte{}, javaClient)
	huge := otlpPayload("org.apache.kafka.producer.huge", MaxSeriesPerClient+500, 1)
	if len(huge) > int(m.MaxBytes) {
		t.Fatalf("payload of %d bytes over the limit: the test needs a smaller one", len(huge))
	}
	if err := m.Push(Push{InstanceID: sub.InstanceID, SubscriptionID: sub.SubscriptionID, Metrics: huge}, javaClient); err != nil {
		t.Fatal(err)
	}
	if n := m.Store.Series(); n != MaxSeriesPerClient {
		t.Fatalf("one client holds %d series; want the bound %d", n, MaxSeriesPerClient)
	}
	// Many clients: the total stays at MaxSeries.
	clients := MaxSeries/MaxSeriesPerClient + 5
	for i := range clients {
		clk.advance(time.Millisecond)
		c := javaClient
		c.ClientID = fmt.Sprintf("c%d", i)
		s, err := m.Get([16]byte{}, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Push(Push{InstanceID: s.InstanceID, SubscriptionID: s.SubscriptionID, Metrics: huge}, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Store.Series(); n != MaxSeries {
		t.Fatalf("%d series held; want the bound %d", n, MaxSeries)
	}
	if m.Store.dropped.Load() == 0 {
		t.Fatal("no dropped points counted")
	}
}

// The instance cache is bounded: past MaxInstances the quietest goes.
func TestInstanceBound(t *testing.T) {
	m, clk := newManager(nil)
	for range MaxInstances + 10 {
		clk.advance(time.Microsecond * 10)
		if _, err := m.Get([16]byte{}, javaClient); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Instances(); n != MaxInstances {
		t.Fatalf("%d instances; want the bound %d", n, MaxInstances)
	}
}
