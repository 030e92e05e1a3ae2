package telemetry

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/strait/strait/storage/compress"
)

const (
	// MaxSeriesPerClient bounds the series one client instance keeps; the
	// points past it in a push are dropped (and counted).
	MaxSeriesPerClient = 2000
	// MaxSeries bounds the series of every client together.
	MaxSeries = 50000
	// maxLabels and maxLabelValue bound one series' labels.
	maxLabels     = 32
	maxLabelValue = 256
	// namePrefix starts every re-exported metric's name.
	namePrefix = "kafka_client_"
)

// series is one pushed metric point stream of a client instance.
type series struct {
	name    string // Prometheus name
	counter bool
	labels  []string // name, value, name, value... sorted by name
	value   float64
}

// client is what a client instance pushed.
type client struct {
	series  map[string]*series // by name and labels
	expires time.Time
}

// Store holds the pushed metrics per client instance and is the
// prometheus.Collector that re-exports them.
type Store struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	clients map[[16]byte]*client
	total   int // series over every client

	dropped atomic.Int64 // points refused by the bounds
	pushes  atomic.Int64
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) forget(id [16]byte) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(id)
}

func (s *Store) forgetLocked(id [16]byte) {
	if c := s.clients[id]; c != nil {
		s.total -= len(c.series)
		delete(s.clients, id)
	}
}

// Series returns how many series the store holds.
func (s *Store) Series() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// decompressPayload undoes the push's compression, within limit bytes.
func decompressPayload(codec int8, data []byte, limit int64) ([]byte, *ConfigError) {
	if codec == 0 {
		return data, nil
	}
	out, err := compress.Decompress(compress.Codec(codec), data, limit)
	if err != nil {
		if strings.Contains(err.Error(), "limit") {
			return nil, &ConfigError{kerr.TelemetryTooLarge, "The decompressed telemetry payload is larger than the maximum allowed size [" + strconv.FormatInt(limit, 10) + "]"}
		}
		return nil, &ConfigError{kerr.InvalidRecord, "The telemetry payload could not be decompressed: " + err.Error()}
	}
	return out, nil
}

// put decodes an OTLP ExportMetricsServiceRequest (the same message as
// MetricsData on the wire: field 1, repeated ResourceMetrics) and merges
// its points into the client's series: a gauge or cumulative sum replaces
// the value, a delta sum adds to it (the subscription asks for deltas, as
// Kafka's does, and Prometheus counters are cumulative).
func (s *Store) put(id [16]byte, clientID string, payload []byte, expires time.Time) *ConfigError {
	if s == nil {
		return nil
	}
	var md metricspb.MetricsData
	if err := proto.Unmarshal(payload, &md); err != nil {
		return &ConfigError{kerr.InvalidRecord, "The telemetry payload is not an OTLP metrics request: " + err.Error()}
	}
	s.pushes.Add(1)
	instanceID := FormatUUID(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients == nil {
		s.clients = map[[16]byte]*client{}
	}
	s.expireLocked()
	c := s.clients[id]
	if c == nil {
		c = &client{series: map[string]*series{}}
		s.clients[id] = c
	}
	c.expires = expires
	var key strings.Builder
	for _, rm := range md.GetResourceMetrics() {
		resource := attributes(rm.GetResource().GetAttributes(), nil)
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				name := PrometheusName(m.GetName())
				var points []*metricspb.NumberDataPoint
				counter, delta := false, false
				switch {
				case m.GetGauge() != nil:
					points = m.GetGauge().GetDataPoints()
				case m.GetSum() != nil:
					points = m.GetSum().GetDataPoints()
					counter = m.GetSum().GetIsMonotonic()
					delta = m.GetSum().GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
				default:
					continue // histograms and summaries: the Java client sends none
				}
				for _, p := range points {
					labels := attributes(p.GetAttributes(), maps.Clone(resource))
					labels["client_instance_id"] = instanceID
					labels["client_id"] = clientID
					pairs := labelPairs(labels)
					key.Reset()
					key.WriteString(name)
					for _, v := range pairs {
						key.WriteByte(0)
						key.WriteString(v)
					}
					v := p.GetAsDouble()
					if _, isInt := p.GetValue().(*metricspb.NumberDataPoint_AsInt); isInt {
						v = float64(p.GetAsInt())
					}
					se := c.series[key.String()]
					if se == nil {
						if len(c.series) >= MaxSeriesPerClient || s.total >= MaxSeries {
							s.dropped.Add(1)
							continue
						}
						se = &series{name: name, counter: counter, labels: pairs}
						c.series[key.String()] = se
						s.total++
						delta = false // a first delta is the value so far
						se.value = 0
					}
					if counter && delta {
						se.value += v
					} else {
						se.value = v
					}
				}
			}
		}
	}
	return nil
}

// expireLocked forgets the clients past their expiry.
func (s *Store) expireLocked() {
	now := s.now()
	for id, c := range s.clients {
		if !c.expires.After(now) {
			s.forgetLocked(id)
		}
	}
}

// attributes adds kvs to into (a new map if nil) as Prometheus labels,
// within the bounds; values that are not scalars are skipped.
func attributes(kvs []*commonpb.KeyValue, into map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for _, kv := range kvs {
		if len(into) >= maxLabels {
			break
		}
		var v string
		switch x := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			v = x.StringValue
		case *commonpb.AnyValue_BoolValue:
			v = strconv.FormatBool(x.BoolValue)
		case *commonpb.AnyValue_IntValue:
			v = strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_DoubleValue:
			v = strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		}
		if v == "" {
			continue // Prometheus reads an empty label as an absent one
		}
		if len(v) > maxLabelValue {
			v = v[:maxLabelValue]
		}
		into[labelName(kv.GetKey())] = v
	}
	return into
}

func labelPairs(labels map[string]string) []string {
	out := make([]string, 0, 2*len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k, labels[k])
	}
	return out
}

// PrometheusName is the re-exported name of an OTLP metric:
// kafka_client_ and the name with every character Prometheus does not
// allow (the dots) as '_'.
func PrometheusName(otlp string) string {
	return namePrefix + sanitize(otlp, true)
}

func labelName(k string) string {
	n := sanitize(k, false)
	if n == "" || strings.HasPrefix(n, "__") { // reserved by Prometheus
		n = "attr_" + n
	}
	return n
}

func sanitize(s string, colon bool) string {
	if len(s) > maxLabelValue {
		s = s[:maxLabelValue]
	}
	b := []byte(s)
	for i, c := range b {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0 || colon && c == ':'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

var (
	descPushes  = prometheus.NewDesc("strait_client_telemetry_pushes_total", "PushTelemetry payloads decoded.", nil, nil)
	descDropped = prometheus.NewDesc("strait_client_telemetry_dropped_points_total", "Pushed metric points dropped by the series bounds.", nil, nil)
	descSeries  = prometheus.NewDesc("strait_client_telemetry_series", "Client metric series held.", nil, nil)
	descClients = prometheus.NewDesc("strait_client_telemetry_clients", "Client instances whose pushed metrics are held.", nil, nil)
)

// Describe sends only the store's own metrics: the client metrics' names
// are not known in advance (an unchecked collector for those).
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPushes
	ch <- descDropped
	ch <- descSeries
	ch <- descClients
}

// Collect emits every live series. A family (one name) gets the union of
// its series' label names, missing ones empty, and one type and help
// text, as the registry demands of a family.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	type family struct {
		counter bool
		labels  map[string]bool
		series  []*series
	}
	s.mu.Lock()
	s.expireLocked()
	families := map[string]*family{}
	var n, clients int
	for _, c := range s.clients {
		clients++
		for _, se := range c.series {
			n++
			f := families[se.name]
			if f == nil {
				f = &family{counter: se.counter, labels: map[string]bool{}}
				families[se.name] = f
			}
			if f.counter != se.counter {
				continue
			}
			for i := 0; i < len(se.labels); i += 2 {
				f.labels[se.labels[i]] = true
			}
			f.series = append(f.series, &series{name: se.name, counter: se.counter, labels: se.labels, value: se.value})
		}
	}
	s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descPushes, prometheus.CounterValue, float64(s.pushes.Load()))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(s.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(descSeries, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(clients))
	for name, f := range families {
		names := slices.Sorted(maps.Keys(f.labels))
		typ := prometheus.GaugeValue
		if f.counter {
			typ = prometheus.CounterValue
		}
		desc := prometheus.NewDesc(name, "Client metric pushed with KIP-714 telemetry.", names, nil)
		values := make([]string, len(names))
		for _, se := range f.series {
			clear(values)
			for i := 0; i < len(se.labels); i += 2 {
				j, _ := slices.BinarySearch(names, se.labels[i])
				values[j] = se.labels[i+1]
			}
			if math.IsNaN(se.value) && f.counter {
				continue
			}
			m, err := prometheus.NewConstMetric(desc, typ, se.value, values...)
			if err != nil {
				ch <- prometheus.NewInvalidMetric(desc, fmt.Errorf("client metric %s: %w", name, err))
				continue
			}
			ch <- m
		}
	}
}
