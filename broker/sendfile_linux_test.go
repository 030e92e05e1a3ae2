package broker

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func congestionControl(t *testing.T, c *net.TCPConn) string {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var name [16]byte
	n := uint32(len(name))
	var errno syscall.Errno
	rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_CONGESTION,
			uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(&n)), 0)
	})
	if errno != 0 {
		t.Fatalf("getsockopt TCP_CONGESTION: %v", errno)
	}
	return strings.TrimRight(string(name[:n]), "\x00")
}

func setCongestionControl(c *net.TCPConn, cc string) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, cc)
	})
	return serr
}

// loopbackPair is an accepted loopback TCP connection (the broker's side)
// and its client.
func loopbackPair(t *testing.T) (server, client *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cl, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc.(*net.TCPConn), cl.(*net.TCPConn)
}

// TestUnpaceLoopback: a loopback connection on BBR moves to CUBIC or Reno;
// one on another congestion control keeps it.
func TestUnpaceLoopback(t *testing.T) {
	sc, _ := loopbackPair(t)
	if err := setCongestionControl(sc, "bbr"); err != nil {
		t.Skipf("bbr not available here: %v", err)
	}
	unpaceLoopback(sc)
	if got := congestionControl(t, sc); got != "cubic" && got != "reno" {
		t.Fatalf("congestion control after unpaceLoopback = %q, want cubic or reno", got)
	}

	sc2, _ := loopbackPair(t)
	if err := setCongestionControl(sc2, "reno"); err != nil {
		t.Skipf("reno not available here: %v", err)
	}
	unpaceLoopback(sc2)
	if got := congestionControl(t, sc2); got != "reno" {
		t.Fatalf("congestion control of a reno connection after unpaceLoopback = %q, want it kept", got)
	}
	unpaceLoopback(nil) // not a TCP connection: nothing to do
}
