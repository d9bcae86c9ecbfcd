//go:build unix

package main

import "syscall"

// childSysProcAttr puts each locality in a process group of its own, so
// that a signal the terminal sends to the launcher's group (Ctrl-C, Ctrl-\)
// reaches the localities once, forwarded by the launcher, and not twice.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
