package broker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kgo"
)

// batchOverhead is a v2 record batch's header: what franz-go's
// CompressedBytes leaves out of the bytes it sends.
const batchOverhead = 61

type batchCounter struct{ bytes, records atomic.Int64 }

func (b *batchCounter) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.bytes.Add(int64(m.CompressedBytes + batchOverhead))
	b.records.Add(int64(m.NumRecords))
}

func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample sums the family's samples whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	sum, found := 0.0, false
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestMetricsEndpoint produces and consumes through a broker with its HTTP
// listener on and checks that /metrics counts exactly what the clients did
// and /healthz and /readyz answer.
func TestMetricsEndpoint(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "strait.http.listener", "127.0.0.1:0", "group.initial.rebalance.delay.ms", "0")
	defer srv.Close()
	addr := srv.HTTPAddr()
	if addr == "" {
		t.Fatal("no HTTP address")
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := getStatus(t, "http://"+addr+path); code != 200 || body != "ok" {
			t.Fatalf("%s: %d %q", path, code, body)
		}
	}

	const topic, group = "metrics-t", "metrics-g"
	var produced batchCounter
	cl := newClient(t, srv, kgo.WithHooks(&produced), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, topic, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(n int) {
		for i := range n {
			r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprintf("value-%04d", i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(300)

	consumer := newClient(t, srv, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond))
	got := 0
	for got < 300 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		got += fs.NumRecords()
	}
	if got != 300 {
		t.Fatalf("consumed %d of 300", got)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	produce(51) // 17 per partition beyond the committed offsets

	// A request is counted once its response is written, which the client
	// may see first: poll until the last Produce is in. A scrape reads the
	// families one after the other, so one scrape can read the request
	// counter before the last request's Observe and its histogram after:
	// wait for both.
	var fams map[string]*dto.MetricFamily
	produceLabels := map[string]string{"request": "Produce"}
	for deadline := time.Now().Add(10 * time.Second); ; {
		fams = scrape(t, addr)
		requests, _ := sample(fams, "kafka_network_requestmetrics_requests_total", produceLabels)
		timed, _ := sample(fams, "kafka_network_requestmetrics_totaltimems", produceLabels)
		if requests >= 351 && timed >= 351 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	check := func(name string, labels map[string]string, want float64) {
		t.Helper()
		v, ok := sample(fams, name, labels)
		if !ok || v != want {
			t.Errorf("%s%v = %v (present %v), want %v", name, labels, v, ok, want)
		}
	}
	check("kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": topic}, float64(produced.records.Load()))
	check("kafka_server_brokertopicmetrics_bytesin_total", map[string]string{"topic": topic}, float64(produced.bytes.Load()))
	check("kafka_consumergroup_lag", map[string]string{"consumergroup": group, "topic": topic}, 51)
	check("kafka_consumergroup_current_offset", map[string]string{"consumergroup": group, "topic": topic, "partition": "0"}, 100)
	check("kafka_log_log_logendoffset", map[string]string{"topic": topic, "partition": "1"}, 117)
	check("kafka_server_replicamanager_underreplicatedpartitions", nil, 0)
	check("kafka_controller_kafkacontroller_activecontrollercount", nil, 1)
	check("strait_etcd_healthy", nil, 1)
	if v, _ := sample(fams, "kafka_server_brokertopicmetrics_bytesout_total", map[string]string{"topic": topic}); v < float64(produced.bytes.Load())*300/351 {
		t.Errorf("bytes out %v below the %d bytes of the 300 records consumed", v, produced.bytes.Load()*300/351)
	}
	if v, _ := sample(fams, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}); v != 351 {
		t.Errorf("Produce requests %v, want 351 (one per ProduceSync)", v)
	}
	if v, _ := sample(fams, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Produce"}); v != 351 {
		t.Errorf("Produce total-time samples %v, want 351", v)
	}
	if v, _ := sample(fams, "kafka_server_group_coordinator_metrics_group_count", nil); v < 1 {
		t.Errorf("group count %v, want at least 1", v)
	}
	if v, _ := sample(fams, "kafka_server_socketservermetrics_connection_count", map[string]string{"listener": "PLAINTEXT"}); v < 2 {
		t.Errorf("connections %v, want the two clients' at least", v)
	}
	if v, _ := sample(fams, "kafka_server_replicamanager_partitioncount", nil); v < 3 {
		t.Errorf("partition count %v", v)
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
}
