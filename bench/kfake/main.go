// Command kfake-bench serves franz-go's kfake, the in-memory fake Kafka that
// test suites use, as a process of its own, so strait-bench compare can start,
// measure and stop it like the real brokers (and its memory is its own).
//
//	kfake-bench [-addr 127.0.0.1:PORT]   serve until SIGINT or SIGTERM
//	kfake-bench -version                 print kfake's module version
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

const kfakeModule = "github.com/twmb/franz-go/pkg/kfake"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	version := flag.Bool("version", false, "print kfake's version and exit")
	flag.Parse()
	if *version {
		fmt.Println(moduleVersion(kfakeModule))
		return
	}
	host, portText, err := net.SplitHostPort(*addr)
	if err != nil || (host != "127.0.0.1" && host != "localhost") {
		fail("-addr %q: want 127.0.0.1:PORT (kfake listens on loopback only)", *addr)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		fail("-addr %q: %v", *addr, err)
	}
	// One broker, like the single-node Strait and Kafka it is measured beside.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		fail("%v", err)
	}
	fmt.Fprintf(os.Stderr, "kfake %s listening on %v\n", moduleVersion(kfakeModule), c.ListenAddrs())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	c.Close()
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kfake-bench: "+format+"\n", args...)
	os.Exit(1)
}
