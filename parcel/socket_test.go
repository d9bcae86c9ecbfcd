package parcel

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/internal/jobtest"
)

// The tests of what the socket parcelports (TCP and NBIO, sharing links.go
// and the handshake) do beyond the conformance suite of package parceltest,
// which every parcelport passes (the *_conformance_test.go files): a forged
// handshake proof, one connection per pair whoever dials, and, in
// goodbye_linux_test.go, a goodbye that comes with the end of the stream.
// Every one runs against each socket port of socketPorts.

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
