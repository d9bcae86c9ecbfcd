package parcel

import "syscall"

// shutdownWrite ends the sending side of the socket fd (the nbio port's
// goodbye: nbio's Conn has no CloseWrite).
func shutdownWrite(fd uintptr) { _ = syscall.Shutdown(syscall.Handle(fd), syscall.SHUT_WR) }
