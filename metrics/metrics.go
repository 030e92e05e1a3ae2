// Package metrics owns what one broker exposes to operators: its Prometheus
// registry (one per broker, no package-level state, so several brokers in
// one process do not collide), the instruments the request path updates
// (requests and their times per API, messages and bytes per topic,
// connections and failed authentications per listener), and the HTTP
// listener that serves /metrics, /healthz and /readyz. What is read from
// the broker's state at scrape time (partitions, groups, lag, etcd) is a
// prometheus.Collector the broker registers.
//
// Names are those the Prometheus JMX exporter gives Kafka's MBeans with the
// rules of the common Kafka dashboards (lowercased, "PerSec" counts as
// _total, times in ms), so that the dashboards work unchanged; Strait's own
// metrics start with strait_. README's "Metrics" section has the mapping.
package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics is one broker's registry and the instruments of its request path.
// Its methods are safe for concurrent use; the per-request ones take no lock
// once an API's or a topic's instruments exist.
type Metrics struct {
	Registry *prometheus.Registry

	requests   *prometheus.CounterVec
	totalTime  *prometheus.HistogramVec
	queueTime  *prometheus.HistogramVec
	localTime  *prometheus.HistogramVec
	remoteTime *prometheus.HistogramVec
	sendTime   *prometheus.HistogramVec
	apis       sync.Map // int16 api key -> *API

	messagesIn *prometheus.CounterVec
	bytesIn    *prometheus.CounterVec
	bytesOut   *prometheus.CounterVec
	topics     sync.Map // topic name -> *Topic

	failedAuth *prometheus.CounterVec
}

// timeBuckets are milliseconds, from a fraction of one (a Metadata from the
// cache) to a long-polling fetch's 30 s.
var timeBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

// New makes a registry with the Go runtime and process collectors and the
// request-path instruments.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kafka_network_requestmetrics_" + name, Help: help, Buckets: timeBuckets,
		}, []string{"request"})
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests handled, by API (Kafka's RequestMetrics RequestsPerSec).",
	}, []string{"request", "version"})
	m.totalTime = hist("totaltimems", "Time from a request's last byte read to its response's last byte written, ms.")
	m.queueTime = hist("requestqueuetimems", "Time a read request waited for an in-flight slot of its connection, ms.")
	m.localTime = hist("localtimems", "Time the request's handler ran, ms.")
	m.remoteTime = hist("remotetimems", "Time a request waited after its handler (acks=all replication, a parked fetch, another broker), ms.")
	m.sendTime = hist("responsesendtimems", "Time from the response being ready to its last byte written, ms.")
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_messagesin_total",
		Help: "Records appended by produce requests, by topic (BrokerTopicMetrics MessagesInPerSec).",
	}, []string{"topic"})
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesin_total",
		Help: "Record batch bytes appended by produce requests, by topic (BrokerTopicMetrics BytesInPerSec).",
	}, []string{"topic"})
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesout_total",
		Help: "Record bytes sent to consumers and followers, by topic (BrokerTopicMetrics BytesOutPerSec).",
	}, []string{"topic"})
	m.failedAuth = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socketservermetrics_failed_authentication_total",
		Help: "Failed SASL or TLS authentications, by listener.",
	}, []string{"listener"})
	m.Registry.MustRegister(m.requests, m.totalTime, m.queueTime, m.localTime, m.remoteTime, m.sendTime,
		m.messagesIn, m.bytesIn, m.bytesOut, m.failedAuth)
	return m
}

// API holds one API's time histograms.
type API struct {
	name                              string
	total, queue, local, remote, send prometheus.Observer
	versions                          sync.Map // int16 -> prometheus.Counter
	requestsVec                       *prometheus.CounterVec
}

// API returns the instruments of API key, named name (Kafka's request name).
func (m *Metrics) API(key int16, name string) *API {
	if a, ok := m.apis.Load(key); ok {
		return a.(*API)
	}
	a := &API{
		name: name, requestsVec: m.requests,
		total: m.totalTime.WithLabelValues(name), queue: m.queueTime.WithLabelValues(name),
		local: m.localTime.WithLabelValues(name), remote: m.remoteTime.WithLabelValues(name),
		send: m.sendTime.WithLabelValues(name),
	}
	got, _ := m.apis.LoadOrStore(key, a)
	return got.(*API)
}

// RequestTimes are the instants of one request's life, as its connection
// saw them.
type RequestTimes struct {
	Read     time.Time // its frame was read
	Started  time.Time // its handler started
	Handled  time.Time // its handler returned
	Answered time.Time // its response was ready (Handled, or later for a parked request)
	Written  time.Time // its response was written
}

// Observe records one request of version version.
func (a *API) Observe(version int16, t RequestTimes) {
	c, ok := a.versions.Load(version)
	if !ok {
		c, _ = a.versions.LoadOrStore(version, a.requestsVec.WithLabelValues(a.name, strconv.Itoa(int(version))))
	}
	c.(prometheus.Counter).Inc()
	a.total.Observe(ms(t.Written.Sub(t.Read)))
	a.queue.Observe(ms(t.Started.Sub(t.Read)))
	a.local.Observe(ms(t.Handled.Sub(t.Started)))
	a.remote.Observe(ms(max(t.Answered.Sub(t.Handled), 0)))
	a.send.Observe(ms(t.Written.Sub(t.Answered)))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Topic holds one topic's counters.
type Topic struct {
	MessagesIn, BytesIn, BytesOut prometheus.Counter
}

// Topic returns topic's counters, making them on first use.
func (m *Metrics) Topic(name string) *Topic {
	if t, ok := m.topics.Load(name); ok {
		return t.(*Topic)
	}
	t := &Topic{
		MessagesIn: m.messagesIn.WithLabelValues(name),
		BytesIn:    m.bytesIn.WithLabelValues(name),
		BytesOut:   m.bytesOut.WithLabelValues(name),
	}
	got, _ := m.topics.LoadOrStore(name, t)
	return got.(*Topic)
}

// ForgetTopic drops a deleted topic's series, so that a broker creating and
// deleting many topics does not grow its registry without bound.
func (m *Metrics) ForgetTopic(name string) {
	if _, ok := m.topics.LoadAndDelete(name); !ok {
		return
	}
	m.messagesIn.DeleteLabelValues(name)
	m.bytesIn.DeleteLabelValues(name)
	m.bytesOut.DeleteLabelValues(name)
}

// FailedAuthentication counts a failed authentication on listener.
func (m *Metrics) FailedAuthentication(listener string) {
	m.failedAuth.WithLabelValues(listener).Inc()
}
