package parceltest

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// The subtests of what a peer sends on the wire, and of the optional
// capabilities.

// appendFrame appends a whole frame, head and chunks, to dst.
func appendFrame(t testing.TB, dst []byte, h parcel.Header, chunks [][]byte) []byte {
	t.Helper()
	dst, err := parcel.AppendFrameHead(dst, &h, chunks)
	if err != nil {
		t.Fatalf("AppendFrameHead: %v", err)
	}
	for _, c := range chunks {
		dst = append(dst, c...)
	}
	return dst
}

// frameHead returns a frame prefix declaring body and header lengths.
func frameHead(body uint64, hlen uint32) []byte {
	b := make([]byte, parcel.FrameHeadLen)
	binary.LittleEndian.PutUint64(b, body)
	binary.LittleEndian.PutUint32(b[8:], hlen)
	return b
}

// encodeHeader encodes h as is, version included.
func encodeHeader(t testing.TB, h parcel.Header) []byte {
	t.Helper()
	b, err := h.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// frameWithHeader wraps an encoded header, followed by chunkBytes zero
// bytes of chunks, in a frame.
func frameWithHeader(hdr []byte, chunkBytes int) []byte {
	f := frameHead(uint64(len(hdr)+chunkBytes), uint32(len(hdr)))
	f = append(f, hdr...)
	return append(f, make([]byte, chunkBytes)...)
}

// allocatedBy returns the bytes the process allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// waitClosed reads from c until the other end closes it.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(HangLimit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the parcelport did not close the connection")
	}
}

// hostileFrames: after a good frame, a bad one, then a good one again. The
// port delivers the first, refuses the bad one with a *FrameError, reports
// the peer down and closes the stream.
func (s *suite) hostileFrames(t *testing.T) {
	s.needDial(t)
	hdr := func(h parcel.Header) []byte { return encodeHeader(t, h) }
	frames := map[string][]byte{
		"garbage header":  append(frameHead(20, 20), make([]byte, 20)...),
		"other version":   frameWithHeader(hdr(parcel.Header{Version: parcel.HeaderVersion + 1, Kind: parcel.KindCall}), 0),
		"unknown kind":    frameWithHeader(hdr(parcel.Header{Version: parcel.HeaderVersion, Kind: 42}), 0),
		"chunks add up":   frameWithHeader(hdr(parcel.Header{Version: parcel.HeaderVersion, Kind: parcel.KindCall, Chunks: []uint64{4, 4}}), 9),
		"chunks wrap":     frameWithHeader(hdr(parcel.Header{Version: parcel.HeaderVersion, Kind: parcel.KindCall, Chunks: []uint64{5, 1<<64 - 2, 4}}), 7),
		"too many chunks": frameWithHeader(hdr(parcel.Header{Version: parcel.HeaderVersion, Kind: parcel.KindCall, Chunks: make([]uint64, parcel.MaxChunks+1)}), 0),
		"args too long":   frameWithHeader(hdr(parcel.Header{Version: parcel.HeaderVersion, Kind: parcel.KindCall, Args: make([]byte, parcel.MaxArgs+1)}), 0),
		"header too long": frameHead(100, 101),
		"empty header":    frameHead(100, 0),
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			rec := newRecorder()
			port := s.newJob(t).start(Options{Locality: 0, Handler: rec})
			raw := s.dial(t, port, 1, 0)
			good := appendFrame(t, nil, parcel.Header{Kind: parcel.KindCall, Action: "good"}, [][]byte{pattern(3, 0)})
			if _, err := raw.Write(append(append(good, frame...), good...)); err != nil {
				t.Fatal(err)
			}
			down := rec.waitDown(t)
			var fe *parcel.FrameError
			if down.peer != 1 || !errors.Is(down.err, parcel.ErrPeerDown) || !errors.As(down.err, &fe) {
				t.Fatalf("PeerDown(%d, %v), want locality 1 and a *FrameError wrapping ErrPeerDown", down.peer, down.err)
			}
			waitClosed(t, raw)
			if got := rec.received(); len(got) != 1 {
				t.Fatalf("got %d parcels, want only the one before the bad frame", len(got))
			}
		})
	}
}

// truncatedFrame: the peer dies in the middle of a frame: what came
// before is delivered, the half frame is not, and the peer is reported
// down.
func (s *suite) truncatedFrame(t *testing.T) {
	s.needDial(t)
	for _, cut := range []struct {
		name  string
		where func(frame []byte) int
	}{
		{"InPrefix", func([]byte) int { return parcel.FrameHeadLen / 2 }},
		{"InHeader", func([]byte) int { return parcel.FrameHeadLen + 3 }},
		{"InChunk", func(f []byte) int { return len(f) / 2 }},
	} {
		t.Run(cut.name, func(t *testing.T) {
			rec := newRecorder()
			port := s.newJob(t).start(Options{Locality: 0, Handler: rec})
			raw := s.dial(t, port, 3, 0)
			stream := appendFrame(t, nil, parcel.Header{Kind: parcel.KindCall, Source: 3, Dest: 0, Action: "last words"}, [][]byte{pattern(5, 1)})
			half := appendFrame(t, nil, parcel.Header{Kind: parcel.KindReply, Source: 3, Dest: 0, Action: "cut"}, [][]byte{pattern(100000, 2)})
			if _, err := raw.Write(append(stream, half[:cut.where(half)]...)); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			down := rec.waitDown(t)
			if down.peer != 3 || !errors.Is(down.err, parcel.ErrPeerDown) || !strings.Contains(down.err.Error(), "unexpected EOF") {
				t.Fatalf("PeerDown(%d, %v), want locality 3 and ErrPeerDown for an unexpected EOF", down.peer, down.err)
			}
			if got := rec.received(); len(got) != 1 || got[0].Header.Action != "last words" {
				t.Fatalf("got %d parcels, want only the whole one", len(got))
			}
			if err := port.Send(context.Background(), &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 3}}); !errors.Is(err, parcel.ErrPeerDown) {
				t.Fatalf("Send to the lost peer: %v, want ErrPeerDown", err)
			}
		})
	}
}

// oversizedFrame: a frame declaring a body over MaxFrame is refused
// before memory is taken for it, and logged.
func (s *suite) oversizedFrame(t *testing.T) {
	s.needDial(t)
	s.need(t, FrameLimit)
	var logs logBuffer
	rec := newRecorder()
	port := s.newJob(t).start(Options{Locality: 0, Handler: rec, MaxFrame: 1 << 20, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	raw := s.dial(t, port, 1, 0)
	var down peerDown
	n := allocatedBy(func() {
		if _, err := raw.Write(append(frameHead(1<<40, 10), make([]byte, 64)...)); err != nil {
			t.Fatal(err)
		}
		down = rec.waitDown(t)
	})
	var pe *parcel.PeerError
	if down.peer != 1 || !errors.Is(down.err, parcel.ErrFrameTooLarge) || !errors.Is(down.err, parcel.ErrPeerDown) || !errors.As(down.err, &pe) || pe.Locality != 1 {
		t.Fatalf("PeerDown(%d, %v), want locality 1 and a *PeerError wrapping ErrFrameTooLarge and ErrPeerDown", down.peer, down.err)
	}
	if n > 16<<20 {
		t.Fatalf("the port allocated %d bytes while refusing the frame", n)
	}
	waitClosed(t, raw)
	if !strings.Contains(logs.String(), "oversized") {
		t.Errorf("nothing logged about the frame:\n%s", logs.String())
	}
	if err := port.Send(context.Background(), &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 1}}); !errors.Is(err, parcel.ErrPeerDown) {
		t.Fatalf("Send to the lost peer: %v, want ErrPeerDown", err)
	}
	if d := rec.peerDowns(); len(d) != 1 {
		t.Fatalf("PeerDown called %d times", len(d))
	}
}

// sendTooLarge: Send refuses a parcel over MaxFrame, and sends one just
// under it.
func (s *suite) sendTooLarge(t *testing.T) {
	s.need(t, FrameLimit)
	ctx := context.Background()
	ports, recs := s.startN(t, 2, func(_ int, _ *recorder, o *Options) { o.MaxFrame = 1 << 20 })
	err := ports[1].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0}, Chunks: [][]byte{make([]byte, 1<<20)}})
	if !errors.Is(err, parcel.ErrFrameTooLarge) {
		t.Fatalf("Send of a frame over the limit: %v, want ErrFrameTooLarge", err)
	}
	if err := ports[1].Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0}, Chunks: [][]byte{make([]byte, 1<<20-200)}}); err != nil {
		t.Fatal(err)
	}
	recs[0].waitParcels(t, 1)
}

// wrongSecret: a locality with another secret cannot connect, nor can a
// stream; nobody is reported down, and the port serves a good peer.
func (s *suite) wrongSecret(t *testing.T) {
	s.need(t, Authenticates)
	j := s.newJob(t)
	rec := newRecorder()
	port := j.start(Options{Locality: 0, Handler: rec})
	strangerRec := newRecorder()
	stranger := j.start(Options{Locality: 1, Handler: strangerRec, Secret: otherSecret})
	ctx, cancel := context.WithTimeout(context.Background(), HangLimit)
	defer cancel()
	if err := stranger.Connect(ctx, 0, port.Addr()); !errors.Is(err, parcel.ErrHandshake) {
		t.Fatalf("Connect with another secret: %v, want ErrHandshake", err)
	}
	if err := stranger.Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "smuggled"}}); err == nil {
		t.Fatal("a locality that failed the handshake could send")
	}
	if s.tr.Dial != nil {
		c, err := s.tr.Dial(ctx, port.Addr(), 1, 0, otherSecret)
		if err == nil {
			c.Close()
			t.Fatal("a stream with another secret was accepted")
		}
		if !errors.Is(err, parcel.ErrHandshake) {
			t.Fatalf("Dial with another secret: %v, want ErrHandshake", err)
		}
	}
	// The port still serves a good peer, even the locality the stranger
	// claimed to be.
	good := j.start(Options{Locality: 2, Handler: newRecorder()})
	if err := good.Connect(ctx, 0, port.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := good.Send(ctx, &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "hello"}}); err != nil {
		t.Fatal(err)
	}
	rec.waitParcels(t, 1)
	if got := rec.received(); len(got) != 1 || got[0].Header.Action != "hello" || got[0].Header.Source != 2 {
		t.Fatalf("port got %+v", got)
	}
	for who, r := range map[string]*recorder{"the port": rec, "the stranger": strangerRec} {
		if d := r.peerDowns(); len(d) != 0 {
			t.Fatalf("%s was told of a loss: %v", who, d[0].err)
		}
	}
}

// idlePeersStayUp: peers that send nothing for several heartbeat
// intervals stay up; heartbeats count as bytes, not parcels.
func (s *suite) idlePeersStayUp(t *testing.T) {
	s.need(t, Heartbeats)
	ports, recs := s.startN(t, 2, func(_ int, _ *recorder, o *Options) {
		o.HeartbeatInterval, o.HeartbeatTimeout = 20*time.Millisecond, time.Second
	})
	time.Sleep(1500 * time.Millisecond)
	for i, r := range recs {
		if d := r.peerDowns(); len(d) != 0 {
			t.Fatalf("locality %d: idle peer reported down: %v", i, d[0].err)
		}
	}
	c := ports[0].Counters()
	if len(c) != 1 || c[0].ParcelsSent != 0 || c[0].ParcelsReceived != 0 || c[0].BytesReceived == 0 {
		t.Fatalf("counters %+v: heartbeats are bytes, not parcels", c)
	}
	if err := ports[1].Send(context.Background(), &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0}}); err != nil {
		t.Fatal(err)
	}
	recs[0].waitParcels(t, 1)
}

// silentPeer: a peer that reads but says nothing hears heartbeats and is
// reported down, "silent", soon after the heartbeat timeout.
func (s *suite) silentPeer(t *testing.T) {
	s.needDial(t)
	s.need(t, Heartbeats)
	rec := newRecorder()
	const timeout = 300 * time.Millisecond
	port := s.newJob(t).start(Options{Locality: 0, Handler: rec, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: timeout})
	raw := s.dial(t, port, 2, 0)
	kinds := make(chan parcel.Kind, 1000)
	go func() {
		fr := parcel.NewFrameReader(raw, 0)
		for {
			p, err := fr.Next(nil)
			if err != nil {
				close(kinds)
				return
			}
			kinds <- p.Header.Kind
		}
	}()
	began := time.Now()
	down := rec.waitDown(t)
	if took := time.Since(began); took > timeout+2*time.Second {
		// Within the timeout and the generous slack of a loaded machine.
		t.Errorf("the silent peer was found out after %v, timeout %v", took, timeout)
	}
	if down.peer != 2 || !errors.Is(down.err, parcel.ErrPeerDown) || !strings.Contains(down.err.Error(), "silent") {
		t.Fatalf("PeerDown(%d, %v), want locality 2 and ErrPeerDown for silence", down.peer, down.err)
	}
	heartbeats := 0
	for k := range kinds {
		if k != parcel.KindHeartbeat {
			t.Fatalf("the port sent a %v parcel", k)
		}
		heartbeats++
	}
	if heartbeats == 0 {
		t.Fatal("the port sent no heartbeat")
	}
}
