package parceltest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// The subtests every transport runs.

// sameHeader reports whether a and b are equal, a nil and an empty slice
// counting as the same.
func sameHeader(a, b *parcel.Header) bool {
	return a.Version == b.Version && a.Kind == b.Kind && a.Source == b.Source && a.Dest == b.Dest &&
		a.Action == b.Action && a.Request == b.Request && a.Parent == b.Parent &&
		a.Code == b.Code && a.Error == b.Error && bytes.Equal(a.Args, b.Args) && slices.Equal(a.Chunks, b.Chunks)
}

// exchange: every locality sends one parcel to every other, with
// arguments and chunks (one of them empty); each arrives once and intact.
func (s *suite) exchange(t *testing.T) {
	const n = 3
	ctx := context.Background()
	ports, recs := s.startN(t, n, nil)
	payload := func(from, to int) (parcel.Header, [][]byte) {
		h := parcel.Header{Kind: parcel.KindCall, Dest: uint32(to), Action: fmt.Sprintf("from %d to %d", from, to),
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
				if err := ports[from].Send(ctx, &parcel.Parcel{Header: h, Chunks: chunks}); err != nil {
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
			h.Source, h.Version = uint32(from), parcel.HeaderVersion
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
}

// ordering: four localities, four goroutines each, all sending to all;
// every goroutine's parcels arrive at each peer in the order sent.
func (s *suite) ordering(t *testing.T) {
	const (
		n       = 4
		senders = 4    // goroutines per locality
		count   = 2000 // parcels per goroutine and destination
	)
	ctx := context.Background()
	ports, recs := s.startN(t, n, nil)
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
						p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindControl, Dest: uint32(to), Action: "seq", Args: args}}
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
}

// pattern returns n bytes that differ from seed to seed and along the
// slice, so that a shifted or mixed-up copy shows.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>11 + seed*17)
	}
	return b
}

// largePayloads: a 32 MiB chunk and a small one are read into the memory
// the handler provides; parcels of chunks of odd sizes, around the sizes
// where transports change their ways (copies, writev, windows), arrive
// intact, provided memory or not.
func (s *suite) largePayloads(t *testing.T) {
	const size = 32 << 20
	dst := make([]byte, size)
	small := make([]byte, 16)
	provided := map[[2]uint64][]byte{} // by request and chunk, for the odd sizes
	var mu sync.Mutex
	ctx := context.Background()
	ports, recs := s.startN(t, 2, func(i int, r *recorder, _ *Options) {
		r.buffer = func(h *parcel.Header, i int, n int) []byte {
			switch {
			case h.Action == "odd" && i%2 == 0:
				mu.Lock()
				defer mu.Unlock()
				b := make([]byte, n)
				provided[[2]uint64{h.Request, uint64(i)}] = b
				return b
			case h.Action != "large":
			case i == 0 && n == size:
				return dst
			case i == 1 && n == len(small):
				return small
			}
			return nil
		}
	})
	src := pattern(size, 0)
	tail := []byte("the end of it...")
	p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "large"}, Chunks: [][]byte{src, tail}}
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

	// Odd sizes, one parcel each, then all of them in one parcel.
	sizes := []int{1, 7, 63, 64, 65, 4095, 4097, 16<<10 + 1, 64<<10 - 1, 256<<10 + 3, 1<<20 + 5, 4<<20 + 9}
	var sent [][][]byte
	for k, n := range sizes {
		chunks := [][]byte{pattern(n, k), pattern(n/2+1, k+100)}
		sent = append(sent, chunks)
	}
	all := make([][]byte, 0, len(sizes))
	for k, n := range sizes {
		all = append(all, pattern(n, k+200))
	}
	sent = append(sent, all)
	for k, chunks := range sent {
		p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 1, Action: "odd", Request: uint64(k)}, Chunks: chunks}
		if err := ports[0].Send(ctx, p); err != nil {
			t.Fatalf("parcel %d: %v", k, err)
		}
	}
	recs[1].waitParcels(t, len(sent))
	for k, p := range recs[1].received() {
		if p.Header.Request != uint64(k) || len(p.Chunks) != len(sent[k]) {
			t.Fatalf("parcel %d arrived as request %d with %d chunks, want %d", k, p.Header.Request, len(p.Chunks), len(sent[k]))
		}
		for i, c := range p.Chunks {
			if !bytes.Equal(c, sent[k][i]) {
				t.Fatalf("parcel %d: chunk %d of %d bytes arrived damaged", k, i, len(sent[k][i]))
			}
			mu.Lock()
			mem := provided[[2]uint64{uint64(k), uint64(i)}]
			mu.Unlock()
			if i%2 == 0 && &c[0] != &mem[0] {
				t.Errorf("parcel %d: chunk %d of %d bytes was not read into the memory provided", k, i, len(c))
			}
		}
	}
}

// counters: exact parcel counts per peer, bytes the peer agrees with,
// writes no more than parcels and bytes.
func (s *suite) counters(t *testing.T) {
	const n = 3
	ctx := context.Background()
	ports, recs := s.startN(t, n, nil)
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
					p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: uint32(to), Action: "count"}, Chunks: [][]byte{make([]byte, k)}}
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
	var ctrs [][]parcel.PeerCounters
	deadline := time.Now().Add(HangLimit)
	for {
		ctrs = make([][]parcel.PeerCounters, n)
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
				var back parcel.PeerCounters
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
				if c.BytesSent < c.ParcelsSent*uint64(parcel.FrameHeadLen) {
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
}

// countersWhileBusy: every locality asks for its counters while all of
// them send.
func (s *suite) countersWhileBusy(t *testing.T) {
	const n = 3
	ctx := context.Background()
	ports, recs := s.startN(t, n, nil)
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
				p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: uint32((from + 1 + k%(n-1)) % n)}}
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
	case <-time.After(HangLimit):
		t.Fatal("Counters deadlocks")
	}
}

// invalidParcels: parcels a reader would refuse are refused by Send, and
// the connection is unharmed.
func (s *suite) invalidParcels(t *testing.T) {
	ctx := context.Background()
	ports, recs := s.startN(t, 2, nil)
	bad := map[string]*parcel.Parcel{
		"kind zero":      {Header: parcel.Header{Dest: 0}},
		"unknown kind":   {Header: parcel.Header{Kind: 99, Dest: 0}},
		"heartbeat":      {Header: parcel.Header{Kind: parcel.KindHeartbeat, Dest: 0}},
		"goodbye":        {Header: parcel.Header{Kind: parcel.KindHeartbeat, Dest: 0, Action: "bye"}},
		"args too long":  {Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Args: make([]byte, parcel.MaxArgs+1)}},
		"too many chunk": {Header: parcel.Header{Kind: parcel.KindCall, Dest: 0}, Chunks: make([][]byte, parcel.MaxChunks+1)},
	}
	for name, p := range bad {
		if err := ports[1].Send(ctx, p); err == nil {
			t.Errorf("%s: sent", name)
		}
	}
	// The connection is unharmed.
	if err := ports[1].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "fine"}}); err != nil {
		t.Fatal(err)
	}
	recs[0].waitParcels(t, 1)
	if got := recs[0].received(); len(got) != 1 || got[0].Header.Action != "fine" {
		t.Fatalf("got %d parcels", len(got))
	}
}

// sendUnconnected: a Send to a stranger, or to itself, names the locality.
func (s *suite) sendUnconnected(t *testing.T) {
	ctx := context.Background()
	ports, recs := s.startN(t, 2, nil)
	for _, dest := range []uint32{7, 0} { // a stranger, and itself
		err := ports[0].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: dest}})
		var pe *parcel.PeerError
		if !errors.As(err, &pe) || pe.Locality != dest || !strings.Contains(err.Error(), fmt.Sprintf("locality %d", dest)) {
			t.Fatalf("Send to unconnected locality %d: %v, want a *PeerError naming it", dest, err)
		}
	}
	if len(recs[0].received())+len(recs[1].received()) != 0 {
		t.Fatal("something was delivered")
	}
}
