package parcel

import (
	"bufio"
	"bytes"
	"context"
	"testing"
)

// benchStream is a stream of frames like the runtime's small calls: a
// 64-byte chunk each, with a short action name and arguments.
func benchStream(b *testing.B, frames int) []byte {
	var stream []byte
	payload := make([]byte, 64)
	for k := range frames {
		h := Header{Kind: KindCall, Source: 1, Action: "tile.add", Request: uint64(k + 1), Args: []byte{0x92, 1, 2}}
		stream = appendFrame(b, stream, h, [][]byte{payload})
	}
	return stream
}

// BenchmarkFrameDecode decodes a stream of small frames: through a
// FrameReader (the blocking reader), and fed to the incremental decoder in
// reads of up to 64 KiB, as the raw and nbio readers do. Chunks go into
// memory the "handler" provides.
//
//	go test -run '^$' -bench BenchmarkFrameDecode ./parcel/
func BenchmarkFrameDecode(b *testing.B) {
	const frames = 1024
	stream := benchStream(b, frames)
	dst := make([]byte, 64)
	buf := func(*Header, int, int) []byte { return dst }
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream) / frames))
		src := bytes.NewReader(stream)
		fr := NewFrameReader(bufio.NewReaderSize(src, 64<<10), 0)
		for i := 0; i < b.N; i++ {
			if i%frames == 0 && i > 0 {
				src.Reset(stream)
			}
			if _, err := fr.Next(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	// reused: the receiver keeps no parcel (Recycler), so each is read
	// into the memory of the one before.
	for _, reuse := range []bool{false, true} {
		name := "decoder"
		if reuse {
			name = "decoder-reused"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stream) / frames))
			d := newFrameDecoder(0, buf)
			got := 0
			deliver := func(*Parcel, int64) { got++ }
			if reuse {
				d.recycle = true
				deliver = func(p *Parcel, _ int64) { got++; d.reuse(p) }
			}
			src := stream
			for got < b.N {
				if len(src) == 0 {
					src = stream
				}
				sp, direct := d.space()
				n := copy(sp, src)
				src = src[n:]
				if err := d.feed(n, direct, deliver); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTCPRoundTrip sends a call of 64 bytes from one TCP port to
// another and waits for the answer, one at a time: a reader's hot path
// twice per round trip.
//
//	go test -run '^$' -bench BenchmarkTCPRoundTrip ./parcel/
func BenchmarkTCPRoundTrip(b *testing.B) {
	echo := &echoHandler{in: make(chan *Parcel, 1)}
	back := &echoHandler{in: make(chan *Parcel, 1)}
	p0 := newTCPPort(b, 0, echo, nil)
	p1 := newTCPPort(b, 1, back, nil)
	ctx := context.Background()
	if err := p1.Connect(ctx, 0, p0.Addr()); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		reply := &Parcel{Header: Header{Kind: KindReply, Dest: 1}, Chunks: [][]byte{make([]byte, 64)}}
		for {
			select {
			case <-echo.in:
			case <-done:
				return
			}
			if err := p0.Send(ctx, reply); err != nil {
				return
			}
		}
	}()
	call := &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "echo"}, Chunks: [][]byte{make([]byte, 64)}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p1.Send(ctx, call); err != nil {
			b.Fatal(err)
		}
		<-back.in
	}
}

// echoHandler hands every parcel to in.
type echoHandler struct{ in chan *Parcel }

func (h *echoHandler) Buffer(*Header, int, int) []byte { return nil }
func (h *echoHandler) Receive(p *Parcel)               { h.in <- p }
func (h *echoHandler) PeerDown(uint32, error)          {}
