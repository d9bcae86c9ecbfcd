package main

import (
	"fmt"
	"net"
	"syscall"
)

// setCongestion makes c use the TCP congestion control algorithm name
// (TCP_CONGESTION); "" leaves the system's default.
func setCongestion(c *net.TCPConn, name string) error {
	if name == "" {
		return nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("-congestion %s: %w", name, err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, name)
	}); err != nil {
		return fmt.Errorf("-congestion %s: %w", name, err)
	}
	if serr != nil {
		return fmt.Errorf("-congestion %s: setting TCP_CONGESTION on %v: %w (net.ipv4.tcp_available_congestion_control lists what the kernel has; without CAP_NET_ADMIN only tcp_allowed_congestion_control)", name, c.LocalAddr(), serr)
	}
	return nil
}
