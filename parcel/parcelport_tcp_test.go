package parcel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newTCPPort starts a TCP parcelport on loopback, closed when the test ends.
func newTCPPort(t testing.TB, id uint32, h Handler, configure func(*TCPConfig)) *TCP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := TCPConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: testSecret, Handler: h, Logger: testLogger(t)}}
	if configure != nil {
		configure(&cfg)
	}
	p, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(t, []Parcelport{p}) })
	return p
}

// waitClosed reads from c until the other end closes it.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hangLimit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the parcelport did not close the connection")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, hangLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tcpPeerOf returns port's connection to locality id.
func tcpPeerOf(t *testing.T, port *TCP, id uint32) *tcpPeer {
	t.Helper()
	port.mu.Lock()
	defer port.mu.Unlock()
	p := port.peers[id]
	if p == nil {
		t.Fatalf("locality %d is not connected", id)
	}
	return p
}

// Parcels that senders queue while the connection is busy go out
// together, at most TCPConfig.MaxBatch a write: the default gathers them,
// 4 takes at least a quarter as many writes as parcels, 1 one write each.
func TestTCPBatchesSends(t *testing.T) {
	for _, maxBatch := range []int{0, 4, 1} {
		t.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(t *testing.T) { testBatchesSends(t, maxBatch) })
	}
}

func testBatchesSends(t *testing.T, maxBatch int) {
	const (
		senders = 64
		each    = 50
	)
	r0 := newRecorder()
	p0 := newTCPPort(t, 0, r0, nil)
	p1 := newTCPPort(t, 1, newRecorder(), func(c *TCPConfig) { c.MaxBatch = maxBatch })
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		t.Fatal(err)
	}
	// On loopback a write never blocks, so with few CPUs sends rarely
	// meet; a slow network is what makes them queue up. Play the slow
	// network for the first round by holding the connection's write lock
	// until every sender has queued its first parcel.
	peer := tcpPeerOf(t, p1, 0)
	peer.wmu.Lock()
	var firstRound sync.WaitGroup
	firstRound.Add(senders)
	rest := make(chan struct{})
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				p := &Parcel{Header: Header{Kind: KindCall, Dest: 0, Request: uint64(g*each + k)}, Chunks: [][]byte{{byte(k)}}}
				err := p1.Send(ctx, p)
				if k == 0 {
					firstRound.Done()
					<-rest
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	waitFor(t, "every sender to queue a parcel", func() bool { return len(peer.queue) == senders })
	before := p1.Counters()[0].Writes
	peer.unlock()
	firstRound.Wait()
	first := p1.Counters()[0].Writes - before
	t.Logf("the %d parcels queued together took %d writes", senders, first)
	switch {
	case maxBatch == 0 && first >= senders/2:
		t.Errorf("%d parcels queued together took %d writes: they are not batched", senders, first)
	case maxBatch > 0 && first < uint64((senders+maxBatch-1)/maxBatch):
		t.Errorf("%d parcels queued together took %d writes: more than %d in a write", senders, first, maxBatch)
	case maxBatch == 1 && first != senders:
		t.Errorf("%d parcels queued together took %d writes, want one each", senders, first)
	}
	close(rest)
	wg.Wait()
	r0.waitParcels(t, senders*each)
	c := p1.Counters()
	if len(c) != 1 || c[0].Peer != 0 || c[0].ParcelsSent != senders*each || c[0].QueueLen != 0 {
		t.Fatalf("counters %+v", c)
	}
	t.Logf("%d parcels in %d writes", c[0].ParcelsSent, c[0].Writes)
	if maxBatch == 0 && c[0].Writes >= c[0].ParcelsSent {
		t.Fatalf("%d parcels took %d writes: sends are not batched", c[0].ParcelsSent, c[0].Writes)
	}
	// Every parcel arrived once.
	seen := make(map[uint64]bool)
	for _, p := range r0.received() {
		if seen[p.Header.Request] {
			t.Fatalf("parcel %d arrived twice", p.Header.Request)
		}
		seen[p.Header.Request] = true
	}
}

// BenchmarkTCPCoalescing floods one connection with 64-byte parcels from 16
// goroutines at once (each Send waits until its parcel is written), with
// each coalescing limit: parcels per second, and parcels per write.
//
//	go test -run '^$' -bench BenchmarkTCPCoalescing ./parcel/
func BenchmarkTCPCoalescing(b *testing.B) {
	for _, maxBatch := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(b *testing.B) {
			const senders = 16
			var got atomic.Int64
			h := &countingHandler{got: &got}
			p0 := newTCPPort(b, 0, h, nil)
			p1 := newTCPPort(b, 1, newRecorder(), func(c *TCPConfig) { c.MaxBatch = maxBatch })
			ctx := context.Background()
			if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 64)
			before := p1.Counters()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := g; k < b.N; k += senders {
						if err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0}, Chunks: [][]byte{payload}}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			for got.Load() < int64(b.N) {
				time.Sleep(10 * time.Microsecond)
			}
			b.StopTimer()
			after := p1.Counters()
			writes := after[0].Writes
			if len(before) > 0 {
				writes -= before[0].Writes
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "parcels/s")
			b.ReportMetric(float64(b.N)/float64(max(writes, 1)), "parcels/write")
		})
	}
}

// countingHandler counts the parcels it receives and keeps none.
type countingHandler struct{ got *atomic.Int64 }

func (h *countingHandler) Buffer(*Header, int, int) []byte { return nil }
func (h *countingHandler) Receive(*Parcel)                 { h.got.Add(1) }
func (h *countingHandler) PeerDown(uint32, error)          {}

// quiet turns heartbeats off for the length of a test. The writer goroutine
// then never looks at the queue unless a lock holder kicks it, so a request
// that nobody took care of hangs the test instead of going out with the
// next heartbeat tick.
func quiet(c *TCPConfig) {
	c.HeartbeatInterval = time.Hour
	c.HeartbeatTimeout = 2 * time.Hour
}

func TestTCPSenderWritesTheQueue(t *testing.T) {
	const queued = 20
	r0 := newRecorder()
	p0 := newTCPPort(t, 0, r0, quiet)
	p1 := newTCPPort(t, 1, newRecorder(), quiet)
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		t.Fatal(err)
	}
	// Senders queue while the lock is held; the holder then lets go
	// without telling anybody, as if it had looked at the queue just
	// before they queued. The next sender, which queues behind them and
	// finds the lock free, must write them all.
	peer := tcpPeerOf(t, p1, 0)
	peer.wmu.Lock()
	errs := make(chan error, queued)
	for k := range queued {
		go func() {
			errs <- p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Request: uint64(k)}, Chunks: [][]byte{{byte(k)}}})
		}()
	}
	waitFor(t, "the senders to queue", func() bool { return len(peer.queue) == queued })
	before := p1.Counters()[0].Writes
	peer.wmu.Unlock()
	if err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Request: queued}}); err != nil {
		t.Fatal(err)
	}
	for range queued {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(hangLimit):
			t.Fatal("queued sends were not written")
		}
	}
	if w := p1.Counters()[0].Writes - before; w != 1 {
		t.Errorf("%d parcels took %d writes, want one", queued+1, w)
	}
	r0.waitParcels(t, queued+1)
}

func TestTCPSendersNeverStrand(t *testing.T) {
	// Many senders on one connection, heartbeats off: every request must
	// be written by a lock holder or the writer it kicks (see quiet).
	const (
		senders = 8
		each    = 2000
	)
	r0 := newRecorder()
	p0 := newTCPPort(t, 0, r0, quiet)
	p1 := newTCPPort(t, 1, newRecorder(), func(c *TCPConfig) { quiet(c); c.QueueLen = 4 })
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				var chunks [][]byte
				if k%100 == 0 {
					chunks = [][]byte{make([]byte, 256<<10)} // a batch of its own
				}
				p := &Parcel{Header: Header{Kind: KindCall, Dest: 0, Request: uint64(g*each + k)}, Chunks: chunks}
				if err := p1.Send(ctx, p); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatalf("senders hang; queue %+v", p1.Counters())
	}
	r0.waitParcels(t, senders*each)
	c := p1.Counters()[0]
	t.Logf("%d parcels in %d writes", c.ParcelsSent, c.Writes)
	if c.ParcelsSent != senders*each || c.QueueLen != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestTCPSendBlocksWhileQueueFull(t *testing.T) {
	r0 := newRecorder()
	p0 := newTCPPort(t, 0, r0, nil)
	p1 := newTCPPort(t, 1, newRecorder(), func(c *TCPConfig) { c.QueueLen = 2 })
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		t.Fatal(err)
	}
	peer := tcpPeerOf(t, p1, 0)
	peer.wmu.Lock()
	errs := make(chan error, 2)
	for k := range 2 {
		go func() {
			errs <- p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "queued", Request: uint64(k)}})
		}()
	}
	waitFor(t, "the queue to fill", func() bool { return len(peer.queue) == 2 })
	// A third sender blocks until its context ends.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := p1.Send(short, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "dropped"}})
	var pe *PeerError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &pe) || pe.Locality != 0 {
		t.Fatalf("Send on a full queue: %v, want a *PeerError wrapping the context's end", err)
	}
	if len(errs) != 0 {
		t.Fatalf("a queued send returned while the connection was busy: %v", <-errs)
	}
	peer.unlock()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "after"}}); err != nil {
		t.Fatal(err)
	}
	r0.waitParcels(t, 3)
	for _, p := range r0.received() {
		if p.Header.Action == "dropped" {
			t.Fatal("the send whose context ended was written")
		}
	}
}

func TestTCPSendersAnsweredWhenPeerDies(t *testing.T) {
	// A peer that stops reading and then resets the connection: senders
	// are queued, combining, and blocked in writes when it goes. Every
	// Send must return, with nil or an error wrapping ErrPeerDown.
	const senders = 16
	rec := newRecorder()
	port := newTCPPort(t, 0, rec, func(c *TCPConfig) { c.QueueLen = 4 })
	raw := rawPeerAt(t, port.Addr(), 1, 0)
	var failed atomic.Int32
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				var chunks [][]byte
				if (g+k)%4 == 0 {
					chunks = [][]byte{make([]byte, 64<<10)}
				}
				err := port.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 1}, Chunks: chunks})
				if err != nil {
					if !errors.Is(err, ErrPeerDown) {
						t.Errorf("Send: %v, want ErrPeerDown", err)
					}
					failed.Add(1)
					return
				}
			}
		}()
	}
	peer := tcpPeerOf(t, port, 1)
	// Wait for the writes to block: requests queue up behind them. (The
	// queue need not fill: a combiner blocked in a write holds the batch it
	// took from the queue.)
	waitFor(t, "sends to queue up", func() bool { return len(peer.queue) > 0 })
	time.Sleep(50 * time.Millisecond) // not a bound: lets the socket buffers fill
	raw.(*net.TCPConn).SetLinger(0)   // reset, not a clean close
	raw.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatal("senders hang after the peer died")
	}
	if failed.Load() != senders {
		t.Fatalf("%d of %d senders saw the failure", failed.Load(), senders)
	}
	if d := rec.waitDown(t); d.peer != 1 || !errors.Is(d.err, ErrPeerDown) {
		t.Fatalf("PeerDown(%d, %v)", d.peer, d.err)
	}
	if n := len(peer.queue); n != 0 {
		t.Fatalf("%d requests left in the queue", n)
	}
}

// deadlineListener hands out connections that count the read deadlines
// set on them once their handshake has ended (SetDeadline(zero)).
type deadlineListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*deadlineConn
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &deadlineConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, dc)
	l.mu.Unlock()
	return dc, nil
}

func (l *deadlineListener) readDeadlines() (n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		n += c.reads.Load()
	}
	return n
}

// deadlineConn hides the socket (the port then reads through a
// FrameReader) and counts read deadlines after the handshake.
type deadlineConn struct {
	net.Conn
	shaken atomic.Bool
	reads  atomic.Int64
}

func (c *deadlineConn) SetDeadline(d time.Time) error {
	if d.IsZero() {
		c.shaken.Store(true)
	}
	return c.Conn.SetDeadline(d)
}

func (c *deadlineConn) SetReadDeadline(d time.Time) error {
	if c.shaken.Load() {
		c.reads.Add(1)
	}
	return c.Conn.SetReadDeadline(d)
}

// A peer that is heard from — heartbeats, parcels — keeps its connection
// without a read deadline ever being set: the port's clock counts reads
// instead (no deadline, no Go timer per message).
func TestTCPNoReadDeadlineWhileHeard(t *testing.T) {
	const interval, timeout = 10 * time.Millisecond, 80 * time.Millisecond
	fast := func(c *TCPConfig) { c.HeartbeatInterval, c.HeartbeatTimeout = interval, timeout }
	r0, r1 := newRecorder(), newRecorder()
	var ln *deadlineListener
	p0 := newTCPPort(t, 0, r0, func(c *TCPConfig) {
		fast(c)
		ln = &deadlineListener{Listener: c.Listener}
		c.Listener = ln
	})
	p1 := newTCPPort(t, 1, r1, fast)
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		t.Fatal(err)
	}
	for range 40 { // 4 timeouts of parcels and heartbeats
		if err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "ping"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(timeout / 10)
	}
	r0.waitParcels(t, 40)
	if downs := r0.peerDowns(); len(downs) != 0 {
		t.Fatalf("peer down while heard: %v", downs)
	}
	if n := ln.readDeadlines(); n != 0 {
		t.Fatalf("%d read deadlines set on a connection whose peer was heard", n)
	}
}

func TestTCPCloseCutsHandshakesShort(t *testing.T) {
	port := newTCPPort(t, 0, newRecorder(), func(c *TCPConfig) { c.HandshakeTimeout = time.Hour })
	c, err := net.Dial("tcp", port.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "the port to accept", func() bool {
		port.mu.Lock()
		defer port.mu.Unlock()
		return len(port.shaking) == 1
	})
	closed := make(chan error, 1)
	go func() { closed <- port.Close() }()
	select {
	case <-closed:
	case <-time.After(hangLimit):
		t.Fatal("Close waits for a handshake that never ends")
	}
	waitClosed(t, c)
}

func TestTCPConfigValidation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for name, cfg := range map[string]TCPConfig{
		"no listener":  {PortConfig: PortConfig{Secret: testSecret, Handler: newRecorder()}},
		"short secret": {PortConfig: PortConfig{Listener: ln, Secret: []byte("short"), Handler: newRecorder()}},
		"no handler":   {PortConfig: PortConfig{Listener: ln, Secret: testSecret}},
		"MaxBatch 65":  {PortConfig: PortConfig{Listener: ln, Secret: testSecret, Handler: newRecorder()}, MaxBatch: 65},
		"MaxBatch -1":  {PortConfig: PortConfig{Listener: ln, Secret: testSecret, Handler: newRecorder()}, MaxBatch: -1},
	} {
		if _, err := NewTCP(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
