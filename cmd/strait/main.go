// Command strait runs a Strait broker, or a cluster of them for tests.
//
//	strait [--config server.properties] [--override key=value]... [--log-level LEVEL]
//	       [--ephemeral] [--test-defaults] [--ready-file PATH] [--test-clock-file PATH]
//	strait server.properties [--override key=value]...      (kafka-server-start.sh's form)
//	strait cluster [--brokers N] [the options above]
//
// Properties come from the file, then KAFKA_* environment variables (the Apache
// Kafka Docker image's mapping), then --override, later ones winning. The log
// level is --log-level, else STRAIT_LOG_LEVEL, else info; logs are slog text on
// stderr. SIGINT or SIGTERM shuts the broker down cleanly (exit 0), also during
// start-up; an invalid configuration or a fatal broker error exits 1. The
// usage text (strait -h) documents every option.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/clock"
)

const usage = `USAGE: strait [--config server.properties] [--override property=value]* [--log-level LEVEL]
              [--ephemeral] [--test-defaults] [--ready-file PATH] [--test-clock-file PATH]
       strait server.properties [--override property=value]* [options]
       strait cluster [--brokers N] [options]

Options:
  --config FILE        a Kafka server.properties; also the first argument without a flag
  --override K=V       a property over the file and the KAFKA_* environment; repeatable
  --log-level LEVEL    debug, info, warn or error (default: $STRAIT_LOG_LEVEL, else info)
  --log-format FORMAT  text or json (default: $STRAIT_LOG_FORMAT, else text): slog's
                       text or JSON lines on stderr
  --ephemeral          keep log.dirs and etcd.data.dir in a new temporary directory
                       (under $TMPDIR), removed when strait exits; it replaces any
                       configured log.dirs and etcd.data.dir
  --test-defaults      defaults for tests under the configuration's own values:
                       group.initial.rebalance.delay.ms=0, offsets.topic.num.partitions=1,
                       transaction.state.log.num.partitions=1, replication factors of
                       the internal topics 1 (a cluster: up to 3) and
                       transaction.state.log.min.isr 1 (a cluster of 3 or more: 2),
                       group.min.session.timeout.ms=250,
                       group.consumer.heartbeat.interval.ms=500
  --ready-file PATH    once every broker serves, write one line per listener,
                       LISTENER://host:port (the bound address; 127.0.0.1 for an
                       unspecified host), brokers in node.id order; written to a
                       temporary file then renamed, so it appears complete; removed
                       at exit
  --test-clock-file PATH
                       tests only: the brokers' wall clock is the system's plus the Go
                       duration in PATH (+90s, -30s, 0s), re-read every 100 ms, as an
                       NTP step would move it (retention, LogAppendTime, ISR lag,
                       transaction and token expiry follow it); a missing file is 0s;
                       an empty or malformed one leaves the offset as it was (a
                       malformed value is logged once); write it whole (write a
                       temporary file, then rename it); every broker of the process
                       follows the same file
  -h, --help           this text

strait cluster starts N brokers (--brokers N or -n N, default 3) in this
process, node.id 1 to N, each on PLAINTEXT://127.0.0.1:<free port> with its
own temporary directory (as --ephemeral), their embedded etcd members forming
one etcd cluster on free loopback peer ports. It logs "strait cluster ready"
with bootstrap.servers once all serve, and stops them all on SIGINT or SIGTERM.

A signal during start-up stops strait too: what started is closed cleanly if
start-up ends within 3 s, else strait exits without waiting for it
(nothing has been served yet); exit 0 either way, 1 on a second signal.
`

// server is what run needs of *broker.Server (a fake in tests).
type server interface {
	Start() error
	Ready() <-chan struct{}
	Err() <-chan error
	Addrs() []net.Addr
	ClusterID() string
	Close() error
}

// newServer builds the broker; tests replace it.
var newServer = func(cfg config.Config) (server, error) { return broker.New(cfg) }

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	stopProfiling := startProfiling()
	code := run(os.Args[1:], os.Environ(), os.Stderr, signals)
	stopProfiling()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	configFile   string
	overrides    []string
	logLevel     string
	logFormat    string
	help         bool
	ephemeral    bool
	testDefaults bool
	readyFile    string
	// testClockFile holds the brokers' clock offset (testclock.go).
	testClockFile string
	// cluster is the number of brokers of strait cluster, 0 for one
	// broker without the subcommand.
	cluster int
}

// errUsage marks a command-line mistake, answered with the usage text.
var errUsage = errors.New("usage")

// defaultClusterSize is strait cluster's number of brokers without -n.
const defaultClusterSize = 3

// parseArgs accepts --name value and --name=value, a single positional config
// file (Kafka's form), boolean switches (--name or --name=true|false), the
// cluster subcommand as the first argument, and -h/--help.
func parseArgs(args []string) (options, error) {
	var o options
	if len(args) > 0 && args[0] == "cluster" {
		o.cluster = defaultClusterSize
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		switch name {
		case "-h", "-help", "--help":
			o.help = true
			continue
		case "--ephemeral", "-ephemeral", "--test-defaults", "-test-defaults":
			on := true
			if hasValue {
				b, err := strconv.ParseBool(value)
				if err != nil {
					return o, fmt.Errorf("%w: option %s takes true or false, not %q", errUsage, name, value)
				}
				on = b
			}
			if strings.TrimLeft(name, "-") == "ephemeral" {
				o.ephemeral = on
			} else {
				o.testDefaults = on
			}
			continue
		case "--config", "-config", "--override", "-override", "--log-level", "-log-level", "--log-format", "-log-format", "--ready-file", "-ready-file",
			"--test-clock-file", "-test-clock-file":
		case "--brokers", "-brokers", "-n":
			if o.cluster == 0 {
				return o, fmt.Errorf("%w: option %s is for strait cluster", errUsage, name)
			}
		default:
			if strings.HasPrefix(arg, "-") {
				return o, fmt.Errorf("%w: unknown option %s", errUsage, arg)
			}
			if o.configFile != "" {
				return o, fmt.Errorf("%w: Found non argument parameters: %s", errUsage, arg)
			}
			o.configFile = arg
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return o, fmt.Errorf("%w: option %s requires an argument", errUsage, name)
			}
			i++
			value = args[i]
		}
		switch strings.TrimLeft(name, "-") {
		case "config":
			if o.configFile != "" {
				return o, fmt.Errorf("%w: the config file is given twice (%s and %s)", errUsage, o.configFile, value)
			}
			o.configFile = value
		case "override":
			o.overrides = append(o.overrides, value)
		case "log-level":
			o.logLevel = value
		case "log-format":
			o.logFormat = value
		case "ready-file":
			o.readyFile = value
		case "test-clock-file":
			o.testClockFile = value
		case "brokers", "n":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > maxClusterSize {
				return o, fmt.Errorf("%w: %s wants a number of brokers from 1 to %d, not %q", errUsage, name, maxClusterSize, value)
			}
			o.cluster = n
		}
	}
	return o, nil
}

// parseLevel reads debug, info, warn(ing) or error, any case.
func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if strings.EqualFold(s, "warning") {
		s = "warn"
	}
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// run is main without the process: it returns the exit code.
func run(args, environ []string, stderr io.Writer, signals <-chan os.Signal) int {
	opts, err := parseArgs(args)
	if opts.help {
		fmt.Fprint(stderr, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "strait: %v\n%s", err, usage)
		return 1
	}

	levelName := opts.logLevel
	if levelName == "" {
		levelName = envValue(environ, "STRAIT_LOG_LEVEL")
	}
	level := slog.LevelInfo
	if levelName != "" {
		if level, err = parseLevel(levelName); err != nil {
			fmt.Fprintf(stderr, "strait: invalid log level %q: want debug, info, warn or error\n", levelName)
			return 1
		}
	}
	formatName := opts.logFormat
	if formatName == "" {
		formatName = envValue(environ, "STRAIT_LOG_FORMAT")
	}
	// The level is a LevelVar the broker owns from here on: kafka-configs
	// --entity-type broker-loggers changes it at run time.
	levelVar := new(slog.LevelVar)
	levelVar.Set(level)
	hopts := &slog.HandlerOptions{Level: levelVar}
	var handler slog.Handler
	switch formatName {
	case "", "text":
		handler = slog.NewTextHandler(stderr, hopts)
	case "json":
		handler = slog.NewJSONHandler(stderr, hopts)
	default:
		fmt.Fprintf(stderr, "strait: invalid log format %q: want text or json\n", formatName)
		return 1
	}
	logger := slog.New(handler)
	slog.SetDefault(logger)
	// Signals are taken from here on (main's Notify ran first): the line
	// tells a test that a signal now stops strait cleanly.
	logger.Debug("strait starting", "pid", os.Getpid())

	props, err := config.Load(opts.configFile, environ, opts.overrides)
	if err != nil {
		logger.Error("cannot read configuration", "err", err)
		return 1
	}
	brokers := max(1, opts.cluster)
	if opts.testDefaults {
		applyTestDefaults(props, brokers)
	}

	var plans []map[string]string
	if opts.ephemeral || opts.cluster > 0 {
		tmp, err := os.MkdirTemp("", "strait-")
		if err != nil {
			logger.Error("cannot create the temporary data directory", "err", err)
			return 1
		}
		defer func() {
			if err := os.RemoveAll(tmp); err != nil {
				logger.Warn("cannot remove the temporary data directory", "dir", tmp, "err", err)
			}
		}()
		logger.Info("temporary data directory, removed at exit", "dir", tmp)
		if opts.cluster > 0 {
			if plans, err = clusterProps(props, opts.cluster, tmp); err != nil {
				logger.Error("cannot plan the cluster", "err", err)
				return 1
			}
		} else {
			ephemeralProps(props, tmp)
		}
	}
	if plans == nil {
		plans = []map[string]string{props}
	}

	var clk clock.Clock
	if opts.testClockFile != "" {
		tc := newTestClock(opts.testClockFile, logger)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); tc.run(stop) }()
		defer func() { close(stop); <-done }()
		clk = tc.clk
	}

	var nodes []node
	for _, p := range plans {
		cfg, warnings, err := config.Parse(p)
		if len(nodes) == 0 { // the same warnings for every broker: once
			for _, w := range warnings {
				logger.Warn(w)
			}
		}
		if err != nil {
			if ce, ok := errors.AsType[*config.ConfigError](err); ok {
				logger.Error("invalid configuration", "key", ce.Key, "err", err)
			} else {
				logger.Error("invalid configuration", "err", err)
			}
			return 1
		}
		cfg.Logger = logger
		cfg.LogLevel = levelVar
		cfg.Clock = clk
		if opts.cluster > 0 {
			cfg.Logger = logger.With("node", cfg.NodeID) // whose line it is
		}
		srv, err := newServer(cfg)
		if err != nil {
			if ce, ok := errors.AsType[*config.ConfigError](err); ok {
				logger.Error("invalid configuration", "key", ce.Key, "err", err)
			} else {
				logger.Error("cannot create broker", "err", err)
			}
			return 1
		}
		nodes = append(nodes, node{srv: srv, cfg: cfg})
	}

	return serve(logger, nodes, opts, signals)
}

// envValue is os.Getenv over an environ slice.
func envValue(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
