//go:build linux

package parcel

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// onceRecorder is a Recycler that checks each parcel as it comes and keeps
// none: the port reads the next one into the same memory.
type onceRecorder struct {
	*recorder
	inside atomic.Int32 // ReceiveOnce calls running now
	each   func(p *Parcel)
}

func (h *onceRecorder) Receive(p *Parcel) { h.ReceiveOnce(p) }

func (h *onceRecorder) ReceiveOnce(p *Parcel) bool {
	if h.inside.Add(1) != 1 {
		panic("the handler was called for one peer by two goroutines at once")
	}
	h.each(p)
	h.inside.Add(-1)
	return false
}

// TestSHMPollSharesTheRing: while the ring reader runs, other goroutines
// read the same ring through Poll, and the handler, which keeps no parcel
// (so each is read into the memory of the one before), gets every frame
// once, in order, its header and small chunk intact, never two at once.
// Run it with -race.
func TestSHMPollSharesTheRing(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	var got, sum uint64
	done := make(chan struct{})
	each := func(p *Parcel) {
		v := binary.LittleEndian.Uint64(p.Header.Args)
		if len(p.Chunks) != 1 || len(p.Chunks[0]) != 16 || binary.LittleEndian.Uint64(p.Chunks[0][8:]) != v {
			t.Errorf("frame %d: chunks %v do not carry its number", v, p.Chunks)
		}
		if v != got {
			t.Errorf("frame %d arrived in place %d", v, got)
		}
		got++
		sum += v
		if got == uint64(n) {
			close(done)
		}
	}
	ports, _ := shmPairWith(t, SHMConfig{TCPConfig: TCPConfig{PollFor: time.Millisecond}, RingBytes: 64 << 10}, nil, func(i int, r *recorder) Handler {
		if i == 0 {
			return &onceRecorder{recorder: r, each: each}
		}
		return r
	})
	onRing(t, ports)
	var polled atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if ports[0].Poll() {
					polled.Add(1)
				}
			}
		}()
	}
	go func() {
		var args [8]byte
		chunk := make([]byte, 16)
		for i := range n {
			binary.LittleEndian.PutUint64(args[:], uint64(i))
			binary.LittleEndian.PutUint64(chunk[8:], uint64(i))
			if err := ports[1].Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 0, Args: args[:]}, Chunks: [][]byte{chunk}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("frames missing after 2 minutes")
	}
	close(stop)
	wg.Wait()
	if want := uint64(n) * uint64(n-1) / 2; sum != want {
		t.Fatalf("sum of frame numbers %d, want %d", sum, want)
	}
	if polled.Load() == 0 {
		t.Fatal("Poll never took anything from the ring: the test tested the reader alone")
	}
	t.Logf("%d frames, %d batches taken by Poll", n, polled.Load())
}

// TestSHMPollHostileEntry: a frame that fails its checks is an error
// naming its writer, reported once, whether Poll or the ring reader
// takes it out.
func TestSHMPollHostileEntry(t *testing.T) {
	ports, recs := shmPair(t, SHMConfig{TCPConfig: TCPConfig{PollFor: time.Millisecond}}, nil)
	onRing(t, ports)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				ports[0].Poll()
			}
		}
	}()
	bad := binary.LittleEndian.AppendUint64(nil, 8)
	bad = binary.LittleEndian.AppendUint32(bad, 8)
	bad = append(bad, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1)
	writeRaw(ports[1], ports[1].slot(0, false), bad)
	d := recs[0].waitDown(t)
	var pe *PeerError
	if d.peer != 1 || !errors.As(d.err, &pe) || pe.Locality != 1 || !errors.Is(d.err, ErrPeerDown) || !strings.Contains(d.err.Error(), "header") {
		t.Fatalf("peer %d down: %v; want locality 1 named, ErrPeerDown and the header", d.peer, d.err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(recs[0].peerDowns()); n != 1 {
		t.Fatalf("locality 0 was told %d times", n)
	}
}
