package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// compareOptions drive the compare command.
type compareOptions struct {
	launcher
	targets            []string // broker kinds, each started by the harness
	reference          string   // the broker ratios divide by (kafka)
	subject            string   // the broker ratios are of (strait)
	rounds             int
	readyRounds        int
	scenarios          []Scenario
	conns              int
	headTailBytes      int64
	headTailSamples    int
	scalePartitions    []int
	scaleDuration      time.Duration
	scaleLimit         time.Duration // longest one topic of a scaling step may take to serve
	scalePartitioner   string        // the scaling load's partitioner: scaleSticky or scaleRoundRobin
	kfakeRounds        int           // kfake keeps every record in memory: fewer rounds
	kfakeMaxPartitions int
	// equalConsume has every broker's consume phase read the same number of
	// records in a round (the fewest any produced), not all it produced.
	equalConsume bool
	connSetupN   int // new clients per listener for the set-up time (secured scenarios)
	skip         map[string]bool
	log          io.Writer
}

// phases that -skip names.
const (
	phaseStartup   = "startup"
	phaseScenarios = "scenarios"
	phaseConns     = "connections"
	phaseHeadTail  = "headtail"
	phaseScaling   = "scaling"
)

// CompareReport is everything one compare run measured; the JSON file is it,
// the markdown table a summary of it.
type CompareReport struct {
	Command   string            `json:"command"`
	Started   time.Time         `json:"started"`
	Finished  time.Time         `json:"finished"`
	Host      map[string]string `json:"host"`
	Versions  map[string]string `json:"versions"`
	Targets   []string          `json:"targets"`
	Reference string            `json:"reference"`
	Subject   string            `json:"subject"`
	Rounds    int               `json:"rounds"`
	Scenarios []Scenario        `json:"scenarios"`

	Startup     map[string][]StartupSample `json:"startup"`
	Results     []ScenarioResult           `json:"results"`
	LoadMemory  map[string]memory          `json:"load_memory"` // peak VmRSS sampled under load, VmHWM
	Connections map[string]ConnMemory      `json:"connections"`
	HeadTail    map[string]FetchLatency    `json:"head_tail"`
	Scaling     map[string][]ScaleStep     `json:"scaling"`
	// ScalePartitioner is the scaling load's partitioner, scaleSticky or
	// scaleRoundRobin (absent: round-robin, the only load before).
	ScalePartitioner string `json:"scale_partitioner,omitempty"`
	// TLS is what each broker's TLS listeners negotiated with Go's client,
	// by broker and protocol: "TLS 1.3 TLS_AES_128_GCM_SHA256".
	TLS map[string]map[string]string `json:"tls,omitempty"`
	// ConnSetup is each broker's new-client set-up time by listener
	// ("PLAINTEXT", "SASL_SSL/SCRAM-SHA-512", ...), when scenarios are secured.
	ConnSetup map[string]map[string]ConnSetup `json:"conn_setup,omitempty"`
	// Keystore is the keystore type the brokers read (secured scenarios).
	Keystore string `json:"keystore,omitempty"`
	// ACLs is how many ACLs the StandardAuthorizer held (-acls; 0: no
	// authorizer).
	ACLs int `json:"acls,omitempty"`
	// ScrapedMetrics is whether Strait served /metrics, read every second
	// (-scrape-metrics).
	ScrapedMetrics bool     `json:"scraped_metrics,omitempty"`
	Errors         []string `json:"errors,omitempty"`
}

// StartupSample is one fresh start: exec to the first Metadata answer, and
// VmRSS after settling idle.
type StartupSample struct {
	ReadyMs float64 `json:"ready_ms"`
	IdleRSS int64   `json:"idle_rss"`
}

// ConnMemory is the broker's VmRSS before and with n idle connections open.
type ConnMemory struct {
	N      int   `json:"n"`
	Before int64 `json:"before"`
	After  int64 `json:"after"`
}

// idleSettle is how long a fresh broker sits idle before its RSS is read:
// the JVM keeps allocating for a few seconds after it starts serving.
const idleSettle = 3 * time.Second

func runCompare(ctx context.Context, o compareOptions) *CompareReport {
	rep := &CompareReport{
		Started: time.Now(), Host: hostInfo(), Versions: versions(o.launcher),
		Targets: o.targets, Reference: o.reference, Subject: o.subject, Rounds: o.rounds, Scenarios: o.scenarios,
		Startup: map[string][]StartupSample{}, LoadMemory: map[string]memory{},
		Connections: map[string]ConnMemory{}, HeadTail: map[string]FetchLatency{}, Scaling: map[string][]ScaleStep{},
		TLS: map[string]map[string]string{}, ConnSetup: map[string]map[string]ConnSetup{},
	}
	if o.pki != nil {
		_, rep.Keystore = o.pki.keystore()
		rep.ACLs = o.acls
	}
	rep.ScrapedMetrics = o.scrapeMetrics
	if !o.skip[phaseScaling] {
		rep.ScalePartitioner = o.scalePartitioner
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		rep.Errors = append(rep.Errors, msg)
		logf("ERROR %s", msg)
	}
	pool := newValuePool()

	if !o.skip[phaseStartup] {
		for r := range o.readyRounds {
			for _, kind := range rotate(o.targets, r) {
				if ctx.Err() != nil {
					return rep
				}
				p, err := o.start(ctx, kind, false)
				if err != nil {
					fail("startup %s: %v", kind, err)
					continue
				}
				sleepCtx(ctx, idleSettle)
				m, err := p.memory()
				if err != nil {
					fail("startup %s: %v", kind, err)
				}
				p.remove()
				rep.Startup[kind] = append(rep.Startup[kind], StartupSample{ReadyMs: float64(p.readyIn) / 1e6, IdleRSS: m.RSS})
				logf("startup %-6s ready in %6.0f ms, idle RSS %s", kind, float64(p.readyIn)/1e6, mib(m.RSS))
			}
		}
	}

	if !o.skip[phaseScenarios] || !o.skip[phaseConns] || !o.skip[phaseHeadTail] {
		procs := map[string]*process{}
		for _, kind := range o.targets {
			p, err := o.start(ctx, kind, !o.skip[phaseScenarios])
			if err != nil {
				fail("start %s: %v", kind, err)
				continue
			}
			defer p.remove()
			procs[kind] = p
			logf("started %s at %s (%s)", kind, p.addr, p.dir)
			for _, proto := range o.protocols {
				if a := p.listeners[proto]; a != "" {
					logf("  %s listener at %s", proto, strings.TrimSpace(a+" "+p.tlsInfo[proto]))
				}
			}
			if len(p.tlsInfo) > 0 {
				rep.TLS[kind] = p.tlsInfo
			}
		}
		if !o.skip[phaseConns] {
			for _, kind := range o.targets {
				if p := procs[kind]; p != nil {
					sleepCtx(ctx, idleSettle)
					c, err := connMemory(p, o.conns)
					if err != nil {
						fail("connections %s: %v", kind, err)
						continue
					}
					rep.Connections[kind] = c
					logf("connections %-6s %d idle: RSS %s -> %s", kind, c.N, mib(c.Before), mib(c.After))
				}
			}
		}
		if !o.skip[phaseScenarios] && len(o.scenarios) > 0 {
			if o.pki != nil {
				o.connSetups(ctx, rep, procs, logf, fail)
			}
			o.runScenarioRounds(ctx, rep, procs, pool, logf, fail)
		}
		if !o.skip[phaseHeadTail] {
			for _, kind := range o.targets {
				p := procs[kind]
				if p == nil || kind == kindKfake { // in memory: no head or tail to speak of
					continue
				}
				logf("head/tail %-6s writing %s into one partition", kind, mib(o.headTailBytes))
				ht, err := headTail(ctx, []string{p.addr}, o.headTailBytes, o.headTailSamples, pool)
				if err != nil {
					fail("head/tail %s: %v", kind, err)
					continue
				}
				rep.HeadTail[kind] = ht
				logf("head/tail %-6s %d records in %.1f s; fetch p50/p99 head %.2f/%.2f ms, tail %.2f/%.2f ms",
					kind, ht.Records, ht.WriteSeconds, ht.HeadP50Ms, ht.HeadP99Ms, ht.TailP50Ms, ht.TailP99Ms)
			}
		}
		for _, p := range procs {
			p.remove()
		}
	}

	if !o.skip[phaseScaling] {
		for _, kind := range o.targets {
			if ctx.Err() != nil {
				break
			}
			rep.Scaling[kind] = o.scaling(ctx, kind, pool, logf, fail)
		}
	}
	rep.Finished = time.Now()
	return rep
}

// runScenarioRounds runs every scenario against every broker, round after
// round. Within a scenario the brokers take turns (in an order that rotates,
// so none is always first), so each ratio compares runs seconds apart.
func (o compareOptions) runScenarioRounds(ctx context.Context, rep *CompareReport, procs map[string]*process,
	pool *valuePool, logf, fail func(string, ...any)) {
	samplers := map[string]*rssSampler{}
	for kind, p := range procs {
		samplers[kind] = p.sampleRSS()
	}
	// Each scenario's topic is made up front and reused by every round: a
	// freshly created topic is not steady state (Kafka runs several times
	// slower for its first seconds), and the consume phase reads only what
	// its round produced.
	topics := map[string][]string{}
	for _, kind := range o.targets {
		p := procs[kind]
		if p == nil {
			continue
		}
		adm := kadm.NewClient(mustClient([]string{p.addr}))
		for si, s := range o.scenarios {
			topic := fmt.Sprintf("bench-%02d-%s", si+1, slug(s.Name))
			err := createTopic(ctx, adm, topic, s.Partitions)
			if err == nil {
				_, err = touchPartitions(ctx, []string{p.addr}, []string{topic}, s.Partitions, pool)
			}
			if err != nil {
				fail("%s: topic for %s: %v", kind, s.Name, err)
			}
			topics[kind] = append(topics[kind], topic)
		}
		adm.Close()
	}
	// Warm-up, not recorded: 1 s of every scenario's produce and consume
	// phases, so the JVM has compiled its hot paths (compression included)
	// before round 1; without it Kafka's first round runs at a third of its
	// speed. kfake, in Go like Strait, has nothing to compile and no
	// warm-up (it keeps every record, and memory is shared).
	for _, kind := range o.targets {
		p := procs[kind]
		if p == nil || kind == kindKfake {
			continue
		}
		for si, s := range o.scenarios {
			s.Duration, s.Topic = Dur(time.Second), topics[kind][si]
			var res ScenarioResult
			addr := p.scenarioAddr(s)
			if addr == "" {
				continue
			}
			if err := runThroughput(ctx, []string{addr}, s, pool, true, nil, &res); err != nil {
				fail("warm-up %s %s: %v", kind, s.Name, err)
			}
		}
		logf("warmed up %s", kind)
	}
	// A secured scenario's latency phase runs at its plaintext twin's rate
	// of the same round, so the two latencies compare at the same load.
	tw := twins(o.scenarios)
	for r := 1; r <= o.rounds; r++ {
		roundRates := map[int]float64{} // scenario index -> the reference's latency rate this round
		for si, s := range o.scenarios {
			order := rotate(o.targets, r+si)
			byKind := map[string]*ScenarioResult{}
			type span struct{ from, to offsets }
			produced := map[string]span{}
			for _, kind := range order {
				p := procs[kind]
				if p == nil || ctx.Err() != nil || (kind == kindKfake && r > o.kfakeRounds) {
					continue
				}
				res := &ScenarioResult{Scenario: s.Name, Target: kind, Round: r}
				addr := p.scenarioAddr(s)
				if addr == "" {
					// kfake: no TLS, no SASL. Shown as n/a, not as a pass.
					res.Skipped = fmt.Sprintf("%s has no %s listener", kind, s.protocol())
					byKind[kind] = res
					continue
				}
				s.Topic = topics[kind][si]
				from, to, err := runProduce(ctx, []string{addr}, s, pool, p.cpuTime, res)
				if err != nil {
					res.Error = err.Error()
				} else {
					produced[kind] = span{from, to}
				}
				byKind[kind] = res
			}
			// The consume phases come after every broker's produce phase,
			// in the same order. With equalConsume each reads as many
			// records as the broker (kfake aside) that produced the fewest:
			// a broker that acknowledges faster gets more data written in
			// the same 2 s, and reading 2x more data in a phase of under a
			// second is a different measurement (client start-up, the
			// consumer's heap growth and the page cache weigh differently).
			limit := int64(0)
			if o.equalConsume {
				for kind, sp := range produced {
					if n := rangeRecords(sp.from, sp.to); kind != kindKfake && (limit == 0 || n < limit) {
						limit = n
					}
				}
			}
			for _, kind := range order {
				sp, ok := produced[kind]
				if !ok || ctx.Err() != nil {
					continue
				}
				res := byKind[kind]
				if err := runConsume(ctx, []string{procs[kind].scenarioAddr(s)}, sp.from, sp.to, limit, procs[kind].cpuTime, res); err != nil {
					res.Error = err.Error()
				}
			}
			if s.LatencyRate >= 0 {
				for _, kind := range order {
					res := byKind[kind]
					if res == nil || res.Error != "" || res.Skipped != "" {
						continue
					}
					rate := s.LatencyRate
					if rate == 0 {
						rate = res.Produce.RecordsPerSec / 2
						if ref := byKind[o.reference]; ref != nil && ref.Error == "" && ref.Skipped == "" {
							rate = ref.Produce.RecordsPerSec / 2
						}
						if j, ok := tw[si]; ok && roundRates[j] > 0 {
							rate = roundRates[j]
						}
					}
					if err := runLatency(ctx, []string{procs[kind].scenarioAddr(s)}, s, rate, pool, res); err != nil {
						res.Error = err.Error()
					}
				}
			}
			if ref := byKind[o.reference]; ref != nil && ref.Latency != nil {
				roundRates[si] = ref.Latency.Rate
			}
			for _, kind := range order {
				if res := byKind[kind]; res != nil {
					logf("%s", resultLine(*res))
					if res.Error != "" {
						rep.Errors = append(rep.Errors, fmt.Sprintf("%s %s round %d: %s", kind, s.Name, r, res.Error))
					}
					rep.Results = append(rep.Results, *res)
				}
			}
		}
	}
	for kind, s := range samplers {
		peak := s.stop()
		m, err := procs[kind].memory()
		if err != nil {
			fail("memory %s: %v", kind, err)
		}
		rep.LoadMemory[kind] = memory{RSS: peak, HWM: m.HWM}
		logf("memory %-6s peak RSS under load %s, VmHWM %s", kind, mib(peak), mib(m.HWM))
	}
}

// connMemory opens n idle connections to p and reads its RSS before and after.
func connMemory(p *process, n int) (ConnMemory, error) {
	before, err := p.memory()
	if err != nil {
		return ConnMemory{}, err
	}
	conns, err := openIdleConnections(p.addr, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return ConnMemory{}, fmt.Errorf("after %d connections: %w", len(conns), err)
	}
	time.Sleep(time.Second)
	after, err := p.memory()
	if err != nil {
		return ConnMemory{}, err
	}
	return ConnMemory{N: n, Before: before.RSS, After: after.RSS}, nil
}

// scaling starts a fresh broker and adds topics of o.scalePartitions
// partitions one after the other, measuring each under load. It stops at
// the first step that fails or whose topic takes longer than o.scaleLimit.
func (o compareOptions) scaling(ctx context.Context, kind string, pool *valuePool, logf, fail func(string, ...any)) []ScaleStep {
	p, err := o.start(ctx, kind, false)
	if err != nil {
		fail("scaling %s: %v", kind, err)
		return nil
	}
	defer p.remove()
	var steps []ScaleStep
	total := 0
	for _, n := range o.scalePartitions {
		if ctx.Err() != nil || (kind == kindKfake && n > o.kfakeMaxPartitions) {
			break
		}
		st := ScaleStep{Partitions: n, TotalPartitions: total + n}
		err := o.scaleStep(ctx, p, &st, pool)
		if err != nil {
			st.Error = err.Error()
		}
		total = st.TotalPartitions
		steps = append(steps, st)
		if st.CreateSeconds > 0 {
			logf("scaling %-6s +%d partitions (total %d): created in %.2f s, first write %.2f s, RSS %s; produce %.1f MB/s fresh, %.1f MB/s settled (%d partitions written in %.1f s), consume %.1f MB/s, RSS under load %s",
				kind, n, st.TotalPartitions, st.CreateSeconds, st.FirstWriteSeconds, mib(st.IdleRSS), st.FreshProduce.MBPerSec, st.Produce.MBPerSec,
				st.PartitionsWritten, st.Produce.Seconds, st.Consume.MBPerSec, mib(st.LoadRSS))
		}
		if err != nil {
			fail("scaling %s %d partitions: %v", kind, n, err)
			break
		}
	}
	// A clean shutdown with every partition: what a restart or a rolling
	// upgrade waits for (each broker fsyncs every log it closes).
	if len(steps) > 0 && ctx.Err() == nil {
		took, killed := p.stopWithin(stopGrace)
		last := &steps[len(steps)-1]
		last.StopSeconds, last.StopKilled = took.Seconds(), killed
		logf("scaling %-6s stopped with %d partitions in %.2f s (killed: %v)", kind, last.TotalPartitions, last.StopSeconds, killed)
	}
	return steps
}

// scaleStep creates st.Partitions more partitions on p and measures them:
// the first write to each (within o.scaleLimit), then produce and consume
// under load. A broker that exits meanwhile ends the step with that reason.
func (o compareOptions) scaleStep(ctx context.Context, p *process, st *ScaleStep, pool *valuePool) error {
	ctx, done := p.whileRunning(ctx)
	defer done()
	topics, took, err := scaleTopics(ctx, []string{p.addr}, st.Partitions, o.scaleLimit)
	if err != nil {
		return stepError(ctx, err)
	}
	st.CreateSeconds = took.Seconds()
	touchCtx, cancel := context.WithTimeout(ctx, o.scaleLimit)
	first, err := touchPartitions(touchCtx, []string{p.addr}, topics, min(st.Partitions, maxPartitionsPerTopic), pool)
	cancel()
	if err != nil {
		return fmt.Errorf("first write: %w", stepError(ctx, err))
	}
	st.FirstWriteSeconds = first.Seconds()
	sleepCtx(ctx, time.Second)
	if m, err := p.memory(); err == nil {
		st.IdleRSS = m.RSS
	}
	sampler := p.sampleRSS()
	st.FreshProduce, _, _, err = scaleLoad(ctx, []string{p.addr}, topics, o.scaleDuration, o.scalePartitioner, pool, false)
	if err == nil {
		st.Produce, st.Consume, st.PartitionsWritten, err = scaleLoad(ctx, []string{p.addr}, topics, o.scaleDuration, o.scalePartitioner, pool, true)
	}
	st.LoadRSS = sampler.stop()
	return stepError(ctx, err)
}

// stepError is err, or the broker's exit when that is what ended ctx.
func stepError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			return cause
		}
	}
	return err
}

// rotate returns s rotated left by k.
func rotate(s []string, k int) []string {
	if len(s) == 0 {
		return nil
	}
	k %= len(s)
	return append(append([]string{}, s[k:]...), s[:k]...)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func hostInfo() map[string]string {
	h := map[string]string{"cpus": fmt.Sprint(runtime.NumCPU()), "go": runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		h["mem"] = strings.Join(strings.Fields(line)[1:], " ")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		line, _, _ := strings.Cut(string(out), "\n")
		h["java"] = strings.TrimSpace(line)
	}
	return h
}

// versions names what was compared: Kafka's jar, franz-go as linked into
// the harness, kfake as linked into its command, and Strait's commit.
func versions(l launcher) map[string]string {
	v := map[string]string{}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(l.kafkaScript), "lib", "kafka_2.13-*.jar")); len(m) > 0 {
		v["kafka"] = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), "kafka_2.13-"), ".jar")
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				v["franz-go"] = d.Version
			}
		}
	}
	if out, err := exec.Command(l.kfakeBin, "-version").Output(); err == nil {
		v["kfake"] = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		v["strait"] = strings.TrimSpace(string(out))
	}
	return v
}

// dialable reports whether addr accepts connections (used by run's preflight).
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// connSetups measures, on each broker and each listener the scenarios use,
// how long a new client takes to its first Metadata answer.
func (o compareOptions) connSetups(ctx context.Context, rep *CompareReport, procs map[string]*process, logf, fail func(string, ...any)) {
	for _, kind := range o.targets {
		p := procs[kind]
		if p == nil {
			continue
		}
		for _, label := range connSetupLabels(o.scenarios) {
			addr := p.scenarioAddr(labelScenario(label))
			if addr == "" || ctx.Err() != nil {
				continue
			}
			c, err := measureConnSetup(ctx, addr, o.connSetupN)
			if err != nil {
				fail("connection set-up %s %s: %v", kind, label, err)
				continue
			}
			if rep.ConnSetup[kind] == nil {
				rep.ConnSetup[kind] = map[string]ConnSetup{}
			}
			rep.ConnSetup[kind][label] = c
			logf("connection set-up %-6s %-24s p50 %.2f ms, p99 %.2f ms (%d clients)", kind, label, c.P50Ms, c.P99Ms, c.N)
		}
	}
}
