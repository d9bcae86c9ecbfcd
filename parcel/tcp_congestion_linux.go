package parcel

import (
	"fmt"
	"syscall"
)

// setCongestion sets the TCP congestion control of the socket of c (a
// connection, or a listener whose connections then inherit it) to name.
func setCongestion(c any, name string) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("parcel: TCP congestion control %q: %T has no socket", name, c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("parcel: TCP congestion control %q: %w", name, err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, name)
	}); err != nil {
		return fmt.Errorf("parcel: TCP congestion control %q: %w", name, err)
	}
	if serr != nil {
		return fmt.Errorf("parcel: TCP congestion control %q: %w (see /proc/sys/net/ipv4/tcp_allowed_congestion_control)", name, serr)
	}
	return nil
}
