//go:build linux

package parcel

import (
	"net"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"
)

// The TCP parcelport with polling readers (TCPConfig.PollFor) behaves like
// the blocking one: it passes the conformance suite
// (tcp_poll_conformance_test.go) and the socket tests through the
// "TCP-poll" entry of socketPorts. Here: the spinner and the progress
// loop themselves.

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
}

// The progress loop of a port with several polling readers wakes a parked
// reader when its socket has something, whether the loop spins or, after
// its window, blocks; it wakes a reader that is told to quit, and every
// reader when the port stops, after which readers do not park.
func TestProgressLoop(t *testing.T) {
	var port spinners
	port.kick = make(chan struct{}, 1)
	port.readers.Store(3) // several readers: they park in the loop
	if goruntime.GOOS != "linux" {
		t.Skip("the progress loop blocks in an epoll set of its own only on Linux")
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); port.progress(5*time.Millisecond, stop) }()
	pair := func() (int, int) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fds[0]); syscall.Close(fds[1]) })
		return fds[0], fds[1]
	}
	never := func(time.Time) bool { return false }
	park := func(fd int, quit func(time.Time) bool) <-chan bool {
		woke := make(chan bool, 1)
		s := newSpinner(time.Minute, &port)
		go func() { woke <- s.wait(fd, func() bool { panic("a parked reader probes") }, quit) }()
		return woke
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10s for %s", what)
			}
		}
	}
	parked := func(n int) func() bool {
		return func() bool { port.mu.Lock(); defer port.mu.Unlock(); return len(port.parked) == n }
	}
	woken := func(what string, ch <-chan bool, want bool) {
		t.Helper()
		select {
		case got := <-ch:
			if got != want {
				t.Fatalf("%s: woken with %v, want %v", what, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not woken in 10s", what)
		}
	}

	r1, w1 := pair()
	r2, w2 := pair()
	a, b := park(r1, never), park(r2, never)
	until("two parked readers", parked(2))
	syscall.Write(w1, []byte("x"))
	woken("the reader with data, the loop spinning", a, true)
	until("the other reader to stay parked", parked(1))

	// Past the window the loop blocks in its epoll set; data still wakes.
	until("the loop to block", func() bool { port.mu.Lock(); defer port.mu.Unlock(); return port.blocking != nil })
	syscall.Write(w2, []byte("y"))
	woken("the reader with data, the loop blocked", b, true)

	// A reader that parks while the loop blocks arms itself.
	r3, w3 := pair()
	c := park(r3, never)
	until("the loop to block", func() bool { port.mu.Lock(); defer port.mu.Unlock(); return port.blocking != nil })
	until("the third reader to park", parked(1))
	syscall.Write(w3, []byte("z"))
	woken("the reader that parked while the loop blocked", c, true)

	// A reader told to quit goes to block in the network poller.
	r4, _ := pair()
	woken("the reader told to quit", park(r4, func(time.Time) bool { return true }), false)

	// Stopping the port wakes every parked reader; later ones do not park.
	d := park(r4, never)
	until("a parked reader", parked(1))
	close(stop)
	woken("the reader parked when the port stopped", d, false)
	<-done
	woken("a reader after the stop", park(r4, never), false)
}
