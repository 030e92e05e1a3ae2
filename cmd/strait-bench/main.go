// Command strait-bench measures Kafka brokers with franz-go: Strait, Apache
// Kafka, or anything else that speaks the protocol.
//
//	strait-bench run     [-brokers host:port] [-scenarios FILE|DIR]... [-json F] [-md F]
//	strait-bench compare [-targets strait,kafka,kfake] [-rounds N] [-quick] [-out DIR] ...
//	strait-bench ready   [-brokers host:port]
//	strait-bench report  [-in bench/results/latest.json] [-out F.md]
//	strait-bench metrics-cost [-out F.md] DIR|latest.json ...
//
// run measures one bootstrap address: for each scenario (bench/scenarios has
// the files; without -scenarios the -size, -partitions, ... flags make one),
// produce throughput, consume throughput and end-to-end latency at a fixed
// rate. compare starts the brokers itself (bin/strait, Apache Kafka through
// bench/kafka/kafka.sh, franz-go's kfake through bin/kfake-bench), runs the
// scenarios against each in turn for several rounds and also measures
// start-up time, memory, idle connections, partition scaling and fetch
// latency at the head and tail of a large log; it writes a markdown table
// and the full JSON (report renders such a JSON again). ready waits until a broker answers Metadata and prints
// how long that took. metrics-cost reads compare runs of Strait with and
// without -scrape-metrics and tables the cost of the metrics (metricscost.go).
// Every client has idempotence off (Strait has no
// InitProducerId yet) and consumes without a group (no group coordinator yet),
// so every broker sees the same requests.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		cmdRun(ctx, args)
	case "compare":
		cmdCompare(ctx, args)
	case "ready":
		cmdReady(ctx, args)
	case "report":
		cmdReport(args)
	case "metrics-cost":
		cmdMetricsCost(args)
	default:
		fail("unknown command %q: want run, compare, ready, report or metrics-cost", cmd)
	}
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func cmdRun(ctx context.Context, args []string) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "bootstrap addresses, comma-separated")
	var files listFlag
	fs.Var(&files, "scenarios", "scenario file or directory of *.json (repeatable); without it the flags below make one scenario")
	jsonOut := fs.String("json", "", "write the results as JSON to this file (- for stdout)")
	mdOut := fs.String("md", "", "write a markdown table to this file (- for stdout)")
	s := defaultScenario()
	fs.IntVar(&s.RecordSize, "size", s.RecordSize, "value size in bytes")
	fs.IntVar(&s.Partitions, "partitions", s.Partitions, "partitions of the created topic")
	fs.StringVar(&s.Acks, "acks", s.Acks, "acks: all, 1 or 0")
	fs.StringVar(&s.Compression, "compression", s.Compression, "none, gzip, snappy, lz4, zstd")
	fs.IntVar(&s.Producers, "producers", s.Producers, "producer clients")
	fs.StringVar(&s.Partitioner, "partitioner", s.Partitioner, "sticky, round-robin or sticky-in-turn (16 KiB to a partition, then the next)")
	fs.IntVar(&s.LingerMs, "linger-ms", s.LingerMs, "producer linger")
	duration := fs.Duration("duration", s.Duration.D(), "produce phase length")
	fs.StringVar(&s.Topic, "topic", "", "use this topic (created if missing) instead of a fresh one")
	fs.Int64Var(&s.MaxRecords, "records", 0, "stop producing after this many records (0: -duration decides)")
	fs.Float64Var(&s.LatencyRate, "rate", 0, "latency phase records/s (0: half the measured produce rate, <0: skip)")
	fs.IntVar(&s.LatencyLingerMs, "latency-linger-ms", s.LatencyLingerMs, "producer linger in the latency phase")
	latDuration := fs.Duration("latency-duration", s.LatencyDuration.D(), "latency phase length")
	consume := fs.Bool("consume", true, "measure the consume phase (false: produce only, for profiling)")
	fs.StringVar(&s.Security, "security", "", "listener protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (-brokers is such a listener)")
	fs.StringVar(&s.SASLMechanism, "sasl-mechanism", "", "SCRAM-SHA-512 (default), SCRAM-SHA-256 or PLAIN")
	caFile := fs.String("tls-ca", "", "PEM file of the CA certificates to trust over TLS (default: the system's)")
	saslUser := fs.String("sasl-user", "", "SASL user")
	saslPassword := fs.String("sasl-password", "", "SASL password (or env STRAIT_BENCH_SASL_PASSWORD)")
	fs.StringVar(&latencyTrace, "latency-trace", "", "write every measured record of the latency phase to this file: scheduled send ms, produce ack ms, end-to-end ms (to see when stalls happen)")
	_ = fs.Parse(args)
	s.Duration, s.LatencyDuration = Dur(*duration), Dur(*latDuration)

	var scenarios []Scenario
	if len(files) > 0 {
		var err error
		if scenarios, err = loadScenarios(files, 1); err != nil {
			fail("%v", err)
		}
		// Flags given beside -scenarios override the files' values.
		fs.Visit(func(f *flag.Flag) {
			for i := range scenarios {
				sc := &scenarios[i]
				switch f.Name {
				case "size":
					sc.RecordSize = s.RecordSize
				case "partitions":
					sc.Partitions = s.Partitions
				case "acks":
					sc.Acks = s.Acks
				case "compression":
					sc.Compression = s.Compression
				case "producers":
					sc.Producers = s.Producers
				case "partitioner":
					sc.Partitioner = s.Partitioner
				case "linger-ms":
					sc.LingerMs = s.LingerMs
				case "latency-linger-ms":
					sc.LatencyLingerMs = s.LatencyLingerMs
				case "duration":
					sc.Duration = s.Duration
				case "latency-duration":
					sc.LatencyDuration = s.LatencyDuration
				case "records":
					sc.MaxRecords = s.MaxRecords
				case "rate":
					sc.LatencyRate = s.LatencyRate
				case "topic":
					sc.Topic = s.Topic
				case "security":
					sc.Security = s.Security
				case "sasl-mechanism":
					sc.SASLMechanism = s.SASLMechanism
				}
			}
		})
	} else {
		s.Name = s.autoName()
		if err := s.validate(); err != nil {
			fail("%v", err)
		}
		scenarios = []Scenario{s}
	}
	seeds := strings.Split(*brokers, ",")
	if !dialable(seeds[0]) {
		fail("nothing listens on %s", seeds[0])
	}
	if err := registerRunSecurity(seeds[0], scenarios, *caFile, *saslUser, *saslPassword); err != nil {
		fail("%v", err)
	}
	results := runScenarios(ctx, seeds, scenarios, *consume, os.Stderr)
	if *jsonOut != "" {
		writeFile(*jsonOut, func(f *os.File) error {
			enc := json.NewEncoder(f)
			enc.SetIndent("", "  ")
			return enc.Encode(results)
		})
	}
	if *mdOut != "" {
		writeFile(*mdOut, func(f *os.File) error { runMarkdown(f, seeds, results); return nil })
	}
	for _, r := range results {
		if r.Error != "" {
			os.Exit(1)
		}
	}
}

func cmdCompare(ctx context.Context, args []string) {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	targets := fs.String("targets", "kafka,strait,kfake", "brokers to start and measure: strait, kafka, kfake")
	rounds := fs.Int("rounds", 3, "rounds of every scenario (ratios are medians over them)")
	quick := fs.Bool("quick", false, "one round, half-length phases, 3 start-ups, a 500 MB log for head/tail")
	var files listFlag
	fs.Var(&files, "scenarios", "scenario file or directory (repeatable; default bench/scenarios)")
	out := fs.String("out", "bench/results", "directory for latest.md and latest.json")
	o := compareOptions{reference: kindKafka, subject: kindStrait, log: os.Stderr}
	fs.StringVar(&o.straitBin, "strait", "bin/strait", "Strait binary")
	fs.StringVar(&o.kfakeBin, "kfake", "bin/kfake-bench", "kfake command (go build -o bin/kfake-bench ./bench/kfake)")
	fs.StringVar(&o.kafkaScript, "kafka", "bench/kafka/kafka.sh", "Apache Kafka runner")
	fs.StringVar(&o.workDir, "work", "bench/work", "scratch directory for broker data")
	fs.IntVar(&o.readyRounds, "ready-rounds", 3, "fresh starts for start-up time and idle RSS")
	fs.IntVar(&o.conns, "conns", 1000, "idle connections")
	htBytes := fs.Float64("headtail-bytes", 2e9, "bytes written to the one partition of the head/tail fetch test")
	fs.IntVar(&o.headTailSamples, "headtail-samples", 200, "fetches at the head and as many at the tail")
	scale := fs.String("scale", "1,100,1000", "partitions the scaling phase adds in turn (10000 works on Kafka but takes minutes)")
	fs.DurationVar(&o.scaleDuration, "scale-duration", 3*time.Second, "produce phase of each scaling step")
	fs.StringVar(&o.scalePartitioner, "scale-partitioner", scaleSticky, "the scaling steps' partitioner: sticky (16 KiB, the Java client's batch.size, to one partition, then the next in order, as Kafka's clients and kafka-producer-perf-test batch records without a key; a phase runs past -scale-duration, up to 10 times, until every partition has had its turn) or round-robin (every record to the next partition: batches of a record or two at 10,000 partitions)")
	fs.DurationVar(&o.scaleLimit, "scale-limit", time.Minute, "longest one topic (of at most 1,000 partitions) of a scaling step may take to serve")
	fs.IntVar(&o.kfakeRounds, "kfake-rounds", 1, "rounds kfake takes part in (it keeps every record in memory)")
	fs.IntVar(&o.kfakeMaxPartitions, "kfake-max-partitions", 1000, "largest scaling step for kfake (memory again)")
	fs.BoolVar(&o.equalConsume, "equal-consume", true, "each broker's consume phase reads as many records as the broker that produced the fewest in the round (false: all it produced)")
	skip := fs.String("skip", "", "phases to leave out: startup, connections, scenarios, headtail, scaling")
	fs.IntVar(&o.connSetupN, "conn-setup", 30, "new clients per listener timed to their first Metadata answer, when scenarios are secured")
	cipherSuites := fs.String("ssl-cipher-suites", "", "ssl.cipher.suites of every TLS listener (default: each broker's own choice, reported)")
	fs.IntVar(&o.acls, "acls", 0, "turn Kafka's StandardAuthorizer on with this many ACLs (at least 2; the SASL scenarios' user is authorized by two of them, User:ANONYMOUS on PLAINTEXT is the super user)")
	fs.BoolVar(&o.scrapeMetrics, "scrape-metrics", false, "give Strait its HTTP listener and read its /metrics every second during the run (compare with a run without: the cost of the metrics)")
	keystoreType := fs.String("keystore-type", "PKCS12", "keystore the brokers of secured scenarios read: PKCS12, JKS or PEM (the same file for every broker)")
	_ = fs.Parse(args)

	o.targets = strings.Split(*targets, ",")
	o.rounds = *rounds
	o.headTailBytes = int64(*htBytes)
	scaleDurationScale := 1.0
	if *quick {
		o.rounds, o.readyRounds = 1, 3
		o.headTailBytes = min(o.headTailBytes, 500e6)
		o.headTailSamples = min(o.headTailSamples, 100)
		o.scaleDuration /= 2
		scaleDurationScale = 0.5
	}
	for _, f := range strings.Split(*scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail("-scale %q: want partition counts", *scale)
		}
		o.scalePartitions = append(o.scalePartitions, n)
	}
	if o.scalePartitioner != scaleSticky && o.scalePartitioner != scaleRoundRobin {
		fail("-scale-partitioner %q: want %s or %s", o.scalePartitioner, scaleSticky, scaleRoundRobin)
	}
	o.skip = map[string]bool{}
	for _, p := range strings.Split(*skip, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.skip[p] = true
		}
	}
	if len(files) == 0 {
		files = listFlag{"bench/scenarios"}
	}
	var err error
	if o.scenarios, err = loadScenarios(files, scaleDurationScale); err != nil {
		fail("%v", err)
	}
	for _, k := range o.targets {
		switch k {
		case kindStrait, kindKafka, kindKfake:
		default:
			fail("-targets: unknown broker %q", k)
		}
	}
	if o.workDir, err = filepath.Abs(o.workDir); err != nil {
		fail("%v", err)
	}
	// Broker logs of the previous run go; data dirs are gone already.
	_ = os.RemoveAll(o.workDir)
	if err := os.MkdirAll(o.workDir, 0o755); err != nil {
		fail("%v", err)
	}
	if !o.skip[phaseScenarios] {
		o.protocols, o.mechanisms = securedNeeds(o.scenarios)
		if len(o.protocols) > 0 {
			if o.pki, err = newPKI(filepath.Join(o.workDir, "tls"), *keystoreType); err != nil {
				fail("certificates: %v", err)
			}
			o.pki.cipherSuites = *cipherSuites
		}
	}
	if o.acls != 0 {
		sasl := false
		for _, p := range o.protocols {
			sasl = sasl || usesSASL(p)
		}
		if o.acls < 2 || !sasl {
			fail("-acls %d: want at least 2, and a SASL scenario (whose user the ACLs authorize)", o.acls)
		}
	}
	rep := runCompare(ctx, o)
	rep.Command = strings.TrimSpace("strait-bench compare " + strings.Join(args, " "))
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail("%v", err)
	}
	writeFile(filepath.Join(*out, "latest.json"), func(f *os.File) error {
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
	writeFile(filepath.Join(*out, "latest.md"), func(f *os.File) error { writeMarkdown(f, rep); return nil })
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", filepath.Join(*out, "latest.md"), filepath.Join(*out, "latest.json"))
	if ctx.Err() != nil {
		os.Exit(130)
	}
}

func cmdReport(args []string) {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	in := fs.String("in", "bench/results/latest.json", "a compare JSON")
	out := fs.String("out", "-", "markdown output")
	_ = fs.Parse(args)
	raw, err := os.ReadFile(*in)
	if err != nil {
		fail("%v", err)
	}
	var rep CompareReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		fail("%s: %v", *in, err)
	}
	writeFile(*out, func(f *os.File) error { writeMarkdown(f, &rep); return nil })
}

func cmdReady(ctx context.Context, args []string) {
	fs := flag.NewFlagSet("ready", flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "address to probe")
	timeout := fs.Duration("timeout", time.Minute, "give up after")
	_ = fs.Parse(args)
	start := time.Now()
	for {
		if err := metadataProbe(*brokers, 250*time.Millisecond); err == nil {
			fmt.Printf("%s answered Metadata after %.1f ms\n", *brokers, float64(time.Since(start))/1e6)
			return
		}
		if time.Since(start) > *timeout || ctx.Err() != nil {
			fail("%s did not answer Metadata within %v", *brokers, *timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func writeFile(path string, write func(*os.File) error) {
	if path == "-" {
		if err := write(os.Stdout); err != nil {
			fail("%v", err)
		}
		return
	}
	f, err := os.Create(path)
	if err != nil {
		fail("%v", err)
	}
	if err := write(f); err != nil {
		fail("%s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		fail("%s: %v", path, err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "strait-bench: "+format+"\n", args...)
	os.Exit(1)
}
