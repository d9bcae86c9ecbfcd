package parceltest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// recorder is a Handler that keeps what it is given, for the suite to
// inspect and wait on.
type recorder struct {
	// buffer, when set before the port starts, provides chunk memory.
	buffer func(h *parcel.Header, i int, n int) []byte

	mu      sync.Mutex
	parcels []*parcel.Parcel
	downs   []peerDown
	poke    chan struct{} // a token whenever something arrives
}

type peerDown struct {
	peer uint32
	err  error
}

func newRecorder() *recorder { return &recorder{poke: make(chan struct{}, 1)} }

func (r *recorder) Buffer(h *parcel.Header, i int, n int) []byte {
	if r.buffer != nil {
		return r.buffer(h, i, n)
	}
	return nil
}

func (r *recorder) Receive(p *parcel.Parcel) {
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
// the test after HangLimit.
func (r *recorder) wait(t testing.TB, what string, cond func(parcels []*parcel.Parcel, downs []peerDown) bool) {
	t.Helper()
	deadline := time.NewTimer(HangLimit)
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
			t.Fatalf("gave up waiting for %s after %v (%d parcels, %d peers down)", what, HangLimit, n, d)
		}
	}
}

// waitParcels waits until at least n parcels have arrived.
func (r *recorder) waitParcels(t testing.TB, n int) {
	t.Helper()
	r.wait(t, fmt.Sprintf("%d parcels", n), func(p []*parcel.Parcel, _ []peerDown) bool { return len(p) >= n })
}

// waitDown waits for a PeerDown and returns the first.
func (r *recorder) waitDown(t testing.TB) peerDown {
	t.Helper()
	r.wait(t, "a peer to go down", func(_ []*parcel.Parcel, d []peerDown) bool { return len(d) > 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.downs[0]
}

func (r *recorder) received() []*parcel.Parcel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*parcel.Parcel(nil), r.parcels...)
}

func (r *recorder) peerDowns() []peerDown {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]peerDown(nil), r.downs...)
}
