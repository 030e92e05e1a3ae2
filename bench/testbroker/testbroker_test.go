package testbroker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// The measured test body: what a test of an application's consumer does.
const (
	bodyRecords    = 1000
	bodyPartitions = 3
	bodyValueBytes = 100
	bodyTimeout    = 60 * time.Second
	parallelTests  = 20
)

// instance is one started broker (or cluster of them) of a target.
type instance struct {
	seeds []string
	close func()
	dirs  []string // each broker's data directory; none for kfake
}

// target is a broker to measure, started the way a test would start it.
type target struct {
	name, title string
	start       func(tb testing.TB, n int) *instance
}

var targets = []target{
	{"kfake", "kfake", startKfake},
	{"strait", "Strait, embedded etcd (`WithEmbeddedEtcd()`)", func(tb testing.TB, n int) *instance {
		return startStrait(tb, n, straittest.WithEmbeddedEtcd())
	}},
	{"strait-shared", "Strait, shared etcd (the default)", func(tb testing.TB, n int) *instance {
		return startStrait(tb, n)
	}},
}

func targetByName(name string) (target, bool) {
	for _, tg := range targets {
		if tg.name == name {
			return tg, true
		}
	}
	return target{}, false
}

// startKfake starts kfake as its documentation shows: in memory, ports of
// its own choosing on 127.0.0.1.
func startKfake(tb testing.TB, n int) *instance {
	c, err := kfake.NewCluster(kfake.NumBrokers(n))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return &instance{seeds: c.ListenAddrs(), close: c.Close}
}

// startStrait starts Strait through straittest with its test defaults.
// Benchmarks log errors only, as b.Log prints even without -v; the parallel
// tests keep straittest's default level (Info, through t.Log), which is
// what a test calling straittest.Start(t) gets.
func startStrait(tb testing.TB, n int, opts ...straittest.Option) *instance {
	if _, ok := tb.(*testing.B); ok {
		opts = append(opts, straittest.WithLogLevel(slog.LevelError))
	}
	c := straittest.StartCluster(tb, n, opts...)
	inst := &instance{seeds: c.Addrs(), close: c.Close}
	for _, br := range c.Brokers() {
		inst.dirs = append(inst.dirs, br.Dir())
	}
	return inst
}

// keepSharedEtcdUp starts a broker on the shared etcd for the rest of the
// benchmark, so that the measured brokers find it running, as in a test
// run where other tests use it: what is measured is a broker's start and
// close, not etcd's (the parallel tests, each a fresh process, pay it).
func keepSharedEtcdUp(b *testing.B, tg target) {
	if tg.name == "strait-shared" {
		tg.start(b, 1)
	}
}

// diskBytes is the disk the instance's brokers hold now, in allocated
// blocks (etcd preallocates its WAL segments).
func (inst *instance) diskBytes() int64 {
	var n int64
	for _, d := range inst.dirs {
		n += duBytes(d)
	}
	return n
}

// removeDirs frees a closed instance's disk at once rather than at the end
// of the benchmark.
func (inst *instance) removeDirs() {
	for _, d := range inst.dirs {
		os.RemoveAll(d)
	}
}

func duBytes(root string) int64 {
	var n int64
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed meanwhile
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

var seq atomic.Int64

// body is the test of the table: create a topic, produce 1,000 records,
// consume them in a consumer group, commit. The same franz-go code runs
// against every broker.
func body(ctx context.Context, seeds []string, topic, group string) error {
	ctx, cancel := context.WithTimeout(ctx, bodyTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, bodyPartitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	value := make([]byte, bodyValueBytes)
	recs := make([]*kgo.Record, bodyRecords)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	defer cons.Close()
	got := 0
	for got < bodyRecords {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consume: %d of %d records: %w", got, bodyRecords, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("consume: %v", errs[0].Err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	cons.Close() // leaves the group: part of the test
	return nil
}

// verify checks what body left: the group's committed offsets cover every
// record. Not timed.
func verify(ctx context.Context, seeds []string, group string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	if err := offs.Error(); err != nil {
		return err
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != bodyRecords {
		return fmt.Errorf("group %s committed offsets summing to %d, want %d", group, sum, bodyRecords)
	}
	return nil
}

// runBody runs body on a fresh topic and group and fails tb on an error.
func runBody(tb testing.TB, inst *instance) (time.Duration, string) {
	tb.Helper()
	n := seq.Add(1)
	topic, group := fmt.Sprintf("orders-%d", n), fmt.Sprintf("app-%d", n)
	t0 := time.Now()
	if err := body(context.Background(), inst.seeds, topic, group); err != nil {
		tb.Fatal(err)
	}
	return time.Since(t0), group
}

// TestBody checks, quickly, that the measured body passes on kfake and on
// a Strait broker, with its results checked (committed offsets).
func TestBody(t *testing.T) {
	for _, tg := range targets[:2] {
		t.Run(tg.name, func(t *testing.T) {
			inst := tg.start(t, 1)
			_, group := runBody(t, inst)
			if err := verify(t.Context(), inst.seeds, group); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkStartClose: start to ready (Start returns: every broker serves
// and lists the others), then teardown (Close returns), of one and three
// brokers.
func BenchmarkStartClose(b *testing.B) {
	for _, tg := range targets {
		for _, n := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/brokers=%d", tg.name, n), func(b *testing.B) {
				keepSharedEtcdUp(b, tg)
				var starts, closes []float64
				for b.Loop() {
					t0 := time.Now()
					inst := tg.start(b, n)
					t1 := time.Now()
					inst.close()
					t2 := time.Now()
					starts = append(starts, ms(t1.Sub(t0)))
					closes = append(closes, ms(t2.Sub(t1)))
					inst.removeDirs()
				}
				record(b, tg, fmt.Sprintf("start%d", n), "start-ms", starts)
				record(b, tg, fmt.Sprintf("close%d", n), "close-ms", closes)
			})
		}
	}
}

// BenchmarkCreateProduceConsumeCommit times body on a fresh single broker
// (its start and close not timed).
func BenchmarkCreateProduceConsumeCommit(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			keepSharedEtcdUp(b, tg)
			var took []float64
			for b.Loop() {
				inst := tg.start(b, 1)
				d, group := runBody(b, inst)
				took = append(took, ms(d))
				if err := verify(context.Background(), inst.seeds, group); err != nil {
					b.Fatal(err)
				}
				inst.close()
				inst.removeDirs()
			}
			record(b, tg, "body", "body-ms", took)
		})
	}
}

// BenchmarkParallel20 runs, per iteration, a fresh test process (this test
// binary again) whose one test has 20 subtests, t.Parallel each, each
// starting its own broker and running body: at -parallel 20 and at the
// default (GOMAXPROCS). It reports the test's wall time, the process's peak
// RSS (VmHWM) and the disk the brokers held at the end of their bodies,
// before their cleanups (summed over the 20, plus the shared etcd's).
func BenchmarkParallel20(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, tg := range targets {
		for _, par := range []int{parallelTests, 0} {
			key, name := "par20", "parallel=20"
			if par == 0 {
				key, name = "pardef", "parallel=default"
			}
			b.Run(tg.name+"/"+name, func(b *testing.B) {
				var wall, rss, base, disk []float64
				for b.Loop() {
					r := runChild(b, exe, tg.name, par)
					wall = append(wall, r.WallSec)
					rss = append(rss, float64(r.PeakRSSKB)/1024)
					base = append(base, float64(r.StartRSSKB)/1024)
					disk = append(disk, float64(r.DiskBytes+r.SharedEtcdBytes)/(1<<20))
				}
				record(b, tg, key+".wall", "wall-s", wall)
				record(b, tg, key+".rss", "peak-rss-MiB", rss)
				record(b, tg, key+".base", "start-rss-MiB", base)
				record(b, tg, key+".disk", "disk-MiB", disk)
			})
		}
	}
}

// The child process: TestMain runs the parallel tests instead of the
// package's when childEnv names a target.
const (
	childEnv = "STRAIT_TESTBROKER_CHILD"
	outEnv   = "STRAIT_TESTBROKER_OUT"
)

type childResult struct {
	WallSec         float64
	StartRSSKB      int64
	PeakRSSKB       int64
	DiskBytes       int64 // the brokers' directories, summed
	SharedEtcdBytes int64 // the shared etcd's directory (the default), at its largest
	Tests           int   // subtests that passed
}

func runChild(b *testing.B, exe, name string, parallel int) childResult {
	dir := b.TempDir()
	out := filepath.Join(dir, "result.json")
	tmp := filepath.Join(dir, "tmp") // the child's TMPDIR: its temporary dirs only
	if err := os.Mkdir(tmp, 0o755); err != nil {
		b.Fatal(err)
	}
	args := []string{"-test.run=^$", "-test.timeout=10m"}
	if parallel > 0 {
		args = append(args, "-test.parallel="+strconv.Itoa(parallel))
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"="+name, outEnv+"="+out, "TMPDIR="+tmp)
	if output, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("parallel tests on %s: %v\n%s", name, err, output)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	var r childResult
	if err := json.Unmarshal(data, &r); err != nil {
		b.Fatal(err)
	}
	return r
}

func childMain(m *testing.M, name string) int {
	tg, ok := targetByName(name)
	if !ok {
		fmt.Fprintf(os.Stderr, "%s=%q: no such target\n", childEnv, name)
		return 2
	}
	// With -test.run=^$ this runs nothing: it parses the test flags
	// (-test.parallel) and sets the testing package up for RunTests, which
	// runs nothing before m.Run has read -test.cpu (hence the check of
	// Tests below).
	if code := m.Run(); code != 0 {
		return code
	}
	var r childResult
	r.StartRSSKB = procStatusKB("VmRSS")
	t0 := time.Now()
	passed := testing.RunTests(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "TestParallel20", F: func(t *testing.T) { parallel20(t, tg, &r) }}})
	r.WallSec = time.Since(t0).Seconds()
	r.PeakRSSKB = procStatusKB("VmHWM")
	if !passed {
		return 1
	}
	if r.Tests != parallelTests {
		fmt.Fprintf(os.Stderr, "%d of %d parallel tests ran\n", r.Tests, parallelTests)
		return 1
	}
	data, _ := json.Marshal(r)
	if err := os.WriteFile(os.Getenv(outEnv), data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func parallel20(t *testing.T, tg target, r *childResult) {
	var mu sync.Mutex
	for i := range parallelTests {
		t.Run(fmt.Sprintf("test%02d", i), func(t *testing.T) {
			t.Parallel()
			inst := tg.start(t, 1)
			runBody(t, inst)
			disk := inst.diskBytes()
			var shared int64
			if tg.name == "strait-shared" {
				matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "straittest-etcd-*"))
				for _, m := range matches {
					shared += duBytes(m)
				}
			}
			mu.Lock()
			r.DiskBytes += disk
			r.SharedEtcdBytes = max(r.SharedEtcdBytes, shared)
			r.Tests++
			mu.Unlock()
		})
	}
}

// procStatusKB reads a "kB" line of /proc/self/status (VmRSS, VmHWM).
func procStatusKB(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// results holds every benchmark's samples, by target and row, for the
// table printed at the end of the run.
var results = struct {
	sync.Mutex
	m map[string][]float64
}{m: map[string][]float64{}}

func record(b *testing.B, tg target, row, unit string, samples []float64) {
	if len(samples) == 0 {
		return
	}
	b.ReportMetric(median(samples), unit)
	results.Lock()
	results.m[tg.name+"|"+row] = append(results.m[tg.name+"|"+row], samples...)
	results.Unlock()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rows of the table, as issue 16 lists them.
var rows = []struct{ key, label, unit string }{
	{"start1", "one broker, start to ready", "ms"},
	{"body", "create topic, produce 1,000, consume in a group, commit", "ms"},
	{"par20.wall", "20 parallel tests with their own broker, -parallel 20: wall", "s"},
	{"par20.rss", "&nbsp;&nbsp;peak RSS of the process", "MiB"},
	{"par20.base", "&nbsp;&nbsp;RSS of the same process before the tests", "MiB"},
	{"par20.disk", "&nbsp;&nbsp;disk, summed over the 20 brokers at the end of their tests", "MiB"},
	{"pardef.wall", "20 parallel tests, default -parallel (GOMAXPROCS): wall", "s"},
	{"pardef.rss", "&nbsp;&nbsp;peak RSS of the process", "MiB"},
	{"pardef.base", "&nbsp;&nbsp;RSS of the same process before the tests", "MiB"},
	{"pardef.disk", "&nbsp;&nbsp;disk, summed over the 20 brokers at the end of their tests", "MiB"},
	{"start3", "three brokers, start to ready", "ms"},
	{"close1", "teardown, one broker", "ms"},
	{"close3", "teardown, three brokers", "ms"},
}

// printTable writes the medians as a markdown table (nothing if no
// benchmark ran).
func printTable(w io.Writer) {
	results.Lock()
	defer results.Unlock()
	if len(results.m) == 0 {
		return
	}
	fmt.Fprintf(w, "\nMedians (min-max over the samples), GOMAXPROCS %d, samples per cell: %s\n\n|",
		runtime.GOMAXPROCS(0), sampleCounts())
	for _, tg := range targets {
		fmt.Fprintf(w, " | %s", tg.title)
	}
	fmt.Fprint(w, " |\n|---")
	for range targets {
		fmt.Fprint(w, "|---")
	}
	fmt.Fprintln(w, "|")
	for _, row := range rows {
		fmt.Fprintf(w, "| %s (%s)", row.label, row.unit)
		for _, tg := range targets {
			s := results.m[tg.name+"|"+row.key]
			if len(s) == 0 {
				fmt.Fprint(w, " | -")
				continue
			}
			fmt.Fprintf(w, " | %s (%s-%s)", format(median(s)), format(slices.Min(s)), format(slices.Max(s)))
		}
		fmt.Fprintln(w, " |")
	}
}

// sampleCounts lists the distinct sample counts of the cells ("7").
func sampleCounts() string {
	var ns []int
	for _, s := range results.m {
		if !slices.Contains(ns, len(s)) {
			ns = append(ns, len(s))
		}
	}
	slices.Sort(ns)
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, ", ")
}

func format(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(childMain(m, name))
	}
	code := m.Run()
	printTable(os.Stdout)
	os.Exit(code)
}
