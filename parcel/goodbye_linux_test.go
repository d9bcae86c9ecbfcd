package parcel

import (
	"syscall"
	"testing"
	"time"
)

// A peer that closes says goodbye and ends its stream right after; both may
// come in one segment, and then one wake-up of the reader brings both. The
// reader reads on past the goodbye to the end and lets the connection go
// then — not when its heartbeat timeout passes (a minute here). The peer
// is a raw connection that corks the goodbye so that its end rides along.
func TestPortSeesGoodbyeAndEndTogether(t *testing.T) {
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		rec := newRecorder()
		port, _ := sp.start(t, 0, rec, portOpts{hbTimeout: time.Minute})
		raw := rawPeerAt(t, port.Addr(), 1, 0)
		waitFor(t, "the connection", func() bool { return peerStateOf(port, 1) != nil })
		st := peerStateOf(port, 1)
		rc, err := raw.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1) })
		if _, err := raw.Write(appendFrame(t, nil, Header{Kind: KindHeartbeat, Source: 1, Dest: 0, Action: byeVerb}, nil)); err != nil {
			t.Fatal(err)
		}
		if err := raw.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-st.down:
		case <-time.After(20 * time.Second):
			t.Fatal("20s after the peer's goodbye and end of stream, its connection is still up")
		}
		if d := rec.peerDowns(); len(d) != 0 {
			t.Errorf("a peer that said goodbye was reported down: %v", d[0].err)
		}
	})
}
