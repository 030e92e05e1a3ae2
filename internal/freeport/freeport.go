// Package freeport picks loopback TCP ports for tests that must name a port
// before anything listens on it (an etcd member's peer URL, a broker that
// keeps its port across restarts).
//
// A port taken from a 127.0.0.1:0 listener and closed lies in the kernel's
// ephemeral range: until the test binds it again, any other :0 listener or
// outgoing connection on the machine may be handed the same port. These
// ports come from below that range instead, where the kernel hands out
// nothing by itself, so only another explicit bind can take them. A port
// is handed out once per process: two calls made before either caller
// binds would otherwise both find the same port free.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the first port considered; below it lie well-known services.
const lowest = 10000

// Ports returns n distinct ports of 127.0.0.1 that were free a moment ago,
// all below the ephemeral range, starting at a random place so that test
// processes running side by side rarely meet.
func Ports(n int) ([]int, error) {
	top := ephemeralLow()
	if top-lowest < n {
		return nil, errors.New("freeport: no ports below the ephemeral range")
	}
	return portsFrom(n, lowest+rand.IntN(top-lowest), top)
}

// handedOut is every port Ports returned in this process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// portsFrom is Ports from first on, wrapping around below top.
func portsFrom(n, first, top int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	span := top - lowest
	start := first - lowest
	var out []int
	for i := 0; i < span && len(out) < n; i++ {
		port := lowest + (start+i)%span
		if handedOut.ports[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		ln.Close()
		out = append(out, port)
		handedOut.ports[port] = true
	}
	if len(out) < n {
		return nil, errors.New("freeport: not enough free ports below the ephemeral range")
	}
	return out, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// net.ipv4.ip_local_port_range; 32768, its default, elsewhere).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lowest {
				return n
			}
		}
	}
	return 32768
}
