// Package prometheus checks Strait's /metrics with a real Prometheus (the
// server from Debian's prometheus package, which compat-tests/prometheus/
// run.sh fetches): three brokers (straittest, in process) with their HTTP
// listeners on, Prometheus scraping them every second, and PromQL queries
// compared with the workload the test ran: the bytes produced, the lag of a
// group that committed part of them (partitions led by the group's
// coordinator and by the other brokers), and the under-replicated partitions
// while a follower is stopped and after it rejoins.
//
// It runs only with STRAIT_PROMETHEUS=<path of the prometheus binary>
// (run.sh, `make compat-prometheus`): `go test ./...` skips it. Results go
// to $STRAIT_PROMETHEUS_RESULTS (client, test, pass|fail) for REPORT.md.
package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/internal/freeport"
	"github.com/strait/strait/straittest"
)

const (
	topic = "prom-t"
	group = "prom-g"
	// lagTopic has one replica per partition, spread over the three
	// brokers: the group's coordinator hosts only some of its partitions
	// and learns the others' high watermarks from their leaders.
	lagTopic = "prom-lag"
)

type batchBytes struct{ bytes, records atomic.Int64 }

// OnProduceBatchWritten adds each batch of topic as it went on the wire:
// franz-go's CompressedBytes plus the 61-byte v2 batch header it leaves out.
func (b *batchBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, t string, _ int32, m kgo.ProduceBatchMetrics) {
	if t != topic {
		return
	}
	b.bytes.Add(int64(m.CompressedBytes + 61))
	b.records.Add(int64(m.NumRecords))
}

func record(t *testing.T, name string) {
	path := os.Getenv("STRAIT_PROMETHEUS_RESULTS")
	if path == "" {
		return
	}
	status := "pass"
	if t.Failed() {
		status = "fail"
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "Prometheus\t%s\t%s\n", name, status)
}

// promQL runs an instant query and returns its samples by their labels'
// String().
type promQL struct{ base string }

func (p promQL) query(q string) (map[string]float64, error) {
	resp, err := http.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out[fmt.Sprint(r.Metric)] = v
	}
	return out, nil
}

// scalar is a query expected to give one sample.
func (p promQL) scalar(q string) (float64, error) {
	r, err := p.query(q)
	if err != nil {
		return 0, err
	}
	if len(r) != 1 {
		return 0, fmt.Errorf("query %q: %d samples: %v", q, len(r), r)
	}
	for _, v := range r {
		return v, nil
	}
	return 0, nil
}

// eventually polls f every 250 ms for at most timeout.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestPrometheusScrapesCluster(t *testing.T) {
	bin := os.Getenv("STRAIT_PROMETHEUS")
	if bin == "" {
		t.Skip("runs with STRAIT_PROMETHEUS=<prometheus binary> (compat-tests/prometheus/run.sh, make compat-prometheus)")
	}
	defer record(t, "three brokers scraped: bytes in, lag, under-replicated partitions")
	// Fixed ports: a restarted broker must come back where Prometheus
	// scrapes it.
	ports, err := freeport.Ports(4)
	if err != nil {
		t.Fatal(err)
	}
	opts := []straittest.Option{
		straittest.WithConfig("replica.lag.time.max.ms", "2000"),
		straittest.WithConfig("group.initial.rebalance.delay.ms", "0"),
		straittest.WithTopic(topic, 3, 3),
		straittest.WithTopic(lagTopic, 3, 1),
	}
	var targets []string
	for i := range 3 {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[i])
		opts = append(opts, straittest.WithBrokerConfig(int32(i+1), "strait.http.listener", addr))
		targets = append(targets, fmt.Sprintf("%q", addr))
	}
	c := straittest.StartCluster(t, 3, opts...)

	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: strait
    static_configs:
      - targets: [%s]
`, strings.Join(targets, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[3])
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+listen)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	prom := promQL{base: "http://" + listen}
	eventually(t, 60*time.Second, "prometheus scrapes the three brokers", func() error {
		n, err := prom.scalar(`count(up{job="strait"} == 1)`)
		if err != nil {
			return err
		}
		if n != 3 {
			return fmt.Errorf("%v targets up", n)
		}
		return nil
	})

	// The workload: 3,000 records of 1 KiB, then a group consumes and
	// commits 2,000 of them, partition by partition.
	var produced batchBytes
	cl := c.Client(kgo.WithHooks(&produced), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	value := make([]byte, 1024)
	for i := range 3000 {
		for j := range value {
			value[j] = byte(i*7 + j*13) // varied, so nothing compresses to nothing
		}
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: append([]byte(nil), value...)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	lagProduced := map[int32]int64{0: 50, 1: 80, 2: 110}
	for p, n := range lagProduced {
		for range n {
			cl.Produce(ctx, &kgo.Record{Topic: lagTopic, Partition: p, Value: []byte("v")}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	offsets := kadm.Offsets{}
	committed := map[int32]int64{0: 700, 1: 600, 2: 700} // 2,000 of the 1,000 per partition
	for p, o := range committed {
		offsets.AddOffset(topic, p, o, -1)
	}
	lagCommitted := map[int32]int64{0: 10, 1: 25, 2: 0}
	for p, o := range lagCommitted {
		offsets.AddOffset(lagTopic, p, o, -1)
	}
	if resp, err := adm.CommitOffsets(ctx, group, offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}

	want := float64(produced.bytes.Load())
	eventually(t, 30*time.Second, "bytes in as produced", func() error {
		got, err := prom.scalar(fmt.Sprintf(`sum(kafka_server_brokertopicmetrics_bytesin_total{topic=%q})`, topic))
		if err != nil {
			return err
		}
		if got < want*0.99 || got > want*1.01 {
			return fmt.Errorf("bytes in %v, produced %v", got, want)
		}
		t.Logf("bytes in %v, produced %v (%d records)", got, want, produced.records.Load())
		return nil
	})
	eventually(t, 30*time.Second, "lag per partition", func() error {
		r, err := prom.query(fmt.Sprintf(`kafka_consumergroup_lag{consumergroup=%q, topic=%q}`, group, topic))
		if err != nil {
			return err
		}
		got := map[string]float64{}
		for labels, v := range r {
			for p := range committed {
				if strings.Contains(labels, fmt.Sprintf("partition:%d ", p)) {
					got[strconv.Itoa(int(p))] = v
				}
			}
		}
		for p, o := range committed {
			if got[strconv.Itoa(int(p))] != float64(1000-o) {
				return fmt.Errorf("lag %v, want 1000 minus %v", r, committed)
			}
		}
		return nil
	})

	// The lag of the partitions led by brokers other than the group's
	// coordinator: exported once, by the coordinator, equal to produced
	// minus committed.
	coord := adm.FindGroupCoordinators(ctx, group)[group]
	if coord.Err != nil {
		t.Fatalf("find coordinator: %v", coord.Err)
	}
	coordTarget := fmt.Sprintf("127.0.0.1:%d", ports[coord.NodeID-1])
	details, err := adm.ListTopics(ctx, lagTopic)
	if err != nil || details[lagTopic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", lagTopic, err, details[lagTopic].Err)
	}
	var elsewhere []int32
	for p, d := range details[lagTopic].Partitions {
		if d.Leader != coord.NodeID {
			elsewhere = append(elsewhere, p)
		}
	}
	if len(elsewhere) == 0 {
		t.Fatalf("the coordinator, broker %d, leads every partition of %s: nothing led elsewhere to check", coord.NodeID, lagTopic)
	}
	eventually(t, 30*time.Second, "lag of the partitions led elsewhere", func() error {
		r, err := prom.query(fmt.Sprintf(`kafka_consumergroup_lag{consumergroup=%q, topic=%q}`, group, lagTopic))
		if err != nil {
			return err
		}
		if len(r) != len(lagProduced) {
			return fmt.Errorf("%d series, want one per partition (%d): %v", len(r), len(lagProduced), r)
		}
		for _, p := range elsewhere {
			key := fmt.Sprintf("map[__name__:kafka_consumergroup_lag consumergroup:%s instance:%s job:strait partition:%d topic:%s]", group, coordTarget, p, lagTopic)
			v, ok := r[key]
			if !ok {
				return fmt.Errorf("no lag of partition %d (led by broker %d) from the coordinator %s: %v", p, details[lagTopic].Partitions[p].Leader, coordTarget, r)
			}
			if want := float64(lagProduced[p] - lagCommitted[p]); v != want {
				return fmt.Errorf("partition %d (led by broker %d): lag %v, want %d produced minus %d committed", p, details[lagTopic].Partitions[p].Leader, v, lagProduced[p], lagCommitted[p])
			}
		}
		t.Logf("lag of %s from the coordinator, broker %d, for partitions %v led by other brokers: %v", lagTopic, coord.NodeID, elsewhere, r)
		return nil
	})

	// A follower of every partition stops: each leader shrinks its ISR
	// after replica.lag.time.max.ms, and the partitions it leads become
	// under-replicated until the follower is back in the ISR.
	const urp = `sum(kafka_server_replicamanager_underreplicatedpartitions{job="strait"})`
	if v, err := prom.scalar(urp); err != nil || v != 0 {
		t.Fatalf("under-replicated before the stop: %v %v", v, err)
	}
	stopped := c.Brokers()[2].ID()
	c.Stop(stopped)
	eventually(t, 60*time.Second, "under-replicated partitions while a follower is stopped", func() error {
		v, err := prom.scalar(urp)
		if err != nil {
			return err
		}
		if v < 1 {
			return fmt.Errorf("under-replicated %v", v)
		}
		t.Logf("under-replicated partitions with broker %d stopped: %v", stopped, v)
		return nil
	})
	c.Restart(stopped)
	eventually(t, 90*time.Second, "no under-replicated partition after the follower rejoins", func() error {
		n, err := prom.scalar(`count(up{job="strait"} == 1)`)
		if err != nil || n != 3 {
			return fmt.Errorf("targets up %v %v", n, err)
		}
		v, err := prom.scalar(urp)
		if err != nil {
			return err
		}
		if v != 0 {
			return fmt.Errorf("under-replicated %v", v)
		}
		return nil
	})
}
