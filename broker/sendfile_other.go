//go:build !linux

package broker

import "net"

// unpaceLoopback is Linux-only (TCP_CONGESTION); elsewhere connections keep
// the system's congestion control.
func unpaceLoopback(net.Conn) {}
