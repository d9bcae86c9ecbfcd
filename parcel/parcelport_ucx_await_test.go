//go:build ucx

package parcel

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Callers that progress the worker themselves (UCX.Await) take messages
// next to the progress goroutine: a peer's parcels still reach the
// handler in the order sent, and a caller's Await returns once what it
// waits for came.

// ucxOrder records the sequence numbers its parcels carry, in the order
// the handler got them.
type ucxOrder struct {
	mu   sync.Mutex
	seqs []uint64
	n    atomic.Int64
}

func (o *ucxOrder) Buffer(*Header, int, int) []byte { return nil }
func (o *ucxOrder) PeerDown(uint32, error)          {}
func (o *ucxOrder) Receive(p *Parcel) {
	o.mu.Lock()
	o.seqs = append(o.seqs, binary.LittleEndian.Uint64(p.Header.Args))
	o.mu.Unlock()
	o.n.Add(1)
}

func openUCXPair(t *testing.T, h0, h1 Handler) (u0, u1 *UCX) {
	t.Helper()
	t.Setenv("UCX_TLS", "sm,self")
	open := func(id uint32, h Handler) *UCX {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u, err := NewUCX(UCXConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: []byte("tessera-ucx-await-test-secret-32"), Handler: h}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		return u
	}
	u0, u1 = open(0, h0), open(1, h1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := u1.Connect(ctx, 0, u0.Addr()); err != nil {
		t.Fatal(err)
	}
	return u0, u1
}

func TestUCXAwaitKeepsOrder(t *testing.T) {
	const total = 20000
	got := &ucxOrder{}
	u0, u1 := openUCXPair(t, got, &ucxEcho{make(chan *Parcel, 1)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Callers on locality 0 progress its worker, each until a share of
	// the parcels came, while the progress goroutine steps in whenever
	// none does.
	var wg sync.WaitGroup
	var took atomic.Int64
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for target := int64(c + 1); target <= total; target += 3 {
				for !u0.Await(func() bool { return got.n.Load() >= target }) {
					if ctx.Err() != nil {
						return
					}
					time.Sleep(time.Duration(c) * time.Microsecond)
				}
				took.Add(1)
			}
		}()
	}
	for i := range uint64(total) {
		args := binary.LittleEndian.AppendUint64(nil, i)
		if err := u1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "seq", Args: args}, Chunks: [][]byte{make([]byte, 64)}}); err != nil {
			t.Fatalf("send %d from locality 1 to 0: %v", i, err)
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("locality 0 got %d of %d parcels within a minute", got.n.Load(), total)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.seqs) != total {
		t.Fatalf("locality 0 got %d parcels from locality 1, want %d", len(got.seqs), total)
	}
	for i, s := range got.seqs {
		if s != uint64(i) {
			t.Fatalf("locality 0 got parcel %d of locality 1 in place %d: out of order", s, i)
		}
	}
	if took.Load() == 0 {
		t.Fatal("no Await at locality 0 saw its parcel come")
	}
}

// ucxByCaller counts the parcels it got, and those a caller's Await
// delivered: its goroutine's stack shows UCX.Await.
type ucxByCaller struct {
	n, shown atomic.Int64
}

func (h *ucxByCaller) Buffer(*Header, int, int) []byte { return nil }
func (h *ucxByCaller) PeerDown(uint32, error)          {}
func (h *ucxByCaller) Receive(*Parcel) {
	buf := make([]byte, 16<<10)
	if bytes.Contains(buf[:goruntime.Stack(buf, false)], []byte("(*UCX).Await(")) {
		h.shown.Add(1)
	}
	h.n.Add(1)
}

func TestUCXAwaitTakesTheMessage(t *testing.T) {
	t.Setenv("UCX_TLS", "sm,self")
	h := &ucxByCaller{}
	open := func(id uint32, h Handler) *UCX {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// A spin of a second: a caller's Await lasts until its
		// message comes.
		u, err := newUCX(UCXConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: []byte("tessera-ucx-await-test-secret-32"), Handler: h}}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		return u
	}
	u0, u1 := open(0, &ucxEcho{make(chan *Parcel, 1)}), open(1, h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := u1.Connect(ctx, 0, u0.Addr()); err != nil {
		t.Fatal(err)
	}
	// Each try: a caller at locality 1 awaits a parcel; once it polls,
	// locality 0 sends the parcel. On a loaded machine the progress
	// goroutine, woken by the message, may take it first: some of the
	// tries must see the caller take it.
	const tries = 50
	for i := range int64(tries) {
		want := i + 1
		ok := make(chan bool, 1)
		go func() {
			for ctx.Err() == nil {
				// As if the cores were free: a loaded machine (other
				// tests, the race detector) marks them shared, and the
				// caller would not poll at all.
				u1.shared.Store(0)
				if u1.Await(func() bool { return h.n.Load() >= want }) {
					ok <- true
					return
				}
				if h.n.Load() >= want {
					ok <- false
					return
				}
				time.Sleep(10 * time.Microsecond)
			}
			ok <- false
		}()
		for u1.callers.Load() == 0 && ctx.Err() == nil {
			time.Sleep(10 * time.Microsecond)
		}
		time.Sleep(100 * time.Microsecond)
		if err := u0.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 1, Action: "await"}}); err != nil {
			t.Fatalf("try %d: send from locality 0 to 1: %v", i, err)
		}
		<-ok
		if h.n.Load() != want {
			t.Fatalf("try %d: locality 1 got %d parcels from locality 0, want %d", i, h.n.Load(), want)
		}
	}
	if h.shown.Load() == 0 {
		t.Fatalf("none of %d parcels at locality 1 came through an awaiting caller", tries)
	}
	t.Logf("%d of %d parcels delivered by the awaiting caller", h.shown.Load(), tries)
}
