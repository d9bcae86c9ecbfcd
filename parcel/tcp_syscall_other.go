//go:build unix && !linux

package parcel

import "syscall"

// sysRead and sysWrite always go through Go's scheduler here: the raw
// system calls of the tcp parcelport (TCPConfig.RawReads, small writes)
// are Linux's.
func sysRead(fd int, b []byte, _ bool) (int, error) { return syscall.Read(fd, b) }
func sysWrite(fd int, b []byte) (int, error)        { return syscall.Write(fd, b) }
