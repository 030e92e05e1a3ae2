package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfiling writes a CPU profile to $STRAIT_CPUPROFILE for the life of
// the process, and a heap profile to $STRAIT_MEMPROFILE when it exits: the
// way to see where the broker spends its time under a real client's load
// (BENCHMARKS.md). The returned function finishes both.
func startProfiling() func() {
	var stops []func()
	if path := os.Getenv("STRAIT_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "strait: STRAIT_CPUPROFILE: %v\n", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if path := os.Getenv("STRAIT_MEMPROFILE"); path != "" {
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err == nil {
				err = pprof.WriteHeapProfile(f)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "strait: STRAIT_MEMPROFILE: %v\n", err)
			}
		})
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}
