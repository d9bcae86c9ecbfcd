package parcel

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// The TCP parcelport with polling readers (TCPConfig.PollFor) behaves like
// the blocking one: the shared parcelport suite, and the socket suite
// (heartbeats, silent peers, oversized and corrupt frames, Close) through
// the "TCP-poll" entry of socketPorts.

// mkTCPPoll is mkTCP with readers that poll for pollFor before blocking.
func mkTCPPoll(pollFor time.Duration) func(t *testing.T, n int, handlers []Handler) []Parcelport {
	return func(t *testing.T, n int, handlers []Handler) []Parcelport {
		t.Helper()
		log := testLogger(t)
		ports := make([]Parcelport, n)
		for i := range n {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewTCP(TCPConfig{Locality: uint32(i), Listener: ln, Secret: testSecret, Handler: handlers[i], Logger: log, PollFor: pollFor})
			if err != nil {
				t.Fatal(err)
			}
			ports[i] = p
		}
		t.Cleanup(func() { closeAll(t, ports) })
		connectAll(t, ports)
		return ports
	}
}

// A long window: readers poll for the whole test.
func TestTCPPollParcelport(t *testing.T) { testParcelport(t, mkTCPPoll(time.Minute)) }

// A window shorter than the gaps between parcels: readers keep going from
// polling to blocking and back.
func TestTCPPollBlockParcelport(t *testing.T) { testParcelport(t, mkTCPPoll(50*time.Microsecond)) }

// pollConn reads what arrives while it polls and after it has fallen back
// to blocking, returns the deadline's timeout error, and EOF at the end.
func TestPollConnRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer server.Close()
	var polling atomic.Int32
	pc := newPollConn(server, 5*time.Millisecond, &polling)
	if pc == nil {
		t.Skip("no raw descriptor on this platform: reads block")
	}
	buf := make([]byte, 16)
	for _, wait := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond} {
		go func() {
			time.Sleep(wait)
			client.Write([]byte("ping"))
		}()
		n, err := pc.read(server, buf)
		if err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("after %v: read %q, %v; want \"ping\"", wait, buf[:n], err)
		}
		if c := polling.Load(); c != 0 {
			t.Fatalf("after a read, %d readers count as polling", c)
		}
	}
	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	start := time.Now()
	_, err = pc.read(server, buf)
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("deadline of 20ms noticed after %v", d)
	}
	server.SetReadDeadline(time.Time{})
	client.Close()
	if n, err := pc.read(server, buf); n != 0 || err == nil {
		t.Fatalf("read after the peer closed: %d, %v; want EOF", n, err)
	}
}
