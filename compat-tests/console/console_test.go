// Package console opens Strait's web console in a headless Chromium (Debian's
// chromium package, which compat-tests/console/run.sh installs when it is
// missing): a broker (straittest) with its HTTP listener on, a topic and a
// consumer group with a known lag made by the test, then each page rendered
// by the browser (scripts run) and checked for what the test made: names,
// partition count, lag. The screenshots stay in $STRAIT_CONSOLE_WORK.
//
// It runs only with STRAIT_CHROMIUM=<chromium binary> (run.sh, `make
// compat-console`): `go test ./...` skips it.
package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

const (
	topic      = "console-orders"
	group      = "console-billing"
	shareGroup = "console-audit"
	shareTopic = "console-audit-events"
)

func record(t *testing.T, name string) {
	path := os.Getenv("STRAIT_CONSOLE_RESULTS")
	if path == "" {
		return
	}
	status := "pass"
	if t.Failed() {
		status = "fail"
	}
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(f, "Web console (Chromium)\t%s\t%s\n", name, status)
		f.Close()
	}
}

// browser renders pages with a headless Chromium.
type browser struct {
	bin, profile, shots string
}

// dom loads url, lets its scripts run for budget, and returns the DOM.
func (b browser) dom(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+b.profile, "--virtual-time-budget=3000", "--dump-dom", url).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}

// screenshot saves url as name.png in the work directory.
func (b browser) screenshot(t *testing.T, url, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := filepath.Join(b.shots, name+".png")
	out, err := exec.CommandContext(ctx, b.bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+b.profile, "--hide-scrollbars", "--window-size=1100,700", "--virtual-time-budget=6000",
		"--screenshot="+path, url).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium --screenshot %s: %v\n%s", url, err, out)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 2000 {
		t.Fatalf("screenshot %s missing or empty: %v", path, err)
	}
}

// cell finds a table row of the DOM that contains all of want.
func hasRow(dom string, want ...string) bool {
	for _, row := range regexp.MustCompile(`(?s)<tr>.*?</tr>`).FindAllString(dom, -1) {
		ok := true
		for _, w := range want {
			if !strings.Contains(row, w) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestConsolePages(t *testing.T) {
	bin := os.Getenv("STRAIT_CHROMIUM")
	if bin == "" {
		t.Skip("runs with STRAIT_CHROMIUM=<chromium binary> (compat-tests/console/run.sh, make compat-console)")
	}
	defer record(t, "overview, topics, topic, groups and group pages show the test's topic and group")
	work := os.Getenv("STRAIT_CONSOLE_WORK")
	if work == "" {
		work = t.TempDir()
	}
	b := browser{bin: bin, profile: t.TempDir(), shots: work}
	c := straittest.Start(t, straittest.WithConfig("strait.http.listener", "127.0.0.1:0"),
		straittest.WithConfig("group.initial.rebalance.delay.ms", "0"), straittest.WithTopic(topic, 4, 1), straittest.WithTopic(shareTopic, 1, 1))
	base := "http://" + c.Brokers()[0].Server().HTTPAddr()

	// 400 records, 100 per partition; the group commits 60, 70, 80, 90:
	// lag 40 + 30 + 20 + 10 = 100.
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 400 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 4), Value: fmt.Appendf(nil, "order-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.ClientID("billing-worker"))
	for n := 0; n < 400 && ctx.Err() == nil; {
		n += consumer.PollFetches(ctx).NumRecords()
	}
	offsets := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range []int64{60, 70, 80, 90} {
		offsets[topic][int32(p)] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var commitErr error
	consumer.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if commitErr == nil && p.ErrorCode != 0 {
					commitErr = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatal(commitErr)
	}

	// A share group with one member, which fetches (and so acquires)
	// records: the groups page lists it with its type.
	// share.auto.offset.reset is latest: records produced once it joined
	// reach it.
	sharer := c.Client(kgo.ShareGroup(shareGroup), kgo.ConsumeTopics(shareTopic), kgo.ClientID("share-worker"))
	shared := 0
	for i := 0; i < 30 && shared == 0; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: shareTopic, Value: []byte("audit")}, nil)
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		shared = sharer.PollFetches(pctx).NumRecords()
		pcancel()
	}
	if shared == 0 {
		t.Fatal("the share consumer received nothing")
	}

	overview := b.dom(t, base+"/console/")
	if !hasRow(overview, ">1<", "PLAINTEXT://127.0.0.1", "active controller") {
		t.Errorf("overview lacks broker 1 as the active controller:\n%s", overview)
	}
	if !strings.Contains(overview, `<canvas id="chart"`) {
		t.Errorf("overview lacks the throughput chart")
	}
	topics := b.dom(t, base+"/console/topics")
	if !hasRow(topics, ">"+topic+"</a>", `<td class="n">4</td>`) {
		t.Errorf("topics page lacks %s with 4 partitions:\n%s", topic, topics)
	}
	page := b.dom(t, base+"/console/topics/"+topic)
	for p := range 4 {
		if !hasRow(page, fmt.Sprintf(`<td class="n">%d</td>`, p), `<td class="n">100</td>`) {
			t.Errorf("topic page lacks partition %d with high watermark 100:\n%s", p, page)
		}
	}
	groups := b.dom(t, base+"/console/groups")
	if !hasRow(groups, ">"+group+"</a>", "Stable", `<td class="n">100</td>`) {
		t.Errorf("groups page lacks %s, Stable, lag 100:\n%s", group, groups)
	}
	if !hasRow(groups, ">"+shareGroup+"</a>", "<td>share</td>", `<td class="n">1</td>`) {
		t.Errorf("groups page lacks the share group %s with its one member:\n%s", shareGroup, groups)
	}
	sp := b.dom(t, base+"/console/groups/"+shareGroup)
	if !hasRow(sp, "share-worker", shareTopic+"-0") || strings.Contains(sp, "total-lag") {
		t.Errorf("share group page lacks its member share-worker assigned %s-0, or shows a lag:\n%s", shareTopic, sp)
	}
	gp := b.dom(t, base+"/console/groups/"+group)
	if !strings.Contains(gp, `<b id="total-lag">100</b>`) || !hasRow(gp, "billing-worker", topic+"-0") {
		t.Errorf("group page lacks the total lag 100 or its member billing-worker with %s-0:\n%s", topic, gp)
	}
	if !hasRow(gp, topic, `<td class="n">3</td>`, `<td class="n">90</td>`, `<td class="n">10</td>`) {
		t.Errorf("group page lacks partition 3 committed at 90 with lag 10:\n%s", gp)
	}

	// Traffic while the overview is open, so its chart has something to draw.
	go func() {
		for i := 0; i < 3000 && ctx.Err() == nil; i++ {
			cl.Produce(ctx, &kgo.Record{Partition: int32(i % 4), Value: make([]byte, 512)}, nil)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for _, s := range []struct{ path, name string }{
		{"/console/", "overview"}, {"/console/topics", "topics"}, {"/console/topics/" + topic, "topic"},
		{"/console/groups", "groups"}, {"/console/groups/" + group, "group"}, {"/console/groups/" + shareGroup, "share-group"},
	} {
		b.screenshot(t, base+s.path, s.name)
	}
}
