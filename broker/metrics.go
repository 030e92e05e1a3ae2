package broker

// The broker's side of package metrics: the request times observed as each
// response is written, the HTTP listener of strait.http.listener, and the
// collector that reads partitions, groups and etcd at scrape time (so that
// nothing on the produce and fetch paths maintains a gauge).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/metrics"
	"github.com/strait/strait/replication"
)

// Metrics is the broker's registry, for an embedder that serves it itself
// or gathers it in a test.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// HTTPAddr is the bound address of strait.http.listener, "" when it is off
// or the broker has not started.
func (s *Server) HTTPAddr() string {
	if s.http == nil {
		return ""
	}
	return s.http.Addr().String()
}

// observeRequest records x's times, its response written at written.
func (s *Server) observeRequest(x *exchange, written time.Time) {
	if x.read.IsZero() {
		return
	}
	key := x.req.Key
	api := s.metrics.API(key, kmsg.Key(key).Name())
	handled := x.read.Add(time.Duration(x.handledAfter.Load()))
	answered := x.answered
	if answered.IsZero() {
		answered = written
	}
	if x.handledAfter.Load() == 0 { // answered and written before its handler returned
		handled = answered
	}
	api.Observe(x.req.Version, metrics.RequestTimes{
		Read: x.read, Started: x.started, Handled: handled, Answered: answered, Written: written,
	})
}

// startHTTP binds strait.http.listener, if set, and serves it until Close.
func (s *Server) startHTTP() error {
	if s.cfg.HTTP.Listener == "" {
		return nil
	}
	srv, err := metrics.Listen(s.cfg.HTTP.Listener, s.metrics, metrics.Probes{Live: s.live, Ready: s.readiness}, s.logger)
	if err != nil {
		return fmt.Errorf("broker: strait.http.listener %s: %w", s.cfg.HTTP.Listener, err)
	}
	s.mountConsole(srv.Mux) // console.go
	s.http = srv
	s.bg.Go(func() {
		if err := srv.Serve(); err != nil {
			s.logger.Error("http listener stopped", "addr", srv.Addr().String(), "err", err)
		}
	})
	s.logger.Info("http listener started", "addr", srv.Addr().String())
	return nil
}

// live is /healthz: the process serves until Close starts.
func (s *Server) live() error {
	select {
	case <-s.closing:
		return errors.New("broker shutting down")
	default:
		return nil
	}
}

// readiness is /readyz: started (logs loaded, coordinators up, listeners
// accepting), registered, etcd reachable, the metadata watch caught up, and
// no log dir offline.
func (s *Server) readiness(ctx context.Context) error {
	select {
	case <-s.ready:
	default:
		return errors.New("broker starting")
	}
	if h := s.ctrl.Health(ctx); h.Err != nil {
		return h.Err
	}
	if n := s.offlineDirN.Load(); n > 0 {
		return fmt.Errorf("%d log dirs offline", n)
	}
	return nil
}

// stateCollector reads the broker's state at scrape time.
type stateCollector struct{ s *Server }

var (
	descURP        = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions", "Partitions this broker leads whose ISR is smaller than their replica set.", nil, nil)
	descUnderMin   = prometheus.NewDesc("kafka_server_replicamanager_underminisrpartitioncount", "Partitions this broker leads whose ISR is below min.insync.replicas.", nil, nil)
	descAtMin      = prometheus.NewDesc("kafka_server_replicamanager_atminisrpartitioncount", "Partitions this broker leads whose ISR is exactly min.insync.replicas.", nil, nil)
	descPartitions = prometheus.NewDesc("kafka_server_replicamanager_partitioncount", "Partitions hosted by this broker.", nil, nil)
	descLeaders    = prometheus.NewDesc("kafka_server_replicamanager_leadercount", "Partitions this broker leads.", nil, nil)
	descShrinks    = prometheus.NewDesc("kafka_server_replicamanager_isrshrinks_total", "ISR shrinks this broker proposed as leader and the controller committed.", nil, nil)
	descExpands    = prometheus.NewDesc("kafka_server_replicamanager_isrexpands_total", "ISR expands this broker proposed as leader and the controller committed.", nil, nil)
	descOffline    = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a live leader (reported by the active controller only, as Kafka).", nil, nil)
	descActive     = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount", "1 on the broker that is the active controller.", nil, nil)
	descLogSize    = prometheus.NewDesc("kafka_log_log_size", "Bytes of a partition's segment files.", []string{"topic", "partition"}, nil)
	descLEO        = prometheus.NewDesc("kafka_log_log_logendoffset", "A partition's log end offset.", []string{"topic", "partition"}, nil)
	descLSO        = prometheus.NewDesc("kafka_log_log_logstartoffset", "A partition's log start offset.", []string{"topic", "partition"}, nil)
	descHW         = prometheus.NewDesc("strait_partition_high_watermark", "A partition's high watermark on this broker.", []string{"topic", "partition"}, nil)
	descConns      = prometheus.NewDesc("kafka_server_socketservermetrics_connection_count", "Open client connections, by listener.", []string{"listener"}, nil)
	descPurgatory  = prometheus.NewDesc("kafka_server_delayedoperationpurgatory_purgatorysize", "Requests waiting: produce for acks=all, fetch for min.bytes.", []string{"delayedOperation"}, nil)
	descGroups     = prometheus.NewDesc("kafka_server_group_coordinator_metrics_group_count", "Groups this broker coordinates, by type (protocol) and state.", []string{"protocol", "state"}, nil)
	descLag        = prometheus.NewDesc("kafka_consumergroup_lag", "The partition's high watermark (on its leader) minus the group's committed offset, for the groups this broker coordinates (kafka-exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
	descLagUnknown = prometheus.NewDesc("strait_consumergroup_lag_unknown_partitions", "Committed offsets of the groups this broker coordinates whose lag this scrape left out: the partition's leader did not answer in time, or it has none.", nil, nil)
	descCommitted  = prometheus.NewDesc("kafka_consumergroup_current_offset", "A group's committed offset (kafka-exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
	descEtcdRTT    = prometheus.NewDesc("strait_etcd_roundtrip_seconds", "Time of one etcd read, measured at the scrape; absent when etcd did not answer.", nil, nil)
	descEtcdUp     = prometheus.NewDesc("strait_etcd_healthy", "1 when etcd answered, this broker is registered (its lease alive) and its metadata watch is caught up.", nil, nil)
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descURP, descUnderMin, descAtMin, descPartitions, descLeaders, descShrinks, descExpands,
		descOffline, descActive, descLogSize, descLEO, descLSO, descHW, descConns, descPurgatory, descGroups, descLag, descLagUnknown, descCommitted,
		descEtcdRTT, descEtcdUp} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	select {
	case <-s.ready:
	default:
		return // nothing started yet but the registry's own collectors
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	// The groups' committed offsets first, so that the leaders of the
	// partitions led elsewhere are asked while the rest is read.
	offsets := s.groupOffsets()
	local := s.localPartitions() // console.go
	ends := make(chan map[topicPartition]int64, 1)
	go func() { ends <- s.partitionEnds(offsets.want, local) }()

	for topic, parts := range local {
		for p, lp := range parts {
			idx := strconv.Itoa(int(p))
			gauge(descLEO, float64(lp.end), topic, idx)
			gauge(descLSO, float64(lp.start), topic, idx)
			gauge(descHW, float64(lp.hw), topic, idx)
			gauge(descLogSize, float64(lp.size), topic, idx)
		}
	}
	var urp, underMin, atMin, partitions, leaders int
	s.replicas.ForEach(func(p *replication.Partition) {
		partitions++
		if !p.IsLeader() {
			return
		}
		leaders++
		st := p.State()
		if len(st.ISR) < len(st.Replicas) {
			urp++
		}
		switch minISR := int(p.MinISR()); {
		case len(st.ISR) < minISR:
			underMin++
		case len(st.ISR) == minISR:
			atMin++
		}
	})
	gauge(descURP, float64(urp))
	gauge(descUnderMin, float64(underMin))
	gauge(descAtMin, float64(atMin))
	gauge(descPartitions, float64(partitions))
	gauge(descLeaders, float64(leaders))
	shrinks, expands := s.replicas.ISRChanges()
	ch <- prometheus.MustNewConstMetric(descShrinks, prometheus.CounterValue, float64(shrinks))
	ch <- prometheus.MustNewConstMetric(descExpands, prometheus.CounterValue, float64(expands))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	h := s.ctrl.Health(ctx)
	cancel()
	active := 0.0
	if h.Active {
		active = 1
		gauge(descOffline, float64(s.offlinePartitions()))
	}
	gauge(descActive, active)
	if h.RoundTrip > 0 {
		gauge(descEtcdRTT, h.RoundTrip.Seconds())
	}
	healthy := 0.0
	if h.Err == nil {
		healthy = 1
	}
	gauge(descEtcdUp, healthy)

	conns := map[string]int{}
	for _, l := range s.listeners {
		conns[l.cfg.Name] = 0
	}
	s.connsMu.Lock()
	for cn := range s.conns {
		conns[cn.listener]++
	}
	s.connsMu.Unlock()
	for name, n := range conns {
		gauge(descConns, float64(n), name)
	}
	gauge(descPurgatory, float64(s.parkedProduces.Load()), "Produce")
	gauge(descPurgatory, float64(s.parkedFetches.Load()), "Fetch")

	end := <-ends
	counts := map[[2]string]int{}
	unknown := 0
	for _, g := range offsets.groups {
		counts[[2]string{g.Type, g.State}]++
		for _, o := range g.Committed {
			p := strconv.Itoa(int(o.Partition))
			gauge(descCommitted, float64(o.Offset), g.ID, o.Topic, p)
			if hw, ok := end[topicPartition{o.Topic, o.Partition}]; ok {
				gauge(descLag, float64(max(hw-o.Offset, 0)), g.ID, o.Topic, p)
			} else if _, exists := s.ctrl.Topic(o.Topic); exists {
				unknown++
			}
		}
	}
	for k, n := range counts {
		gauge(descGroups, float64(n), k[0], k[1])
	}
	if s.groupSvc != nil {
		gauge(descLagUnknown, float64(unknown))
	}
}

// offlinePartitions counts the partitions whose leader is none or not a
// live broker, from the metadata cache.
func (s *Server) offlinePartitions() int {
	live := s.liveBrokers()
	n := 0
	for _, t := range s.ctrl.Topics() {
		for _, p := range t.Partitions {
			if p.Leader < 0 || !live[p.Leader] {
				n++
			}
		}
	}
	return n
}
