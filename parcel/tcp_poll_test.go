package parcel

import (
	"log/slog"
	"net"
	"syscall"
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
		return mkSocketPorts(t, n, handlers, func(ln net.Listener, id uint32, h Handler, log *slog.Logger) (Parcelport, error) {
			return NewTCP(TCPConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: testSecret, Handler: h, Logger: log}, PollFor: pollFor})
		})
	}
}

// A long window: readers poll for the whole test.
func TestTCPPollParcelport(t *testing.T) { testParcelport(t, mkTCPPoll(time.Minute)) }

// A window shorter than the gaps between parcels: readers keep going from
// polling to blocking and back.
func TestTCPPollBlockParcelport(t *testing.T) { testParcelport(t, mkTCPPoll(50*time.Microsecond)) }

// A spinner finds data that arrives while it spins, gives up after its
// window, and gives up at once when told to quit; it counts itself as
// polling only while it spins.
func TestSpinnerAwait(t *testing.T) {
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
	raw := rawConn(server)
	var port spinners
	s := newSpinner(time.Minute, &port)
	if raw == nil || s == nil {
		t.Skip("no raw descriptor on this platform: readers block")
	}
	never := func(time.Time) bool { return false }
	// The probe peeks, so that the bytes it finds are still there for the
	// read that checks them.
	await := func(quit func(time.Time) bool) (found bool) {
		raw.Control(func(fd uintptr) {
			var b [1]byte
			found = s.await(func() bool {
				_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
				return err != syscall.EAGAIN
			}, quit)
		})
		return found
	}
	go func() {
		time.Sleep(time.Millisecond)
		client.Write([]byte("ping"))
	}()
	// On a machine whose cores are shared the spinner may give up early
	// (a sched_yield that took long); then the data is there later.
	for !await(never) {
	}
	buf := make([]byte, 16)
	if n, err := server.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read %q, %v after the spinner found data; want \"ping\"", buf[:n], err)
	}
	if c := port.polling.Load(); c != 0 {
		t.Fatalf("after a spin, %d readers count as polling", c)
	}
	start := time.Now()
	if await(func(time.Time) bool { return true }) {
		t.Fatal("the spinner found data on a silent socket")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("told to quit, the spinner went on for %v", d)
	}
	s.window = 5 * time.Millisecond
	if await(never) {
		t.Fatal("the spinner found data on a silent socket")
	}
	// While the port pauses (a reader found the cores shared), no reader
	// spins, data or not.
	client.Write([]byte("ping"))
	port.pause.Store(time.Now().Add(time.Hour).UnixNano())
	if await(never) {
		t.Fatal("the spinner spun while the port paused")
	}
	port.pause.Store(0)
	if !await(never) {
		t.Fatal("after the pause the spinner did not find the data")
	}
}

// The TCP parcelport making raw reads (TCPConfig.RawReads)
// passes the shared suite, and the socket suite as "TCP-raw".
func TestTCPRawReadsParcelport(t *testing.T) {
	testParcelport(t, func(t *testing.T, n int, handlers []Handler) []Parcelport {
		return mkSocketPorts(t, n, handlers, func(ln net.Listener, id uint32, h Handler, log *slog.Logger) (Parcelport, error) {
			return NewTCP(TCPConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: testSecret, Handler: h, Logger: log}, RawReads: true})
		})
	})
}
