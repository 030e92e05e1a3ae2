package broker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lagSeries is the coordinator's kafka_consumergroup_lag of group by
// partition, and its strait_consumergroup_lag_unknown_partitions (-1 when
// absent).
func lagSeries(t *testing.T, s *Server, group string) (map[int32]float64, float64) {
	t.Helper()
	fams, err := s.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	lag, unknown := map[int32]float64{}, -1.0
	for _, f := range fams {
		switch f.GetName() {
		case "strait_consumergroup_lag_unknown_partitions":
			unknown = f.Metric[0].GetGauge().GetValue()
		case "kafka_consumergroup_lag":
			for _, m := range f.Metric {
				labels := map[string]string{}
				for _, l := range m.Label {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["consumergroup"] != group {
					continue
				}
				p, _ := strconv.Atoi(labels["partition"])
				lag[int32(p)] = m.GetGauge().GetValue()
			}
		}
	}
	return lag, unknown
}

// TestConsumerLagOfPartitionsLedElsewhere: three brokers, a topic of six
// partitions with one replica each (two on each broker), a group that
// committed in each. The group's coordinator exports the lag of all six,
// those it does not host included (the leaders' high watermarks asked
// with ListOffsets), and no other broker exports the group's lag. A leader
// that does not answer leaves its partitions' lag out, counted as unknown,
// and the scrape returns after lagLookupTimeout, not when the leader
// answers.
func TestConsumerLagOfPartitionsLedElsewhere(t *testing.T) {
	srvs, _ := startEtcdCluster(t, 3, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	const topic, group, parts = "lag-elsewhere", "lag-elsewhere-g", 6
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srvs[0].Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produced, committed := map[int32]int64{}, kadm.Offsets{}
	for p := range int32(parts) {
		produced[p] = int64(10 + 3*p)
		for i := range produced[p] {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		committed.AddOffset(topic, p, int64(p), -1)
	}
	if resp, err := adm.CommitOffsets(ctx, group, committed); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	want := func(p int32) float64 { return float64(produced[p] - int64(p)) }

	var coord *Server
	for _, s := range srvs {
		for _, g := range s.groupOffsets().groups {
			if g.ID == group {
				coord = s
			}
		}
	}
	if coord == nil {
		t.Fatal("no broker coordinates the group")
	}
	meta, ok := coord.ctrl.Topic(topic)
	if !ok {
		t.Fatal("the coordinator does not know the topic")
	}
	elsewhere := map[int32][]int32{} // leader -> partitions, for leaders other than the coordinator
	for _, p := range meta.Partitions {
		if p.Leader != coord.cfg.NodeID {
			elsewhere[p.Leader] = append(elsewhere[p.Leader], p.Partition)
		}
	}
	if len(elsewhere) == 0 {
		t.Fatalf("every partition led by the coordinator %d: the test needs some led elsewhere", coord.cfg.NodeID)
	}

	lag, unknown := lagSeries(t, coord, group)
	for p := range int32(parts) {
		if got, ok := lag[p]; !ok || got != want(p) {
			t.Errorf("partition %d: lag %v (present %v), want %v produced minus %d committed", p, got, ok, produced[p], p)
		}
	}
	if unknown != 0 {
		t.Errorf("unknown lag partitions %v, want 0", unknown)
	}
	// The console's group page shows the same lag.
	var total int64
	for p := range int32(parts) {
		total += int64(want(p))
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/console/groups/"+group, nil)
	req.SetPathValue("group", group)
	coord.consoleGroup(rec, req)
	if body := rec.Body.String(); !strings.Contains(body, fmt.Sprintf(`total lag <b id="total-lag">%d</b>`, total)) || strings.Contains(body, "end offset unknown") {
		t.Errorf("console group page: want total lag %d and every partition's end known, got:\n%s", total, body)
	}
	for _, s := range srvs {
		if s == coord {
			continue
		}
		if other, _ := lagSeries(t, s, group); len(other) != 0 {
			t.Errorf("broker %d, not the coordinator, exports the group's lag: %v", s.cfg.NodeID, other)
		}
	}

	// One leader other than the coordinator holds its ListOffsets far
	// longer than the lookup may take.
	var slow *Server
	var slowParts []int32
	for id, ps := range elsewhere {
		for _, s := range srvs {
			if s.cfg.NodeID == id {
				slow, slowParts = s, ps
			}
		}
		break
	}
	setForTest(t, &lagLookupTimeout, 300*time.Millisecond)
	setForTest(t, &lagCacheTTL, 0)
	const hold = 6 * time.Second
	var held atomic.Int64
	slow.SetRequestHook(func(r RequestInfo) RequestAction {
		if r.Key == int16(kmsg.ListOffsets) {
			held.Add(1)
			return RequestAction{Delay: hold}
		}
		return RequestAction{}
	})
	defer slow.SetRequestHook(nil)
	start := time.Now()
	lag, unknown = lagSeries(t, coord, group)
	if took := time.Since(start); took >= hold {
		t.Errorf("the scrape took %v: it waited for the leader that held its request %v", took, hold)
	}
	if held.Load() == 0 {
		t.Fatal("the coordinator sent the slow leader no ListOffsets")
	}
	for _, p := range slowParts {
		if got, ok := lag[p]; ok {
			t.Errorf("partition %d of the leader that did not answer: lag %v exported", p, got)
		}
	}
	if unknown != float64(len(slowParts)) {
		t.Errorf("unknown lag partitions %v, want the slow leader's %d", unknown, len(slowParts))
	}
	for p := range int32(parts) {
		if meta.Partitions[p].Leader == slow.cfg.NodeID {
			continue
		}
		if got := lag[p]; got != want(p) {
			t.Errorf("partition %d (leader %d answered): lag %v, want %v", p, meta.Partitions[p].Leader, got, want(p))
		}
	}
}
