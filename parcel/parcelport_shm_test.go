//go:build linux

package parcel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shmPair starts two SHM ports on loopback, locality 1 connected to 0,
// configured by cfg (its PortConfig filled in here), closed when the test
// ends.
func shmPair(t *testing.T, cfg SHMConfig, logger *slog.Logger) ([2]*SHM, [2]*recorder) {
	return shmPairWith(t, cfg, logger, nil)
}

// shmPairWith is shmPair with handlers of the test's: wrap, if not nil,
// returns locality i's handler given its recorder.
func shmPairWith(t *testing.T, cfg SHMConfig, logger *slog.Logger, wrap func(i int, r *recorder) Handler) ([2]*SHM, [2]*recorder) {
	t.Helper()
	if logger == nil {
		logger = testLogger(t)
	}
	var ports [2]*SHM
	var recs [2]*recorder
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = newRecorder()
		var h Handler = recs[i]
		if wrap != nil {
			h = wrap(i, recs[i])
		}
		c := cfg
		c.PortConfig = PortConfig{Locality: uint32(i), Listener: ln, Secret: testSecret, Handler: h, Logger: logger,
			MaxFrame: cfg.MaxFrame, HeartbeatInterval: cfg.HeartbeatInterval, HeartbeatTimeout: cfg.HeartbeatTimeout}
		if ports[i], err = NewSHM(c); err != nil {
			t.Fatal(err)
		}
		p := ports[i]
		t.Cleanup(func() { closeAll(t, []Parcelport{p}) })
	}
	connectAll(t, []Parcelport{ports[0], ports[1]})
	return ports, recs
}

// onRing waits until both ports of a pair send to each other through
// shared memory.
func onRing(t *testing.T, ports [2]*SHM) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for !ports[0].SharedMemory(1) || !ports[1].SharedMemory(0) {
		if time.Now().After(deadline) {
			t.Fatalf("not on shared memory after %v: 0->1 %v, 1->0 %v", hangLimit, ports[0].SharedMemory(1), ports[1].SharedMemory(0))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSHMUpgradesLocalPeers: two localities of this machine move to the
// rings, and their parcels, large and small, go there rather than on TCP.
func TestSHMUpgradesLocalPeers(t *testing.T) {
	ports, recs := shmPair(t, SHMConfig{}, nil)
	onRing(t, ports)
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<18) // 12 MiB: many times the ring
	for i := range 100 {
		for from := range 2 {
			var chunks [][]byte
			if i%25 == 0 {
				chunks = [][]byte{big, {byte(i)}}
			}
			p := &Parcel{Header: Header{Kind: KindCall, Dest: uint32(1 - from), Action: "x", Request: uint64(i)}, Chunks: chunks}
			if err := ports[from].Send(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for to, r := range recs {
		r.waitParcels(t, 100)
		for i, p := range r.received() {
			if p.Header.Request != uint64(i) || p.Header.Source != uint32(1-to) {
				t.Fatalf("locality %d: parcel %d is request %d from %d", to, i, p.Header.Request, p.Header.Source)
			}
			if i%25 == 0 && (len(p.Chunks) != 2 || !bytes.Equal(p.Chunks[0], big) || p.Chunks[1][0] != byte(i)) {
				t.Fatalf("locality %d: parcel %d arrived damaged", to, i)
			}
		}
	}
	for i, s := range ports {
		tc := s.tcp.Counters()
		p := s.slot(uint32(1-i), false)
		if len(tc) != 1 || tc[0].ParcelsSent != 0 || p.ctrlSent.Load() == 0 {
			t.Fatalf("locality %d counts %d parcels sent on tcp besides its %d own control parcels: want none", i, tc[0].ParcelsSent, p.ctrlSent.Load())
		}
		if got := p.ctr.parcelsSent.Load(); got != 100 {
			t.Fatalf("locality %d sent %d parcels through the ring, want 100", i, got)
		}
	}
}

// TestSHMRefusedSegmentStaysOnTCP: a peer that claims this node but offers
// a segment without the token it names, or of another size or version,
// or another file, is refused with a warning naming it and the cause;
// both stay on TCP and go on talking.
func TestSHMRefusedSegmentStaysOnTCP(t *testing.T) {
	for _, c := range []struct {
		name, want string
		hook       func(o *shmOffer, seg []byte)
	}{
		{"token", "token", func(o *shmOffer, _ []byte) { o.token[0] ^= 1 }},
		{"ring size", "not the region", func(o *shmOffer, _ []byte) { o.ringBytes *= 2 }},
		{"bad ring size", "power of two", func(o *shmOffer, _ []byte) { o.ringBytes = 1000 }},
		{"inode", "inode", func(o *shmOffer, _ []byte) { o.ino++ }},
		{"version", "version 7", func(_ *shmOffer, seg []byte) { seg[8] = 7 }},
		{"magic", "not a ring segment", func(_ *shmOffer, seg []byte) { seg[0] ^= 0xff }},
		{"size in the header", "the offer says", func(_ *shmOffer, seg []byte) { seg[17]++ }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs logBuffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			var ports [2]*SHM
			var recs [2]*recorder
			for i := range ports {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				recs[i] = newRecorder()
				ports[i], err = NewSHM(SHMConfig{TCPConfig: TCPConfig{PortConfig: PortConfig{Locality: uint32(i), Listener: ln, Secret: testSecret, Handler: recs[i], Logger: logger}}})
				if err != nil {
					t.Fatal(err)
				}
				p := ports[i]
				t.Cleanup(func() { closeAll(t, []Parcelport{p}) })
			}
			ports[1].offerHook = c.hook
			connectAll(t, []Parcelport{ports[0], ports[1]})
			if ports[0].SharedMemory(1) || ports[1].SharedMemory(0) {
				t.Fatal("a refused offer moved the pair to shared memory")
			}
			out := logs.String()
			if !strings.Contains(out, "staying on tcp") || !strings.Contains(out, "peer=1") || !strings.Contains(out, c.want) {
				t.Fatalf("no warning naming peer 1 and %q:\n%s", c.want, out)
			}
			ctx := context.Background()
			for from := range 2 {
				if err := ports[from].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: uint32(1 - from), Action: "still"}}); err != nil {
					t.Fatal(err)
				}
			}
			recs[0].waitParcels(t, 1)
			recs[1].waitParcels(t, 1)
		})
	}
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSHMHostileRingEntry: bytes in a ring that fail the frame checks,
// and ring positions that are impossible, are an error naming the peer
// that wrote them, within seconds, with no hang and no read outside the
// ring; parcels before them arrive.
func TestSHMHostileRingEntry(t *testing.T) {
	frame := func(body uint64, hlen uint32, rest []byte) []byte {
		b := binary.LittleEndian.AppendUint64(nil, body)
		b = binary.LittleEndian.AppendUint32(b, hlen)
		return append(b, rest...)
	}
	for _, c := range []struct {
		name, want string
		write      func(s *SHM, p *shmPeer)
	}{
		{"oversized body", "frame too large", func(s *SHM, p *shmPeer) { writeRaw(s, p, frame(1<<62, 10, nil)) }},
		{"empty header", "header length 0", func(s *SHM, p *shmPeer) { writeRaw(s, p, frame(10, 0, make([]byte, 10))) }},
		{"garbage header", "header", func(s *SHM, p *shmPeer) {
			writeRaw(s, p, frame(8, 8, []byte{0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1}))
		}},
		{"head past the ring", "ring corrupt", func(s *SHM, p *shmPeer) {
			p.wmu.Lock()
			defer p.wmu.Unlock()
			p.out.ctl.head.Store(p.out.pos + p.out.size + 1)
			s.ringBell(p)
		}},
		{"head backwards", "ring corrupt", func(s *SHM, p *shmPeer) {
			p.wmu.Lock()
			defer p.wmu.Unlock()
			p.out.ctl.head.Store(p.out.pos - 1)
			s.ringBell(p)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ports, recs := shmPair(t, SHMConfig{TCPConfig: TCPConfig{PortConfig: PortConfig{MaxFrame: 1 << 20}}}, nil)
			onRing(t, ports)
			if err := ports[1].Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "before"}}); err != nil {
				t.Fatal(err)
			}
			recs[0].waitParcels(t, 1)
			start := time.Now()
			c.write(ports[1], ports[1].slot(0, false))
			d := recs[0].waitDown(t)
			var pe *PeerError
			if d.peer != 1 || !errors.As(d.err, &pe) || pe.Locality != 1 || !errors.Is(d.err, ErrPeerDown) || !strings.Contains(d.err.Error(), c.want) {
				t.Fatalf("peer %d down: %v; want locality 1 named, ErrPeerDown and %q", d.peer, d.err, c.want)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("the bad entry took %v to be found", time.Since(start))
			}
			if got := recs[0].received(); len(got) != 1 || got[0].Header.Action != "before" {
				t.Fatalf("got %d parcels, want just the one before the bad entry", len(got))
			}
			// The writer learns it too: its TCP connection is closed.
			recs[1].waitDown(t)
			if err := ports[1].Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 0}}); !errors.Is(err, ErrPeerDown) {
				t.Fatalf("Send after the bad entry: %v, want ErrPeerDown", err)
			}
			time.Sleep(50 * time.Millisecond)
			if n := len(recs[0].peerDowns()); n != 1 {
				t.Fatalf("locality 0 was told %d times", n)
			}
		})
	}
}

// writeRaw writes b into p's ring as its writer would, bypassing Send.
func writeRaw(s *SHM, p *shmPeer, b []byte) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	for len(b) > 0 {
		free, _ := p.out.writable()
		b = b[p.out.put(b, free):]
		s.publish(p)
	}
}

// TestSHMWakeups: a million small frames through one ring whose reader and
// writer sleep on the futex whenever they find nothing to do (no spinning)
// and a ring small enough that the writer waits for room too: every frame
// arrives, in order, and nobody sleeps through a wake-up (which would hang
// the test until the sleep's limit, many times over). Run it with -race.
func TestSHMWakeups(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	var sum, got uint64
	var mu sync.Mutex
	done := make(chan struct{})
	// Count instead of keeping a million parcels.
	each := func(p *Parcel) {
		v := binary.LittleEndian.Uint64(p.Header.Args)
		mu.Lock()
		defer mu.Unlock()
		if v != got {
			t.Errorf("frame %d arrived in place %d", v, got)
		}
		got++
		sum += v
		if got == uint64(n) {
			close(done)
		}
	}
	ports, _ := shmPairWith(t, SHMConfig{RingBytes: 64 << 10, SpinFor: -1}, nil, func(i int, r *recorder) Handler {
		if i == 0 {
			return &eachHandler{recorder: r, each: each}
		}
		return r
	})
	onRing(t, ports)
	start := time.Now()
	go func() {
		var args [8]byte
		for i := range n {
			binary.LittleEndian.PutUint64(args[:], uint64(i))
			if err := ports[1].Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 0, Args: args[:]}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		mu.Lock()
		t.Fatalf("%d of %d frames arrived in 5 minutes: a wake-up was lost", got, n)
	}
	if want := uint64(n) * uint64(n-1) / 2; sum != want {
		t.Fatalf("sum of frame numbers %d, want %d", sum, want)
	}
	t.Logf("%d frames in %v", n, time.Since(start))
}

// eachHandler hands every parcel to each instead of keeping it.
type eachHandler struct {
	*recorder
	each func(p *Parcel)
}

func (h *eachHandler) Receive(p *Parcel) { h.each(p) }

// TestSHMIdleCostsNothing: in blocking mode an idle pair on the rings
// sleeps: the process uses a small part of one core while nothing is sent.
func TestSHMIdleCostsNothing(t *testing.T) {
	ports, recs := shmPair(t, SHMConfig{}, nil)
	onRing(t, ports)
	if err := ports[1].Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 0}}); err != nil {
		t.Fatal(err)
	}
	recs[0].waitParcels(t, 1)
	time.Sleep(50 * time.Millisecond)
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	const idle = time.Second
	before := cpu()
	time.Sleep(idle)
	used := cpu() - before
	if used > idle/10 {
		t.Fatalf("an idle pair used %v of processor time in %v", used, idle)
	}
	t.Logf("an idle pair used %v of processor time in %v", used, idle)
}

// TestSHMOtherNodeStaysOnTCPQuietly: a peer on another node (its offer
// names another node) stays on TCP without a warning, and the two talk.
func TestSHMOtherNodeStaysOnTCPQuietly(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var ports [2]*SHM
	var recs [2]*recorder
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = newRecorder()
		ports[i], err = NewSHM(SHMConfig{TCPConfig: TCPConfig{PortConfig: PortConfig{Locality: uint32(i), Listener: ln, Secret: testSecret, Handler: recs[i], Logger: logger}}})
		if err != nil {
			t.Fatal(err)
		}
		p := ports[i]
		t.Cleanup(func() { closeAll(t, []Parcelport{p}) })
	}
	ports[1].offerHook = func(o *shmOffer, _ []byte) { o.node = "another-boot-id/pid:[1]" }
	connectAll(t, []Parcelport{ports[0], ports[1]})
	if ports[0].SharedMemory(1) || ports[1].SharedMemory(0) {
		t.Fatal("peers of different nodes moved to shared memory")
	}
	ctx := context.Background()
	for k := range 10 {
		for from := range 2 {
			if err := ports[from].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: uint32(1 - from), Request: uint64(k)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range recs {
		r.waitParcels(t, 10)
		for k, p := range r.received() {
			if p.Header.Request != uint64(k) {
				t.Fatalf("parcel %d arrived in place %d", p.Header.Request, k)
			}
		}
	}
	out := logs.String()
	if strings.Contains(out, "level=WARN") || !strings.Contains(out, "another node") {
		t.Fatalf("want an info line saying another node and no warning:\n%s", out)
	}
}

// blockingHandler never returns from Receive until release is closed: a
// peer that does not read its ring.
type blockingHandler struct {
	*recorder
	release chan struct{}
}

func (h *blockingHandler) Receive(p *Parcel) { <-h.release }

// TestSHMCloseWithPeerNotReading: Close does not hang on a peer that
// stopped reading while a Send of 64 MiB waits for room in its ring; that
// Send fails with ErrClosed, and nobody is reported down.
func TestSHMCloseWithPeerNotReading(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ports, recs := shmPairWith(t, SHMConfig{}, nil, func(i int, r *recorder) Handler {
		if i == 0 {
			return &blockingHandler{recorder: r, release: release}
		}
		return r
	})
	onRing(t, ports)
	ctx := context.Background()
	if err := ports[1].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0}}); err != nil {
		t.Fatal(err) // locality 0's reader is now stuck in Receive
	}
	sent := make(chan error, 1)
	go func() {
		sent <- ports[1].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0}, Chunks: [][]byte{make([]byte, 64<<20)}})
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-sent:
		t.Fatalf("a Send of 64 MiB into a ring nobody reads returned %v", err)
	default:
	}
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- ports[1].Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangLimit):
		t.Fatal("Close hangs on a peer that does not read")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v", took)
	}
	select {
	case err := <-sent:
		if !errors.Is(err, ErrClosed) || errors.Is(err, ErrPeerDown) {
			t.Fatalf("the blocked Send: %v, want ErrClosed", err)
		}
	case <-time.After(hangLimit):
		t.Fatal("the blocked Send is still blocked after Close")
	}
	if d := recs[1].peerDowns(); len(d) != 0 {
		t.Fatalf("locality 1 was told of a loss: %v", d[0].err)
	}
}
