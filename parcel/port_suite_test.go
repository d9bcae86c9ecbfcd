package parcel

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/tessera-amt/tessera/internal/jobtest"
)

// The conformance tests of the socket parcelports: every one runs against
// TCP and NBIO alike. The behaviour shared with Inproc is testParcelport's.

// portOpts are the settings a test changes; zero values leave the defaults.
type portOpts struct {
	maxFrame   int64
	hbInterval time.Duration
	hbTimeout  time.Duration
	logger     *slog.Logger
	window     int // NBIO only
}

// socketPort is a parcelport implementation that listens on a socket.
type socketPort struct {
	name string
	new  func(ln net.Listener, id uint32, h Handler, o portOpts) (Parcelport, error)
}

var socketPorts = []socketPort{
	{"TCP", func(ln net.Listener, id uint32, h Handler, o portOpts) (Parcelport, error) {
		return NewTCP(TCPConfig{PortConfig: o.config(ln, id, h)})
	}},
	{"NBIO", func(ln net.Listener, id uint32, h Handler, o portOpts) (Parcelport, error) {
		return NewNBIO(NBIOConfig{PortConfig: o.config(ln, id, h), Window: o.window})
	}},
	{"TCP-poll", func(ln net.Listener, id uint32, h Handler, o portOpts) (Parcelport, error) {
		return NewTCP(TCPConfig{PortConfig: o.config(ln, id, h), PollFor: time.Minute})
	}},
	{"TCP-raw", func(ln net.Listener, id uint32, h Handler, o portOpts) (Parcelport, error) {
		return NewTCP(TCPConfig{PortConfig: o.config(ln, id, h), RawReads: true})
	}},
}

// config is the configuration a socket port of the suite starts with.
func (o portOpts) config(ln net.Listener, id uint32, h Handler) PortConfig {
	return PortConfig{Locality: id, Listener: ln, Secret: testSecret, Handler: h, Logger: o.logger,
		MaxFrame: o.maxFrame, HeartbeatInterval: o.hbInterval, HeartbeatTimeout: o.hbTimeout}
}

// forEachSocketPort runs test as a subtest per socket parcelport.
func forEachSocketPort(t *testing.T, test func(t *testing.T, sp socketPort)) {
	for _, sp := range socketPorts {
		t.Run(sp.name, func(t *testing.T) { test(t, sp) })
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// start starts one port of kind sp on loopback, closed when the test ends.
func (sp socketPort) start(t *testing.T, id uint32, h Handler, o portOpts) (Parcelport, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	if o.logger == nil {
		o.logger = testLogger(t)
	}
	p, err := sp.new(cl, id, h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(t, []Parcelport{p}) })
	return p, cl
}

// mkNBIO starts n NBIO parcelports on loopback; locality i dials every j < i.
func mkNBIO(t *testing.T, n int, handlers []Handler) []Parcelport {
	return mkSocketPorts(t, n, handlers, func(ln net.Listener, id uint32, h Handler, log *slog.Logger) (Parcelport, error) {
		return NewNBIO(NBIOConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: testSecret, Handler: h, Logger: log}})
	})
}

func TestNBIOParcelport(t *testing.T) { testParcelport(t, mkNBIO) }

// rawPeerAt dials addr and completes the handshake as locality self with
// locality want; what follows on the connection is up to the test.
func rawPeerAt(t *testing.T, addr string, self, want uint32) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(hangLimit))
	if err := dialHandshake(c, self, want, testSecret); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPortRejectsWrongSecret(t *testing.T) {
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		var logs jobtest.Buffer
		rec := newRecorder()
		port, _ := sp.start(t, 0, rec, portOpts{logger: slog.New(slog.NewTextHandler(&logs, nil))})

		// A client that does not know the secret makes up its proof, then
		// sends a frame anyway.
		bad, err := net.Dial("tcp", port.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		bad.SetDeadline(time.Now().Add(hangLimit))
		mine, _ := newHello(1)
		mb := mine.marshal()
		if _, err := bad.Write(mb); err != nil {
			t.Fatal(err)
		}
		theirs := make([]byte, helloLen+sha256.Size)
		if _, err := io.ReadFull(bad, theirs); err != nil {
			t.Fatal(err)
		}
		proof := handshakeMAC(otherSecret, "dial", mb, theirs[:helloLen])
		frame := appendFrame(t, nil, Header{Kind: KindCall, Source: 1, Action: "smuggled"}, nil)
		bad.Write(append(proof, frame...))
		if rest, _ := io.ReadAll(bad); len(rest) != 0 {
			t.Fatalf("the port answered a bad proof with %q", rest)
		}
		waitFor(t, "a log line naming the client", func() bool { return strings.Contains(logs.String(), bad.LocalAddr().String()) })
		if !strings.Contains(logs.String(), "does not know the job secret") {
			t.Errorf("the log does not say why:\n%s", logs.String())
		}
		// A port with another secret finds out itself.
		other, err := net.Dial("tcp", port.Addr())
		if err != nil {
			t.Fatal(err)
		}
		other.SetDeadline(time.Now().Add(hangLimit))
		if err := dialHandshake(other, 1, 0, otherSecret); !errors.Is(err, ErrHandshake) {
			t.Fatalf("dialing with another secret: %v", err)
		}
		other.Close()
		waitFor(t, "a log line naming the second client", func() bool { return strings.Contains(logs.String(), other.LocalAddr().String()) })

		// The port still serves a good peer, even the locality the bad
		// client claimed to be, and decoded nothing from the others.
		goodRec := newRecorder()
		good, _ := sp.start(t, 1, goodRec, portOpts{})
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		if err := good.Connect(ctx, 0, port.Addr()); err != nil {
			t.Fatal(err)
		}
		if err := good.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "hello"}}); err != nil {
			t.Fatal(err)
		}
		rec.waitParcels(t, 1)
		if got := rec.received(); len(got) != 1 || got[0].Header.Action != "hello" || got[0].Header.Source != 1 {
			t.Fatalf("port got %+v", got)
		}
		if d := rec.peerDowns(); len(d) != 0 {
			t.Fatalf("a rejected client was reported down: %v", d[0].err)
		}
	})
}

func TestPortOversizedFrame(t *testing.T) {
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		var logs jobtest.Buffer
		rec := newRecorder()
		port, _ := sp.start(t, 0, rec, portOpts{maxFrame: 1 << 20, logger: slog.New(slog.NewTextHandler(&logs, nil))})
		raw := rawPeerAt(t, port.Addr(), 1, 0)
		var down peerDown
		n := allocatedBy(func() {
			if _, err := raw.Write(append(frameHead(1<<40, 10), make([]byte, 64)...)); err != nil {
				t.Fatal(err)
			}
			down = rec.waitDown(t)
		})
		var pe *PeerError
		if down.peer != 1 || !errors.Is(down.err, ErrFrameTooLarge) || !errors.Is(down.err, ErrPeerDown) || !errors.As(down.err, &pe) || pe.Locality != 1 {
			t.Fatalf("PeerDown(%d, %v), want locality 1 and a *PeerError wrapping ErrFrameTooLarge and ErrPeerDown", down.peer, down.err)
		}
		if n > 16<<20 {
			t.Fatalf("the port allocated %d bytes while refusing the frame", n)
		}
		waitClosed(t, raw)
		if !strings.Contains(logs.String(), "oversized") {
			t.Errorf("nothing logged about the frame:\n%s", logs.String())
		}
		if err := port.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 1}}); !errors.Is(err, ErrPeerDown) {
			t.Fatalf("Send to the lost peer: %v, want ErrPeerDown", err)
		}
		if d := rec.peerDowns(); len(d) != 1 {
			t.Fatalf("PeerDown called %d times", len(d))
		}
	})
}

func TestPortTruncatedFrame(t *testing.T) {
	// The peer dies in the middle of a frame: what came before is
	// delivered, the half frame is not, and the peer is reported down.
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		rec := newRecorder()
		port, _ := sp.start(t, 0, rec, portOpts{})
		raw := rawPeerAt(t, port.Addr(), 3, 0)
		stream := appendFrame(t, nil, Header{Kind: KindCall, Source: 3, Dest: 0, Action: "last words"}, chunksOf(5))
		half := appendFrame(t, nil, Header{Kind: KindReply, Source: 3, Dest: 0, Action: "cut"}, chunksOf(100000))
		if _, err := raw.Write(append(stream, half[:len(half)/2]...)); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		down := rec.waitDown(t)
		if down.peer != 3 || !errors.Is(down.err, ErrPeerDown) || !strings.Contains(down.err.Error(), "unexpected EOF") {
			t.Fatalf("PeerDown(%d, %v), want locality 3 and ErrPeerDown for an unexpected EOF", down.peer, down.err)
		}
		if got := rec.received(); len(got) != 1 || got[0].Header.Action != "last words" {
			t.Fatalf("got %d parcels, want only the whole one", len(got))
		}
		if err := port.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 3}}); !errors.Is(err, ErrPeerDown) {
			t.Fatalf("Send to the lost peer: %v, want ErrPeerDown", err)
		}
	})
}

func TestPortCorruptFrames(t *testing.T) {
	hdr := func(h Header) []byte { return encodeHeader(t, h) }
	frames := map[string][]byte{
		"garbage header":  append(frameHead(20, 20), make([]byte, 20)...),
		"other version":   frameWithHeader(hdr(Header{Version: HeaderVersion + 1, Kind: KindCall}), 0),
		"unknown kind":    frameWithHeader(hdr(Header{Version: HeaderVersion, Kind: 42}), 0),
		"chunks add up":   frameWithHeader(hdr(Header{Version: HeaderVersion, Kind: KindCall, Chunks: []uint64{4, 4}}), 9),
		"header too long": frameHead(100, 101),
		"empty header":    frameHead(100, 0),
	}
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		for name, frame := range frames {
			t.Run(name, func(t *testing.T) {
				rec := newRecorder()
				port, _ := sp.start(t, 0, rec, portOpts{})
				raw := rawPeerAt(t, port.Addr(), 1, 0)
				good := appendFrame(t, nil, Header{Kind: KindCall, Action: "good"}, chunksOf(3))
				if _, err := raw.Write(append(append(good, frame...), good...)); err != nil {
					t.Fatal(err)
				}
				down := rec.waitDown(t)
				var fe *FrameError
				if down.peer != 1 || !errors.Is(down.err, ErrPeerDown) || !errors.As(down.err, &fe) {
					t.Fatalf("PeerDown(%d, %v), want locality 1 and a *FrameError wrapping ErrPeerDown", down.peer, down.err)
				}
				waitClosed(t, raw)
				if got := rec.received(); len(got) != 1 {
					t.Fatalf("got %d parcels, want only the one before the bad frame", len(got))
				}
			})
		}
	})
}

func TestPortSilentPeer(t *testing.T) {
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		rec := newRecorder()
		const timeout = 300 * time.Millisecond
		port, _ := sp.start(t, 0, rec, portOpts{hbInterval: 100 * time.Millisecond, hbTimeout: timeout})
		raw := rawPeerAt(t, port.Addr(), 2, 0)
		// The peer listens but says nothing: it hears heartbeats, and is
		// declared down all the same, within the timeout (and the
		// generous slack of a loaded machine).
		kinds := make(chan Kind, 1000)
		go func() {
			fr := NewFrameReader(bufio.NewReader(raw), 0)
			for {
				p, err := fr.Next(nil)
				if err != nil {
					close(kinds)
					return
				}
				kinds <- p.Header.Kind
			}
		}()
		began := time.Now()
		down := rec.waitDown(t)
		if took := time.Since(began); took > timeout+2*time.Second {
			t.Errorf("the silent peer was found out after %v, timeout %v", took, timeout)
		}
		if down.peer != 2 || !errors.Is(down.err, ErrPeerDown) || !strings.Contains(down.err.Error(), "silent") {
			t.Fatalf("PeerDown(%d, %v), want locality 2 and ErrPeerDown for silence", down.peer, down.err)
		}
		heartbeats := 0
		for k := range kinds {
			if k != KindHeartbeat {
				t.Fatalf("the port sent a %v parcel", k)
			}
			heartbeats++
		}
		if heartbeats == 0 {
			t.Fatal("the port sent no heartbeat")
		}
	})
}

func TestPortHeartbeatsKeepIdlePeersUp(t *testing.T) {
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		fast := portOpts{hbInterval: 20 * time.Millisecond, hbTimeout: time.Second}
		r0, r1 := newRecorder(), newRecorder()
		p0, _ := sp.start(t, 0, r0, fast)
		p1, _ := sp.start(t, 1, r1, fast)
		ctx := context.Background()
		if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		for i, r := range []*recorder{r0, r1} {
			if d := r.peerDowns(); len(d) != 0 {
				t.Fatalf("locality %d: idle peer reported down: %v", i, d[0].err)
			}
		}
		c := p0.Counters()
		if len(c) != 1 || c[0].ParcelsSent != 0 || c[0].ParcelsReceived != 0 || c[0].BytesReceived == 0 {
			t.Fatalf("counters %+v: heartbeats are bytes, not parcels", c)
		}
		if err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0}}); err != nil {
			t.Fatal(err)
		}
		r0.waitParcels(t, 1)
	})
}

func TestPortSendTooLarge(t *testing.T) {
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		limit := portOpts{maxFrame: 1 << 20}
		r0 := newRecorder()
		p0, _ := sp.start(t, 0, r0, limit)
		p1, _ := sp.start(t, 1, newRecorder(), limit)
		ctx := context.Background()
		if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
			t.Fatal(err)
		}
		err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0}, Chunks: [][]byte{make([]byte, 1<<20)}})
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("Send of a frame over the limit: %v, want ErrFrameTooLarge", err)
		}
		if err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0}, Chunks: [][]byte{make([]byte, 1<<20-200)}}); err != nil {
			t.Fatal(err)
		}
		r0.waitParcels(t, 1)
		if d := r0.peerDowns(); len(d) != 0 {
			t.Fatal(d[0].err)
		}
	})
}

func TestPortCloseWithPeerThatDoesNotRead(t *testing.T) {
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		rec := newRecorder()
		port, _ := sp.start(t, 0, rec, portOpts{})
		raw := rawPeerAt(t, port.Addr(), 1, 0)
		// The peer is alive, its heartbeats say so, but it never reads.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			hb := appendFrame(t, nil, Header{Kind: KindHeartbeat, Source: 1}, nil)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := raw.Write(hb); err != nil {
					return
				}
			}
		}()
		sent := make(chan error, 1)
		go func() {
			sent <- port.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 1}, Chunks: [][]byte{make([]byte, 64<<20)}})
		}()
		time.Sleep(300 * time.Millisecond) // not a bound: lets the socket buffers fill
		if len(sent) != 0 {
			t.Fatalf("64 MiB were written to a peer that does not read: %v", <-sent)
		}
		closed := make(chan error, 1)
		go func() { closed <- port.Close() }()
		select {
		case <-closed:
		case <-time.After(hangLimit):
			t.Fatal("Close hangs on a peer that does not read")
		}
		select {
		case err := <-sent:
			if err == nil {
				t.Fatal("a send that could not be written succeeded")
			}
		case <-time.After(hangLimit):
			t.Fatal("Send still blocked after Close")
		}
		if d := rec.peerDowns(); len(d) != 0 {
			t.Fatalf("closing reported a loss: %v", d[0].err)
		}
	})
}

func TestPortOneConnectionPerPair(t *testing.T) {
	// Four localities, everybody talking to everybody in both directions:
	// six connections in all, whoever sends first.
	const n = 4
	forEachSocketPort(t, func(t *testing.T, sp socketPort) {
		ports := make([]Parcelport, n)
		lns := make([]*countingListener, n)
		recs := make([]*recorder, n)
		for i := range n {
			recs[i] = newRecorder()
			ports[i], lns[i] = sp.start(t, uint32(i), recs[i], portOpts{})
		}
		connectAll(t, ports)
		ctx := context.Background()
		var wg sync.WaitGroup
		for from := range n {
			for to := range n {
				if from != to {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for k := range 100 {
							p := &Parcel{Header: Header{Kind: KindCall, Dest: uint32(to), Request: uint64(k)}, Chunks: chunksOf(k * 100)}
							if err := ports[from].Send(ctx, p); err != nil {
								t.Errorf("send %d -> %d: %v", from, to, err)
								return
							}
						}
					}()
				}
			}
		}
		wg.Wait()
		for _, r := range recs {
			r.waitParcels(t, (n-1)*100)
		}
		total := 0
		for i, ln := range lns {
			a := int(ln.accepted.Load()) // locality i is dialled by every j > i
			if a != n-1-i {
				t.Errorf("locality %d accepted %d connections, want %d", i, a, n-1-i)
			}
			total += a
			if c := ports[i].Counters(); len(c) != n-1 {
				t.Errorf("locality %d has %d peers, want %d", i, len(c), n-1)
			}
		}
		if total != n*(n-1)/2 {
			t.Fatalf("%d connections for %d localities, want one per pair: %d", total, n, n*(n-1)/2)
		}
	})
}

// nbioPeerOf returns port's connection to locality id.
func nbioPeerOf(t *testing.T, port *NBIO, id uint32) *nbioPeer {
	t.Helper()
	port.mu.Lock()
	defer port.mu.Unlock()
	p := port.peers[id]
	if p == nil {
		t.Fatalf("locality %d is not connected", id)
	}
	return p
}

// slowReceiver takes its time over every parcel on the reading goroutine,
// so the socket fills up and the sender's writes pile up in nbio.
type slowReceiver struct {
	chunk []byte // every chunk is read here
	delay time.Duration
	got   atomic.Int64
}

func (s *slowReceiver) Buffer(h *Header, i int, n int) []byte {
	if n <= len(s.chunk) {
		return s.chunk[:n]
	}
	return nil
}
func (s *slowReceiver) Receive(p *Parcel) {
	time.Sleep(s.delay)
	s.got.Add(1)
}
func (s *slowReceiver) PeerDown(peer uint32, err error) {}

func TestNBIOWindowBoundsMemory(t *testing.T) {
	// 128 MiB to a receiver that reads slowly. Without the window nbio
	// would cache most of it; with it the sender blocks instead, and what
	// nbio holds unsent, like the process's heap, stays near the window.
	const (
		window = 1 << 20
		size   = 256 << 10
		count  = 512
	)
	recv := &slowReceiver{chunk: make([]byte, size), delay: time.Millisecond}
	p0, _ := socketPorts[1].start(t, 0, recv, portOpts{})
	p1, _ := socketPorts[1].start(t, 1, newRecorder(), portOpts{window: window})
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, size)
	heapBefore := heapInUse()
	var heapMax atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if h := heapInUse(); h > heapMax.Load() {
				heapMax.Store(h)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	blocked := 0
	for k := range count {
		began := time.Now()
		if err := p1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Request: uint64(k)}, Chunks: [][]byte{payload}}); err != nil {
			t.Fatal(err)
		}
		if time.Since(began) > 500*time.Microsecond {
			blocked++
		}
	}
	close(stop)
	<-sampled
	waitFor(t, "every parcel to arrive", func() bool { return recv.got.Load() == count })
	peer := nbioPeerOf(t, p1.(*NBIO), 0)
	peak := peer.peak.Load()
	grew := int64(heapMax.Load()) - int64(heapBefore)
	t.Logf("nbio held at most %d bytes unsent (window %d); heap grew by %d bytes while %d MiB were sent; %d of %d sends blocked",
		peak, window, grew, count*size>>20, blocked, count)
	if peak > window {
		t.Errorf("nbio held %d bytes unsent, window %d", peak, window)
	}
	if peak == 0 {
		t.Error("nbio never held anything unsent: the receiver was not slow enough to test the window")
	}
	if grew > 48<<20 {
		t.Errorf("the heap grew by %d MiB sending %d MiB with a window of %d MiB", grew>>20, count*size>>20, window>>20)
	}
	if blocked == 0 {
		t.Error("no send waited for the window")
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func TestNBIOSendWaitsForWindowUntilContextEnds(t *testing.T) {
	recv := &slowReceiver{chunk: make([]byte, 1<<20), delay: 50 * time.Millisecond}
	p0, _ := socketPorts[1].start(t, 0, recv, portOpts{})
	p1, _ := socketPorts[1].start(t, 1, newRecorder(), portOpts{window: minNBIOWindow})
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		t.Fatal(err)
	}
	// Fill the socket buffers and the window while the receiver sleeps.
	payload := make([]byte, 1<<20)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var err error
	for k := 0; err == nil && k < 1000; k++ {
		err = p1.Send(short, &Parcel{Header: Header{Kind: KindCall, Dest: 0}, Chunks: [][]byte{payload}})
	}
	var pe *PeerError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &pe) || pe.Locality != 0 {
		t.Fatalf("Send with the window full: %v, want a *PeerError wrapping the context's end", err)
	}
	if peak := nbioPeerOf(t, p1.(*NBIO), 0).peak.Load(); peak > minNBIOWindow {
		t.Fatalf("nbio held %d bytes unsent, window %d", peak, minNBIOWindow)
	}
}

func TestNBIOConfigValidation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for name, cfg := range map[string]NBIOConfig{
		"no listener":  {PortConfig: PortConfig{Secret: testSecret, Handler: newRecorder()}},
		"short secret": {PortConfig: PortConfig{Listener: ln, Secret: []byte("short"), Handler: newRecorder()}},
		"no handler":   {PortConfig: PortConfig{Listener: ln, Secret: testSecret}},
		"tiny window":  {PortConfig: PortConfig{Listener: ln, Secret: testSecret, Handler: newRecorder()}, Window: 1000},
	} {
		if _, err := NewNBIO(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), "NBIOConfig") {
			t.Errorf("%s: %v does not name the setting", name, err)
		}
	}
}

func TestFrameDecoderPieces(t *testing.T) {
	// The same stream fed in pieces of every size from 1 byte up decodes to
	// what FrameReader reads, chunks landing in the memory provided.
	var stream []byte
	var want []*Parcel
	for k := range 6 {
		h := Header{Kind: KindCall, Action: fmt.Sprintf("p%d", k), Request: uint64(k), Args: []byte{byte(k)}}
		var chunks [][]byte
		switch k % 3 {
		case 1:
			chunks = chunksOf(0, 70000, 3)
		case 2:
			chunks = chunksOf(5)
		}
		stream = appendFrame(t, stream, h, chunks)
		if k == 3 {
			stream = appendFrame(t, stream, Header{Kind: KindHeartbeat}, nil)
		}
	}
	fr := NewFrameReader(bufio.NewReader(strings.NewReader(string(stream))), 0)
	for {
		p, err := fr.Next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	for _, piece := range []int{1, 7, 12, 100, 4096, 65536, len(stream)} {
		provided := map[string]bool{}
		d := newFrameDecoder(0, func(h *Header, i int, n int) []byte {
			if n == 70000 {
				provided[h.Action] = true
				return make([]byte, n)
			}
			return nil
		})
		var got []*Parcel
		var wires int64
		src := stream
		for len(src) > 0 {
			b, direct := d.space()
			n := min(piece, len(src), len(b))
			copy(b, src[:n])
			src = src[n:]
			if err := d.feed(n, direct, func(p *Parcel, wire int64) { got = append(got, p); wires += wire }); err != nil {
				t.Fatalf("pieces of %d: %v", piece, err)
			}
		}
		if d.midFrame() || wires != int64(len(stream)) {
			t.Fatalf("pieces of %d: decoder mid-frame %v, %d of %d bytes in frames", piece, d.midFrame(), wires, len(stream))
		}
		if len(got) != len(want) {
			t.Fatalf("pieces of %d: %d parcels, want %d", piece, len(got), len(want))
		}
		for i := range want {
			if !sameHeader(&got[i].Header, &want[i].Header) || len(got[i].Chunks) != len(want[i].Chunks) {
				t.Fatalf("pieces of %d: parcel %d is %+v, want %+v", piece, i, got[i].Header, want[i].Header)
			}
			for j := range want[i].Chunks {
				if string(got[i].Chunks[j]) != string(want[i].Chunks[j]) {
					t.Fatalf("pieces of %d: parcel %d chunk %d differs", piece, i, j)
				}
			}
		}
		if len(provided) != 2 {
			t.Fatalf("pieces of %d: chunk memory provided for %v", piece, provided)
		}
	}
}

// Small chunks that the handler gives no memory for are read into the
// parcel's own room, 8-byte aligned: a frame of two that fit costs one
// allocation, and one whose second chunk does not fit one more.
func TestFrameDecoderSmallChunks(t *testing.T) {
	for _, tc := range []struct {
		lens   []int
		allocs float64
	}{{[]int{24, 40}, 1}, {[]int{32, 40}, 2}} {
		chunks := chunksOf(tc.lens...)
		frame := appendFrame(t, nil, Header{Kind: KindCall}, chunks)
		d := newFrameDecoder(0, func(*Header, int, int) []byte { return nil })
		var got *Parcel
		feed := func() {
			b, direct := d.space()
			n := copy(b, frame)
			if err := d.feed(n, direct, func(p *Parcel, _ int64) { got = p }); err != nil {
				t.Fatal(err)
			}
		}
		if allocs := testing.AllocsPerRun(100, feed); allocs != tc.allocs {
			t.Errorf("chunks of %v: %v allocations per frame, want %v", tc.lens, allocs, tc.allocs)
		}
		for i, c := range got.Chunks {
			if string(c) != string(chunks[i]) {
				t.Fatalf("chunks of %v: chunk %d differs", tc.lens, i)
			}
			if uintptr(unsafe.Pointer(unsafe.SliceData(c)))%8 != 0 {
				t.Errorf("chunks of %v: chunk %d is not 8-byte aligned", tc.lens, i)
			}
		}
	}
}

// peerStateOf returns what port keeps of peer id's life, or nil while id
// is not connected.
func peerStateOf(port Parcelport, id uint32) *peerState {
	switch p := port.(type) {
	case *TCP:
		p.mu.Lock()
		defer p.mu.Unlock()
		if q := p.peers[id]; q != nil {
			return &q.peerState
		}
	case *NBIO:
		p.mu.Lock()
		defer p.mu.Unlock()
		if q := p.peers[id]; q != nil {
			return &q.peerState
		}
	}
	return nil
}
