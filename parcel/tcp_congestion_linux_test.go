package parcel

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// congestionOf returns the congestion control of c's socket.
func congestionOf(t *testing.T, c net.Conn) string {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var gerr error
	raw.Control(func(fd uintptr) {
		b := make([]byte, 16)
		l := uint32(len(b))
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)), 0)
		if errno != 0 {
			gerr = errno
			return
		}
		name = strings.TrimRight(string(b[:l]), "\x00")
	})
	if gerr != nil {
		t.Fatal(gerr)
	}
	return name
}

// A port with Congestion set uses it on the connections it accepts and on
// those it dials; a name the system does not know is refused, naming it.
func TestTCPCongestion(t *testing.T) {
	recs := []*recorder{newRecorder(), newRecorder()}
	ports := []*TCP{
		newTCPPort(t, 0, recs[0], func(c *TCPConfig) { c.Congestion = "reno" }),
		newTCPPort(t, 1, recs[1], func(c *TCPConfig) { c.Congestion = "reno" }),
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	if err := ports[1].Connect(ctx, 0, ports[0].Addr()); err != nil {
		t.Fatal(err)
	}
	for i, p := range ports {
		peer := uint32(1 - i)
		waitFor(t, "the peer", func() bool { _, err := p.peer(peer); return err == nil })
		pp, _ := p.peer(peer)
		if got := congestionOf(t, pp.conn); got != "reno" {
			t.Errorf("locality %d's connection uses %q, want reno", i, got)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = NewTCP(TCPConfig{PortConfig: PortConfig{Listener: ln, Secret: testSecret, Handler: newRecorder()}, Congestion: "no-such-control"})
	if err == nil || !strings.Contains(err.Error(), `"no-such-control"`) {
		t.Fatalf("NewTCP with an unknown congestion control: %v, want an error naming it", err)
	}
}
