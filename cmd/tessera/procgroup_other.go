//go:build !unix

package main

import (
	"os"
	"syscall"
)

// childSysProcAttr leaves the children's process attributes at their
// defaults where there are no process groups.
func childSysProcAttr() *syscall.SysProcAttr {
	return nil
}

// signalLocality sends sig to the locality's process.
func signalLocality(p *os.Process, sig os.Signal) error {
	return p.Signal(sig)
}
