//go:build !unix

package parcel

import (
	"net"
	"time"
)

// pollConn is not available here: reads block (TCPConfig.PollFor is
// ignored).
type pollConn struct{}

func newPollConn(net.Conn, time.Duration) *pollConn { return nil }

func (*pollConn) read(conn net.Conn, b []byte) (int, error) { return conn.Read(b) }
