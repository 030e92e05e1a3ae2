// Command strait-pprof runs a Strait broker in-process under runtime/pprof,
// so its CPU and allocation profiles can be taken under a benchmark's load
// without an HTTP pprof endpoint in the broker itself. The load comes from
// another process (strait-bench run), so the profile holds the broker only.
//
//	strait-pprof -addr 127.0.0.1:9092 -dir /tmp/strait-pprof -cpuprofile cpu.pprof -memprofile mem.pprof
//
// It prints "ready <addr>" once the broker serves. SIGUSR1 starts the CPU
// profile, SIGUSR2 stops it and writes both profiles (the allocation profile
// covers everything since start), as does SIGINT/SIGTERM, which also shut
// the broker down; -set key=value adds broker config (strait.http.listener
// serves /metrics, printed as "http <addr>"); -trace adds an execution trace over the same span; without SIGUSR1 the CPU profile runs from the start.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listener address")
	dir := flag.String("dir", "", "log.dirs (required; use a fresh directory)")
	cpuFile := flag.String("cpuprofile", "cpu.pprof", "CPU profile output")
	memFile := flag.String("memprofile", "mem.pprof", "allocation profile output")
	traceFile := flag.String("trace", "", "also write a runtime/trace execution trace over the same span as the CPU profile")
	waitForSignal := flag.Bool("wait", true, "start the CPU profile on SIGUSR1 rather than at once")
	var sets setFlag
	flag.Var(&sets, "set", "a broker config key=value (repeatable), e.g. strait.http.listener=127.0.0.1:0 to serve /metrics")
	flag.Parse()
	if *dir == "" {
		fail("-dir is required")
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	props := map[string]string{"listeners": "PLAINTEXT://" + *addr, "log.dirs": *dir}
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fail("-set %q: want key=value", kv)
		}
		props[k] = v
	}
	cfg, warnings, err := config.Parse(props)
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, w)
	}
	if err != nil {
		fail("%v", err)
	}
	srv, err := broker.New(cfg)
	if err != nil {
		fail("%v", err)
	}
	runtime.MemProfileRate = 64 << 10 // sample allocations every 64 KiB, finer than the default 512 KiB
	if err := srv.Start(); err != nil {
		fail("%v", err)
	}
	if a := srv.HTTPAddr(); a != "" {
		fmt.Printf("http %s\n", a) // before ready: a script reading ready has it
	}
	fmt.Printf("ready %s\n", srv.Addr())

	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGINT, syscall.SIGTERM)
	var cpu, tr *os.File
	startCPU := func() {
		if cpu != nil {
			return
		}
		if cpu, err = os.Create(*cpuFile); err != nil {
			fail("%v", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			fail("%v", err)
		}
		if *traceFile != "" {
			if tr, err = os.Create(*traceFile); err != nil {
				fail("%v", err)
			}
			if err := trace.Start(tr); err != nil {
				fail("%v", err)
			}
		}
	}
	stopAndWrite := func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
			cpu = nil
			if tr != nil {
				trace.Stop()
				tr.Close()
				tr = nil
			}
		}
		f, err := os.Create(*memFile)
		if err != nil {
			fail("%v", err)
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			fail("%v", err)
		}
		f.Close()
		fmt.Fprintf(os.Stderr, "wrote %s and %s\n", *cpuFile, *memFile)
	}
	if !*waitForSignal {
		startCPU()
	}
	for {
		select {
		case s := <-sig:
			switch s {
			case syscall.SIGUSR1:
				startCPU()
			case syscall.SIGUSR2:
				stopAndWrite()
			default:
				if cpu != nil {
					stopAndWrite()
				}
				_ = srv.Close()
				return
			}
		case err := <-srv.Err():
			fail("broker: %v", err)
		}
	}
}

// setFlag collects repeated -set key=value.
type setFlag []string

func (s *setFlag) String() string     { return strings.Join(*s, ",") }
func (s *setFlag) Set(v string) error { *s = append(*s, v); return nil }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "strait-pprof: "+format+"\n", args...)
	os.Exit(1)
}
