//go:build !unix

package parcel

import (
	"errors"
	"net"
	"syscall"
)

// rawConn gives no raw access here, so readLoop reads through a
// FrameReader and never calls readRaw.
func rawConn(net.Conn) syscall.RawConn { return nil }

// readRaw is readRaw of the systems with raw descriptor access; here it
// only says that there is none.
func readRaw(syscall.RawConn, *tcpPeer, *frameDecoder, *spinner, func(*Parcel, int64)) error {
	return errors.New("parcel: no raw descriptor access on this system")
}

// rawWrite is a raw write's state where there are raw writes; here there
// are none.
type rawWrite struct{}

// write writes b with conn.Write: there is no raw descriptor access here.
func (p *tcpPeer) write(b []byte) (int, error) { return p.conn.Write(b) }
