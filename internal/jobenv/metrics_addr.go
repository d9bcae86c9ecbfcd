package jobenv

import (
	"fmt"
	"net"
	"strconv"
)

// MetricsListenAddr returns the address locality serves /metrics on in a
// job whose metrics address (runtime.Config.MetricsAddr, `tessera run
// --metrics-addr`) is addr: port+locality, so that the localities of one
// host do not clash, or port 0 (the kernel's choice) for every locality
// when port is 0.
func MetricsListenAddr(addr string, locality uint32) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", fmt.Errorf("port %q is not a number", port)
	}
	if p == 0 {
		return addr, nil
	}
	if p+uint64(locality) > 65535 {
		return "", fmt.Errorf("port %d + locality %d is beyond 65535", p, locality)
	}
	return net.JoinHostPort(host, strconv.FormatUint(p+uint64(locality), 10)), nil
}
