//go:build unix

package main

import (
	"os"
	"syscall"
)

// childSysProcAttr puts each locality in a process group of its own, so
// that a signal the terminal sends to the launcher's group (Ctrl-C, Ctrl-\)
// reaches the localities once, forwarded by the launcher, and not twice.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalLocality sends sig to the process group of a locality, as a
// terminal does to its foreground group: processes the locality started,
// which may hold its output pipes, get it too.
func signalLocality(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	return syscall.Kill(-p.Pid, s)
}
