package parceltest

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// The subtests of leaving: Close, and peers that die.

// closeIsGoodbye: parcels sent before Close arrive; the others learn the
// locality left, not that it was lost, and go on talking.
func (s *suite) closeIsGoodbye(t *testing.T) {
	const n = 3
	ctx := context.Background()
	ports, recs := s.startN(t, n, nil)
	// Parcels sent before Close still arrive.
	const before = 50
	for k := range before {
		for to := range n - 1 {
			p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindControl, Dest: uint32(to), Action: "before close", Request: uint64(k)}, Chunks: [][]byte{{byte(k)}}}
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
		deadline := time.Now().Add(HangLimit)
		for {
			err := ports[to].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: n - 1}})
			if err != nil {
				if !errors.Is(err, parcel.ErrClosed) || errors.Is(err, parcel.ErrPeerDown) {
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
	if err := ports[1].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "still here"}}); err != nil {
		t.Fatal(err)
	}
	recs[0].wait(t, "a parcel from locality 1", func(p []*parcel.Parcel, _ []peerDown) bool {
		return len(p) > 0 && p[len(p)-1].Header.Action == "still here"
	})
	if err := ports[n-1].Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// sendAfterClose: Send fails with ErrClosed, Connect fails.
func (s *suite) sendAfterClose(t *testing.T) {
	ctx := context.Background()
	ports, _ := s.startN(t, 2, nil)
	if err := ports[0].Close(); err != nil {
		t.Fatal(err)
	}
	err := ports[0].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 1}})
	if !errors.Is(err, parcel.ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := ports[0].Connect(ctx, 1, ports[1].Addr()); err == nil {
		t.Fatal("Connect after Close succeeded")
	}
}

// closeWhileSending: Close returns while goroutines keep sending, small
// parcels and large; each Send returns nil or ErrClosed, and exactly the
// parcels sent with nil arrive, in order. With a byte stream, also a peer
// that does not read.
func (s *suite) closeWhileSending(t *testing.T) {
	const senders = 4
	ctx := context.Background()
	ports, recs := s.startN(t, 2, nil)
	var ok [senders]int // parcels each sender sent with nil
	var wg sync.WaitGroup
	large := make([]byte, 256<<10)
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				var chunks [][]byte
				if seq%8 == g {
					chunks = [][]byte{large}
				}
				args := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(g)), uint32(seq))
				err := ports[1].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Args: args}, Chunks: chunks})
				if err != nil {
					if !errors.Is(err, parcel.ErrClosed) || errors.Is(err, parcel.ErrPeerDown) {
						t.Errorf("sender %d: Send while closing: %v, want ErrClosed", g, err)
					}
					return
				}
				ok[g]++
			}
		}()
	}
	recs[0].waitParcels(t, 100)
	closed := make(chan error, 1)
	go func() { closed <- ports[1].Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(HangLimit):
		t.Fatal("Close hangs while goroutines send")
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(HangLimit):
		t.Fatal("senders still blocked after Close")
	}
	var next [senders]int
	for _, p := range recs[0].received() {
		g := binary.LittleEndian.Uint32(p.Header.Args)
		seq := int(binary.LittleEndian.Uint32(p.Header.Args[4:]))
		if g >= senders || seq != next[g] {
			t.Fatalf("from sender %d got parcel %d, want %d", g, seq, next[g])
		}
		next[g]++
	}
	for g := range senders {
		if next[g] != ok[g] {
			t.Errorf("sender %d sent %d parcels with nil, %d arrived", g, ok[g], next[g])
		}
	}
	if d := recs[0].peerDowns(); len(d) != 0 {
		t.Fatalf("closing reported a loss: %v", d[0].err)
	}

	t.Run("PeerNotReading", func(t *testing.T) {
		s.needDial(t)
		rec := newRecorder()
		port := s.newJob(t).start(Options{Locality: 0, Handler: rec})
		raw := s.dial(t, port, 1, 0)
		// The peer is alive, its heartbeats say so, but it never reads.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			hb := appendFrame(t, nil, parcel.Header{Kind: parcel.KindHeartbeat, Source: 1}, nil)
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
			sent <- port.Send(context.Background(), &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 1}, Chunks: [][]byte{make([]byte, 64<<20)}})
		}()
		time.Sleep(300 * time.Millisecond) // not a bound: lets the socket buffers fill
		if len(sent) != 0 {
			t.Fatalf("64 MiB were written to a peer that does not read: %v", <-sent)
		}
		closed := make(chan error, 1)
		go func() { closed <- port.Close() }()
		select {
		case <-closed:
		case <-time.After(HangLimit):
			t.Fatal("Close hangs on a peer that does not read")
		}
		select {
		case err := <-sent:
			if err == nil {
				t.Fatal("a send that could not be written succeeded")
			}
		case <-time.After(HangLimit):
			t.Fatal("Send still blocked after Close")
		}
		if d := rec.peerDowns(); len(d) != 0 {
			t.Fatalf("closing reported a loss: %v", d[0].err)
		}
	})
}

// deadPeer: a peer that dies — killed, or its stream closed without a
// goodbye — is reported down; what it sent before arrives; Sends to it
// fail with ErrPeerDown.
func (s *suite) deadPeer(t *testing.T) {
	check := func(t *testing.T, port parcel.Parcelport, rec *recorder, peer uint32) {
		t.Helper()
		down := rec.waitDown(t)
		if down.peer != peer || !errors.Is(down.err, parcel.ErrPeerDown) {
			t.Fatalf("PeerDown(%d, %v), want locality %d and ErrPeerDown", down.peer, down.err, peer)
		}
		if got := rec.received(); len(got) != 1 || got[0].Header.Action != "last words" {
			t.Fatalf("got %d parcels, want the last words", len(got))
		}
		if err := port.Send(context.Background(), &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: peer}}); !errors.Is(err, parcel.ErrPeerDown) {
			t.Fatalf("Send to the lost peer: %v, want ErrPeerDown", err)
		}
		if d := rec.peerDowns(); len(d) != 1 {
			t.Fatalf("PeerDown called %d times", len(d))
		}
	}
	t.Run("Killed", func(t *testing.T) {
		j := s.newJob(t)
		if j.Kill == nil {
			t.Skip("the transport cannot kill a locality (Job.Kill is nil)")
		}
		r0, r1 := newRecorder(), newRecorder()
		p0 := j.start(Options{Locality: 0, Handler: r0})
		p1 := j.start(Options{Locality: 1, Handler: r1})
		connectAll(t, []parcel.Parcelport{p0, p1})
		if err := p1.Send(context.Background(), &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "last words"}}); err != nil {
			t.Fatal(err)
		}
		r0.waitParcels(t, 1)
		j.Kill(1)
		check(t, p0, r0, 1)
	})
	t.Run("StreamClosed", func(t *testing.T) {
		s.needDial(t)
		rec := newRecorder()
		port := s.newJob(t).start(Options{Locality: 0, Handler: rec})
		raw := s.dial(t, port, 3, 0)
		if _, err := raw.Write(appendFrame(t, nil, parcel.Header{Kind: parcel.KindCall, Source: 3, Dest: 0, Action: "last words"}, nil)); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		check(t, port, rec, 3)
	})
}
