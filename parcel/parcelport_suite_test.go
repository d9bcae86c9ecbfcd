package parcel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a Handler that keeps what it is given, for tests to inspect
// and wait on.
type recorder struct {
	// buffer, when set before the port starts, provides chunk memory.
	buffer func(h *Header, i int, n int) []byte

	mu      sync.Mutex
	parcels []*Parcel
	downs   []peerDown
	poke    chan struct{} // a token whenever something arrives
}

type peerDown struct {
	peer uint32
	err  error
}

func newRecorder() *recorder { return &recorder{poke: make(chan struct{}, 1)} }

func (r *recorder) Buffer(h *Header, i int, n int) []byte {
	if r.buffer != nil {
		return r.buffer(h, i, n)
	}
	return nil
}

func (r *recorder) Receive(p *Parcel) {
	r.mu.Lock()
	r.parcels = append(r.parcels, p)
	r.mu.Unlock()
	r.wake()
}

func (r *recorder) PeerDown(peer uint32, err error) {
	r.mu.Lock()
	r.downs = append(r.downs, peerDown{peer, err})
	r.mu.Unlock()
	r.wake()
}

func (r *recorder) wake() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// wait waits until cond, called with the recorder locked, holds; it fails
// the test after hangLimit.
func (r *recorder) wait(t testing.TB, what string, cond func(parcels []*Parcel, downs []peerDown) bool) {
	t.Helper()
	deadline := time.NewTimer(hangLimit)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok := cond(r.parcels, r.downs)
		n, d := len(r.parcels), len(r.downs)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.poke:
		case <-time.After(20 * time.Millisecond):
		case <-deadline.C:
			t.Fatalf("gave up waiting for %s after %v (%d parcels, %d peers down)", what, hangLimit, n, d)
		}
	}
}

// waitParcels waits until at least n parcels have arrived.
func (r *recorder) waitParcels(t testing.TB, n int) {
	t.Helper()
	r.wait(t, fmt.Sprintf("%d parcels", n), func(p []*Parcel, _ []peerDown) bool { return len(p) >= n })
}

// waitDown waits for a PeerDown and returns the first.
func (r *recorder) waitDown(t testing.TB) peerDown {
	t.Helper()
	r.wait(t, "a peer to go down", func(_ []*Parcel, d []peerDown) bool { return len(d) > 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.downs[0]
}

func (r *recorder) received() []*Parcel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Parcel(nil), r.parcels...)
}

func (r *recorder) peerDowns() []peerDown {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]peerDown(nil), r.downs...)
}

// testLogger logs to t until the test's cleanup.
func testLogger(t testing.TB) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, nil))
}

type testLogWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLogWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(b)))
	}
	return len(b), nil
}

// mkSocketPorts starts n parcelports on loopback listeners with open and
// connects them: locality i dials every j < i.
func mkSocketPorts(t *testing.T, n int, handlers []Handler, open func(ln net.Listener, id uint32, h Handler, log *slog.Logger) (Parcelport, error)) []Parcelport {
	t.Helper()
	log := testLogger(t)
	ports := make([]Parcelport, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p, err := open(ln, uint32(i), handlers[i], log)
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	t.Cleanup(func() { closeAll(t, ports) })
	connectAll(t, ports)
	return ports
}

// mkTCP starts n TCP parcelports on loopback; locality i dials every j < i.
func mkTCP(t *testing.T, n int, handlers []Handler) []Parcelport {
	return mkSocketPorts(t, n, handlers, func(ln net.Listener, id uint32, h Handler, log *slog.Logger) (Parcelport, error) {
		return NewTCP(TCPConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: testSecret, Handler: h, Logger: log}})
	})
}

// mkInproc joins n inproc parcelports.
func mkInproc(t *testing.T, n int, handlers []Handler) []Parcelport {
	t.Helper()
	nw := NewInprocNetwork(0)
	ports := make([]Parcelport, n)
	for i := range n {
		p, err := nw.Port(uint32(i), handlers[i])
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	t.Cleanup(func() { closeAll(t, ports) })
	connectAll(t, ports)
	return ports
}

func connectAll(t *testing.T, ports []Parcelport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	for i := range ports {
		for j := range i {
			if err := ports[i].Connect(ctx, uint32(j), ports[j].Addr()); err != nil {
				t.Fatalf("locality %d connecting to %d: %v", i, j, err)
			}
		}
	}
}

func closeAll(t testing.TB, ports []Parcelport) {
	for i, p := range ports {
		done := make(chan error, 1)
		go func() { done <- p.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("closing locality %d: %v", i, err)
			}
		case <-time.After(hangLimit):
			t.Errorf("closing locality %d hangs", i)
		}
	}
}

func TestTCPParcelport(t *testing.T) { testParcelport(t, mkTCP) }

func TestInprocParcelport(t *testing.T) { testParcelport(t, mkInproc) }

// testParcelport is the behaviour every Parcelport shares. mk starts n
// connected localities, locality i delivering to handlers[i], and closes
// them when the test ends.
func testParcelport(t *testing.T, mk func(t *testing.T, n int, handlers []Handler) []Parcelport) {
	// start makes n localities with recorders, and checks, once they are
	// closed at the end of the test, that none ever reported a peer down.
	start := func(t *testing.T, n int, setup func(i int, r *recorder)) ([]Parcelport, []*recorder) {
		t.Helper()
		recs := make([]*recorder, n)
		handlers := make([]Handler, n)
		for i := range n {
			recs[i] = newRecorder()
			if setup != nil {
				setup(i, recs[i])
			}
			handlers[i] = recs[i]
		}
		t.Cleanup(func() { // runs after mk's cleanup has closed the ports
			for i, r := range recs {
				for _, d := range r.peerDowns() {
					t.Errorf("locality %d was told locality %d is down: %v", i, d.peer, d.err)
				}
			}
		})
		return mk(t, n, handlers), recs
	}
	ctx := context.Background()

	t.Run("Exchange", func(t *testing.T) {
		const n = 3
		ports, recs := start(t, n, nil)
		payload := func(from, to int) (Header, [][]byte) {
			h := Header{Kind: KindCall, Dest: uint32(to), Action: fmt.Sprintf("from %d to %d", from, to),
				Request: uint64(100*from + to), Parent: 3, Args: []byte{byte(from), byte(to)}}
			return h, [][]byte{bytes.Repeat([]byte{byte(from)}, 1000+to), nil, []byte(h.Action)}
		}
		var wg sync.WaitGroup
		for from := range n {
			for to := range n {
				if from == to {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					h, chunks := payload(from, to)
					if err := ports[from].Send(ctx, &Parcel{Header: h, Chunks: chunks}); err != nil {
						t.Errorf("send %d -> %d: %v", from, to, err)
					}
				}()
			}
		}
		wg.Wait()
		for to, r := range recs {
			r.waitParcels(t, n-1)
			got := r.received()
			if len(got) != n-1 {
				t.Fatalf("locality %d got %d parcels, want %d", to, len(got), n-1)
			}
			seen := map[uint32]bool{}
			for _, p := range got {
				from := int(p.Header.Source)
				if seen[p.Header.Source] || from == to || from >= n {
					t.Fatalf("locality %d got a parcel from %d", to, from)
				}
				seen[p.Header.Source] = true
				h, chunks := payload(from, to)
				h.Source, h.Version = uint32(from), HeaderVersion
				for _, c := range chunks {
					h.Chunks = append(h.Chunks, uint64(len(c)))
				}
				if !sameHeader(&p.Header, &h) {
					t.Errorf("locality %d got header\n%+v\nwant\n%+v", to, p.Header, h)
				}
				if len(p.Chunks) != len(chunks) {
					t.Fatalf("locality %d got %d chunks from %d, want %d", to, len(p.Chunks), from, len(chunks))
				}
				for i := range chunks {
					if !bytes.Equal(p.Chunks[i], chunks[i]) {
						t.Errorf("locality %d: chunk %d from %d differs", to, i, from)
					}
				}
			}
		}
	})

	t.Run("Ordering", func(t *testing.T) {
		const (
			n       = 4
			senders = 4    // goroutines per locality
			count   = 2000 // parcels per goroutine and destination
		)
		ports, recs := start(t, n, nil)
		var wg sync.WaitGroup
		for from := range n {
			for g := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for seq := range count {
						for to := range n {
							if to == from {
								continue
							}
							args := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(g)), uint32(seq))
							p := &Parcel{Header: Header{Kind: KindControl, Dest: uint32(to), Action: "seq", Args: args}}
							if err := ports[from].Send(ctx, p); err != nil {
								t.Errorf("send %d -> %d: %v", from, to, err)
								return
							}
						}
					}
				}()
			}
		}
		wg.Wait()
		const each = (n - 1) * senders * count
		for to, r := range recs {
			r.waitParcels(t, each)
			got := r.received()
			if len(got) != each {
				t.Fatalf("locality %d got %d parcels, want %d", to, len(got), each)
			}
			var next [n][senders]uint32
			for _, p := range got {
				from := p.Header.Source
				if from >= n || int(from) == to || len(p.Header.Args) != 8 {
					t.Fatalf("locality %d got a stray parcel %+v", to, p.Header)
				}
				g := binary.LittleEndian.Uint32(p.Header.Args)
				seq := binary.LittleEndian.Uint32(p.Header.Args[4:])
				if g >= senders {
					t.Fatalf("locality %d got a parcel from goroutine %d", to, g)
				}
				if seq != next[from][g] {
					t.Fatalf("locality %d: from %d goroutine %d got sequence number %d, want %d", to, from, g, seq, next[from][g])
				}
				next[from][g]++
			}
			for from := range n {
				for g := range senders {
					if from != to && next[from][g] != count {
						t.Fatalf("locality %d: from %d goroutine %d got %d parcels, want %d", to, from, g, next[from][g], count)
					}
				}
			}
		}
	})

	t.Run("LargeChunk", func(t *testing.T) {
		const size = 32 << 20
		dst := make([]byte, size)
		small := make([]byte, 16)
		ports, recs := start(t, 2, func(i int, r *recorder) {
			r.buffer = func(h *Header, i int, n int) []byte {
				switch {
				case h.Action != "large":
				case i == 0 && n == size:
					return dst
				case i == 1 && n == len(small):
					return small
				}
				return nil
			}
		})
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i*131 + i>>11)
		}
		tail := []byte("the end of it...")
		p := &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "large"}, Chunks: [][]byte{src, tail}}
		if err := ports[1].Send(ctx, p); err != nil {
			t.Fatal(err)
		}
		recs[0].waitParcels(t, 1)
		got := recs[0].received()[0]
		if len(got.Chunks) != 2 || len(got.Chunks[0]) != size {
			t.Fatalf("got %d chunks", len(got.Chunks))
		}
		if &got.Chunks[0][0] != &dst[0] || &got.Chunks[1][0] != &small[0] {
			t.Fatal("chunks were not read into the memory the handler provided")
		}
		if !bytes.Equal(dst, src) {
			t.Fatal("the large chunk arrived damaged")
		}
		if !bytes.Equal(small, tail) {
			t.Fatalf("the small chunk arrived as %q", small)
		}
	})

	t.Run("Counters", func(t *testing.T) {
		const n = 3
		ports, recs := start(t, n, nil)
		sent := func(from, to int) int { return 10*(from+1) + to }
		var wg sync.WaitGroup
		for from := range n {
			for to := range n {
				if from == to {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range sent(from, to) {
						p := &Parcel{Header: Header{Kind: KindCall, Dest: uint32(to), Action: "count"}, Chunks: [][]byte{make([]byte, k)}}
						if err := ports[from].Send(ctx, p); err != nil {
							t.Errorf("send %d -> %d: %v", from, to, err)
							return
						}
					}
				}()
			}
		}
		wg.Wait()
		for to, r := range recs {
			want := 0
			for from := range n {
				if from != to {
					want += sent(from, to)
				}
			}
			r.waitParcels(t, want)
		}
		// Parcel counts are exact once everything has arrived; byte counts
		// include heartbeats, one of which may be on the way, so they are
		// compared until they agree.
		var ctrs [][]PeerCounters
		deadline := time.Now().Add(hangLimit)
		for {
			ctrs = make([][]PeerCounters, n)
			for i, p := range ports {
				ctrs[i] = p.Counters()
			}
			problem := ""
			for a := range n {
				if len(ctrs[a]) != n-1 {
					t.Fatalf("locality %d has counters for %d peers, want %d", a, len(ctrs[a]), n-1)
				}
				for _, c := range ctrs[a] {
					b := int(c.Peer)
					var back PeerCounters
					for _, bc := range ctrs[b] {
						if int(bc.Peer) == a {
							back = bc
						}
					}
					if c.ParcelsSent != uint64(sent(a, b)) {
						t.Fatalf("locality %d counts %d parcels sent to %d, want %d", a, c.ParcelsSent, b, sent(a, b))
					}
					if back.ParcelsReceived != c.ParcelsSent {
						t.Fatalf("locality %d sent %d parcels to %d, which counts %d received", a, c.ParcelsSent, b, back.ParcelsReceived)
					}
					if c.Writes > c.ParcelsSent+c.BytesSent {
						t.Fatalf("locality %d: %d writes for %d parcels sent to %d", a, c.Writes, c.ParcelsSent, b)
					}
					if c.Writes == 0 {
						// A write is counted once it returns, which can be
						// after the peer has read what it wrote.
						problem = fmt.Sprintf("locality %d: no write counted for %d parcels sent to %d", a, c.ParcelsSent, b)
					}
					if c.BytesSent < c.ParcelsSent*uint64(frameHeadLen) {
						// Bytes, like writes, count once a write returns.
						problem = fmt.Sprintf("locality %d: %d bytes sent for %d parcels", a, c.BytesSent, c.ParcelsSent)
					}
					if back.BytesReceived != c.BytesSent || c.QueueLen != 0 {
						problem = fmt.Sprintf("locality %d sent %d bytes to %d (queue %d), which counts %d received", a, c.BytesSent, b, c.QueueLen, back.BytesReceived)
					}
				}
			}
			if problem == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal(problem)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("CountersWhileBusy", func(t *testing.T) {
		// Every locality asks for its counters while all of them send.
		const n = 3
		ports, recs := start(t, n, nil)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for from := range n {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if c := ports[from].Counters(); len(c) != n-1 {
						t.Errorf("locality %d has counters for %d peers", from, len(c))
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				for k := range 200 {
					p := &Parcel{Header: Header{Kind: KindCall, Dest: uint32((from + 1 + k%(n-1)) % n)}}
					if err := ports[from].Send(ctx, p); err != nil {
						t.Errorf("send: %v", err)
						return
					}
				}
			}()
		}
		for _, r := range recs {
			r.waitParcels(t, 200)
		}
		close(stop)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(hangLimit):
			t.Fatal("Counters deadlocks")
		}
	})

	t.Run("CloseIsGoodbye", func(t *testing.T) {
		const n = 3
		ports, recs := start(t, n, nil)
		// Parcels sent before Close still arrive.
		const before = 50
		for k := range before {
			for to := range n - 1 {
				p := &Parcel{Header: Header{Kind: KindControl, Dest: uint32(to), Action: "before close", Request: uint64(k)}, Chunks: [][]byte{{byte(k)}}}
				if err := ports[n-1].Send(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := ports[n-1].Close(); err != nil {
			t.Fatal(err)
		}
		for to := range n - 1 {
			recs[to].waitParcels(t, before)
			for k, p := range recs[to].received() {
				if p.Header.Request != uint64(k) {
					t.Fatalf("locality %d got parcel %d in place %d", to, p.Header.Request, k)
				}
			}
			// The others learn that locality n-1 has left, not that it is
			// lost: a send fails with ErrClosed.
			deadline := time.Now().Add(hangLimit)
			for {
				err := ports[to].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: n - 1}})
				if err != nil {
					if !errors.Is(err, ErrClosed) || errors.Is(err, ErrPeerDown) {
						t.Fatalf("locality %d sending to the closed locality: %v, want ErrClosed", to, err)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("locality %d can still send to the closed locality", to)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if d := recs[to].peerDowns(); len(d) != 0 {
				t.Fatalf("locality %d was told of a loss: %v", to, d[0].err)
			}
		}
		// The two that are left still talk.
		if err := ports[1].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "still here"}}); err != nil {
			t.Fatal(err)
		}
		recs[0].wait(t, "a parcel from locality 1", func(p []*Parcel, _ []peerDown) bool {
			return len(p) > 0 && p[len(p)-1].Header.Action == "still here"
		})
		if err := ports[n-1].Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})

	t.Run("SendAfterClose", func(t *testing.T) {
		ports, _ := start(t, 2, nil)
		if err := ports[0].Close(); err != nil {
			t.Fatal(err)
		}
		err := ports[0].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 1}})
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Send after Close: %v, want ErrClosed", err)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := ports[0].Connect(ctx, 1, ports[1].Addr()); err == nil {
			t.Fatal("Connect after Close succeeded")
		}
	})

	t.Run("SendUnconnected", func(t *testing.T) {
		ports, recs := start(t, 2, nil)
		for _, dest := range []uint32{7, 0} { // a stranger, and itself
			err := ports[0].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: dest}})
			var pe *PeerError
			if !errors.As(err, &pe) || pe.Locality != dest || !strings.Contains(err.Error(), fmt.Sprintf("locality %d", dest)) {
				t.Fatalf("Send to unconnected locality %d: %v, want a *PeerError naming it", dest, err)
			}
		}
		if len(recs[0].received())+len(recs[1].received()) != 0 {
			t.Fatal("something was delivered")
		}
	})

	t.Run("InvalidParcelsCostNothing", func(t *testing.T) {
		ports, recs := start(t, 2, nil)
		bad := map[string]*Parcel{
			"kind zero":      {Header: Header{Dest: 0}},
			"unknown kind":   {Header: Header{Kind: 99, Dest: 0}},
			"heartbeat":      {Header: Header{Kind: KindHeartbeat, Dest: 0, Action: byeVerb}},
			"args too long":  {Header: Header{Kind: KindCall, Dest: 0, Args: make([]byte, maxArgs+1)}},
			"too many chunk": {Header: Header{Kind: KindCall, Dest: 0}, Chunks: make([][]byte, maxChunks+1)},
		}
		for name, p := range bad {
			if err := ports[1].Send(ctx, p); err == nil {
				t.Errorf("%s: sent", name)
			}
		}
		// The connection is unharmed.
		if err := ports[1].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "fine"}}); err != nil {
			t.Fatal(err)
		}
		recs[0].waitParcels(t, 1)
		if got := recs[0].received(); len(got) != 1 || got[0].Header.Action != "fine" {
			t.Fatalf("got %d parcels", len(got))
		}
	})
}
