//go:build !unix

package parcel

import (
	"net"
	"syscall"
)

// rawConn gives no raw access here: readLoop reads through a FrameReader.
func rawConn(net.Conn) syscall.RawConn { return nil }

func readRaw(syscall.RawConn, *deadlineReader, *frameDecoder, *spinner, func(*Parcel, int64)) error {
	panic("parcel: readRaw without raw access")
}
