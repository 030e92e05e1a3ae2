package main

// Starting, serving and stopping the brokers of one strait process (one, or
// strait cluster's N), and the ready file.

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strait/strait/config"
)

// node is one broker of this process.
type node struct {
	srv server
	cfg config.Config
}

// startupStopGrace is how long a signal during start-up waits for the
// start to finish, so that what started is closed cleanly, before strait
// exits without it.
var startupStopGrace = 3 * time.Second

// serve starts the nodes, reports them ready, and serves until a signal
// (exit 0 after a clean close) or a fatal error of any broker (exit 1).
func serve(logger *slog.Logger, nodes []node, opts options, signals <-chan os.Signal) int {
	started := make(chan error, 1)
	go func() { started <- startAll(nodes) }()
	select {
	case err := <-started:
		if err != nil {
			logger.Error("broker failed to start", "err", err)
			closeAll(logger, nodes)
			return 1
		}
	case sig := <-signals:
		logger.Info("signal during start-up, stopping", "signal", sig.String())
		timer := time.NewTimer(startupStopGrace)
		defer timer.Stop()
		select {
		case err := <-started:
			if err != nil {
				logger.Error("broker failed to start", "err", err)
				closeAll(logger, nodes)
				return 1
			}
			return shutdown(logger, nodes)
		case <-timer.C:
			logger.Warn("start-up did not end in time after the signal; exiting without waiting for it", "waited", startupStopGrace)
			return 0
		case sig := <-signals:
			logger.Error("second signal during start-up, exiting", "signal", sig.String())
			return 1
		}
	}

	errc := make(chan error, len(nodes))
	for _, n := range nodes {
		// The brokers started; Ready is closed, or Err says why not.
		select {
		case <-n.srv.Ready():
		case err := <-n.srv.Err():
			return failed(logger, nodes, err)
		}
		go func() {
			if err, ok := <-n.srv.Err(); ok {
				errc <- err
			}
		}()
	}

	var servers []string
	for _, n := range nodes {
		addrs := make([]string, 0, len(n.srv.Addrs()))
		for _, a := range n.srv.Addrs() {
			addrs = append(addrs, a.String())
		}
		// The log line testcontainers' Kafka modules wait for
		// (".*Transitioning from RECOVERY to RUNNING.*"), as Kafka's
		// BrokerLifecycleManager logs it once the broker is unfenced.
		logger.Info("Transitioning from RECOVERY to RUNNING", "node.id", n.cfg.NodeID)
		logger.Info("strait ready", "addr", strings.Join(addrs, ","), "node.id", n.cfg.NodeID, "cluster.id", n.srv.ClusterID())
		if len(addrs) > 0 {
			servers = append(servers, connectable(n.srv.Addrs()[0]))
		}
	}
	if opts.cluster > 0 {
		logger.Info("strait cluster ready", "brokers", len(nodes), "bootstrap.servers", strings.Join(servers, ","))
	}
	if opts.readyFile != "" {
		if err := writeReadyFile(opts.readyFile, nodes); err != nil {
			logger.Error("cannot write the ready file", "file", opts.readyFile, "err", err)
			closeAll(logger, nodes)
			return 1
		}
		defer os.Remove(opts.readyFile)
	}

	select {
	case sig := <-signals:
		logger.Info("shutting down", "signal", sig.String())
		return shutdown(logger, nodes)
	case err := <-errc:
		return failed(logger, nodes, err)
	}
}

// startAll starts the nodes together (the etcd members of a cluster need
// a majority started to elect a leader) and returns once all have, or
// joins the errors of those that failed (each closed itself).
func startAll(nodes []node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := n.srv.Start(); err != nil {
				if len(nodes) > 1 {
					err = fmt.Errorf("node.id %d: %w", n.cfg.NodeID, err)
				}
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// failed stops the brokers after a fatal error of one: exit code 1.
func failed(logger *slog.Logger, nodes []node, err error) int {
	logger.Error("broker failed", "err", err)
	closeAll(logger, nodes)
	return 1
}

// shutdown closes the brokers: exit 0, or 1 if one did not close cleanly.
func shutdown(logger *slog.Logger, nodes []node) int {
	if !closeAll(logger, nodes) {
		return 1
	}
	return 0
}

// closeAll closes the brokers concurrently and reports whether every one
// closed cleanly.
func closeAll(logger *slog.Logger, nodes []node) bool {
	ok := make([]bool, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := n.srv.Close(); err != nil {
				logger.Error("unclean shutdown", "node.id", n.cfg.NodeID, "err", err)
				return
			}
			ok[i] = true
		})
	}
	wg.Wait()
	for _, b := range ok {
		if !b {
			return false
		}
	}
	return true
}

// connectable is addr as a client can dial it: an unspecified bind address
// (0.0.0.0, ::) is reached on the loopback.
func connectable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	host := tcp.IP.String()
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// readyFileContent is one LISTENER://host:port line per listener of each
// node, in order.
func readyFileContent(nodes []node) string {
	var b strings.Builder
	for _, n := range nodes {
		for i, a := range n.srv.Addrs() {
			name := "PLAINTEXT"
			if i < len(n.cfg.Network.Listeners) {
				name = n.cfg.Network.Listeners[i].Name
			}
			b.WriteString(name + "://" + connectable(a) + "\n")
		}
	}
	return b.String()
}

// writeReadyFile writes the ready file whole: a temporary file in the same
// directory renamed over path, so a reader sees nothing or all of it.
func writeReadyFile(path string, nodes []node) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(readyFileContent(nodes))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
