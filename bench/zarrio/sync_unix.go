//go:build unix

package main

import "syscall"

// syncDisks writes every dirty page back (sync(2)).
func syncDisks() { syscall.Sync() }
