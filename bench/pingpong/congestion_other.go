//go:build !linux

package main

import (
	"fmt"
	"net"
)

// setCongestion refuses any name but "": choosing the congestion control
// of a connection is a Linux socket option.
func setCongestion(c *net.TCPConn, name string) error {
	if name == "" {
		return nil
	}
	return fmt.Errorf("-congestion %s: choosing a connection's congestion control needs Linux (TCP_CONGESTION)", name)
}
