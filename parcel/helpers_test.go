package parcel

import (
	"context"
	"fmt"
	"log/slog"
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
