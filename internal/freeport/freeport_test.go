package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPortsAreFreeDistinctAndBelowTheEphemeralRange: the ports can be bound,
// differ, and lie where the kernel hands out no :0 port.
func TestPortsAreFreeDistinctAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := Ports(5)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 5 {
		t.Fatalf("got %d ports, want 5", len(ports))
	}
	low := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lowest || p >= low {
			t.Errorf("port %d outside [%d, %d)", p, lowest, low)
		}
		if seen[p] {
			t.Errorf("port %d twice", p)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		ln.Close()
	}
}

// TestPortsSkipsAPortInUse: a port held by a listener is passed over, even
// where the search starts at it.
func TestPortsSkipsAPortInUse(t *testing.T) {
	held, err := Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	// Not as handed out: only the listener may keep it from being returned.
	handedOut.Lock()
	delete(handedOut.ports, held[0])
	handedOut.Unlock()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held[0])))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ports, err := portsFrom(1, held[0], ephemeralLow())
	if err != nil {
		t.Fatal(err)
	}
	if ports[0] == held[0] {
		t.Fatalf("port %d is in use but was returned", held[0])
	}
}

// TestPortsHandsOutAPortOnce: a port returned earlier and not bound yet is
// not returned again, even where the search starts at it (the harnesses
// ask for each broker's ports one call at a time before starting any).
func TestPortsHandsOutAPortOnce(t *testing.T) {
	first, err := Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := portsFrom(1, first[0], ephemeralLow())
		if err != nil {
			t.Fatal(err)
		}
		if again[0] == first[0] {
			t.Fatalf("port %d handed out twice", first[0])
		}
	}
}
