//go:build !unix

package parcel

import (
	"net"
	"sync/atomic"
	"time"
)

// pollConn is not available here: reads block (TCPConfig.PollFor is
// ignored).
type pollConn struct{}

func newPollConn(net.Conn, time.Duration, *atomic.Int32) *pollConn { return nil }

func (*pollConn) read(conn net.Conn, b []byte) (int, error) { return conn.Read(b) }
