package parcel

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The NBIO parcelport's own tests: its window. The behaviour it shares
// with the other parcelports is the conformance suite's
// (nbio_conformance_test.go).
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
	// Collect what earlier tests left first: the heap then starts from what
	// is live, and the collector's next target is set by this test alone.
	// (After the conformance suite's large payloads, an uncollected heap of
	// 80 MiB let this test's own garbage grow by 60 MiB before a cycle.)
	runtime.GC()
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
