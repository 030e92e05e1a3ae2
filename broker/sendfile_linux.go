package broker

import (
	"net"
	"strings"
	"syscall"
	"unsafe"
)

// unpaceLoopback takes a loopback TCP connection off BBR, the one congestion
// control that paces (it asks the kernel to space a socket's packets at its
// estimate of the path's bandwidth). Over loopback there is no path to
// estimate: the estimate follows how fast the receiver happens to read, and
// pacing to it held Fetch responses to a consumer on the same host to a
// fraction of what the socket takes (on the 2-core benchmark machine, whose
// default is BBR: 6 MB responses sent with sendfile at about 1 GB/s paced,
// 2.4 to 2.9 GB/s with CUBIC or Reno). CUBIC, or Reno (always allowed
// without privileges), sends as fast as the receiver's window allows,
// which on loopback is all there is to it. Any other congestion control,
// and every connection that is not loopback, keeps what the system chose.
func unpaceLoopback(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	ra, ok := tc.RemoteAddr().(*net.TCPAddr)
	if !ok || !ra.IP.IsLoopback() {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		var name [16]byte // TCP_CA_NAME_MAX
		n := uint32(len(name))
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_CONGESTION,
			uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(&n)), 0)
		if errno != 0 || n > uint32(len(name)) || !strings.HasPrefix(string(name[:n]), "bbr") {
			return
		}
		for _, cc := range [...]string{"cubic", "reno"} {
			if syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, cc) == nil {
				return
			}
		}
	})
}
