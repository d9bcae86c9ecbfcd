package sockopt

import (
	"fmt"
	"syscall"
)

// SetCongestion sets the TCP congestion control of the socket of c (a
// connection, or a listener whose accepted connections then inherit it)
// to name (TCP_CONGESTION).
func SetCongestion(c any, name string) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("TCP congestion control %q: %T has no socket", name, c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("TCP congestion control %q: %w", name, err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, name)
	}); err != nil {
		return fmt.Errorf("TCP congestion control %q: %w", name, err)
	}
	if serr != nil {
		return fmt.Errorf("TCP congestion control %q: %w (net.ipv4.tcp_available_congestion_control lists what the kernel has; without CAP_NET_ADMIN only tcp_allowed_congestion_control)", name, serr)
	}
	return nil
}
