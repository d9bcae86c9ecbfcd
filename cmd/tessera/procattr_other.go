//go:build !unix

package main

import "syscall"

// childSysProcAttr leaves the children's process attributes at their
// defaults where there are no process groups.
func childSysProcAttr() *syscall.SysProcAttr {
	return nil
}
