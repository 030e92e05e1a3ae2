// Command strait runs a Strait broker.
//
//	strait [--config server.properties] [--override key=value]... [--log-level debug|info|warn|error]
//	strait server.properties [--override key=value]...      (kafka-server-start.sh's form)
//
// Properties come from the file, then KAFKA_* environment variables (the Apache
// Kafka Docker image's mapping), then --override, later ones winning. The log
// level is --log-level, else STRAIT_LOG_LEVEL, else info; logs are slog text on
// stderr. SIGINT or SIGTERM shuts the broker down cleanly (exit 0); an invalid
// configuration or a fatal broker error exits 1.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
)

const usage = `USAGE: strait [--config server.properties] [--override property=value]* [--log-level LEVEL]
       strait server.properties [--override property=value]*
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
	configFile string
	overrides  []string
	logLevel   string
	help       bool
}

// errUsage marks a command-line mistake, answered with the usage text.
var errUsage = errors.New("usage")

// parseArgs accepts --name value and --name=value, a single positional config
// file (Kafka's form), and -h/--help.
func parseArgs(args []string) (options, error) {
	var o options
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		switch name {
		case "-h", "-help", "--help":
			o.help = true
			continue
		case "--config", "-config", "--override", "-override", "--log-level", "-log-level":
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
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	props, err := config.Load(opts.configFile, environ, opts.overrides)
	if err != nil {
		logger.Error("cannot read configuration", "err", err)
		return 1
	}
	cfg, warnings, err := config.Parse(props)
	for _, w := range warnings {
		logger.Warn(w)
	}
	if err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			logger.Error("invalid configuration", "key", ce.Key, "err", err)
		} else {
			logger.Error("invalid configuration", "err", err)
		}
		return 1
	}
	cfg.Logger = logger

	srv, err := newServer(cfg)
	if err != nil {
		if ce, ok := errors.AsType[*config.ConfigError](err); ok {
			logger.Error("invalid configuration", "key", ce.Key, "err", err)
		} else {
			logger.Error("cannot create broker", "err", err)
		}
		return 1
	}

	// Start blocks until the broker serves; a signal meanwhile shuts it down
	// as soon as Start returns, and a second signal gives up at once.
	started := make(chan error, 1)
	go func() { started <- srv.Start() }()
	var stopping bool
	for waiting := true; waiting; {
		select {
		case err := <-started:
			if err != nil {
				logger.Error("broker failed to start", "err", err)
				return 1
			}
			waiting = false
		case sig := <-signals:
			if stopping {
				logger.Error("second signal during startup, exiting", "signal", sig.String())
				return 1
			}
			logger.Info("signal during startup, stopping once started", "signal", sig.String())
			stopping = true
		}
	}
	if stopping {
		return shutdown(logger, srv)
	}

	select {
	case <-srv.Ready():
	case err := <-srv.Err():
		return failed(logger, srv, err)
	}
	addrs := make([]string, 0, len(srv.Addrs()))
	for _, a := range srv.Addrs() {
		addrs = append(addrs, a.String())
	}
	logger.Info("strait ready", "addr", strings.Join(addrs, ","), "node.id", cfg.NodeID, "cluster.id", srv.ClusterID())

	select {
	case sig := <-signals:
		logger.Info("shutting down", "signal", sig.String())
		return shutdown(logger, srv)
	case err := <-srv.Err():
		return failed(logger, srv, err)
	}
}

// failed stops a broker that reported a fatal error: exit code 1.
func failed(logger *slog.Logger, srv server, err error) int {
	logger.Error("broker failed", "err", err)
	if err := srv.Close(); err != nil {
		logger.Error("unclean shutdown", "err", err)
	}
	return 1
}

func shutdown(logger *slog.Logger, srv server) int {
	if err := srv.Close(); err != nil {
		logger.Error("unclean shutdown", "err", err)
		return 1
	}
	return 0
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
