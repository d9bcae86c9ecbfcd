package parcel

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/tinylib/msgp/msgp"
)

func newReader(b []byte, maxFrame int64) *FrameReader {
	return NewFrameReader(bufio.NewReader(bytes.NewReader(b)), maxFrame)
}

func TestChunksAreReadIntoProvidedMemory(t *testing.T) {
	chunks := chunksOf(100, 0, 4096, 7)
	frame := appendFrame(t, nil, Header{Kind: KindReply, Request: 9}, chunks)

	// Chunk 2 gets a buffer of the wrong length and must be allocated; the
	// others are read into the buffers given.
	provided := [][]byte{make([]byte, 100), nil, make([]byte, 4097), make([]byte, 7)}
	var calls []int
	buf := func(h *Header, i int, n int) []byte {
		if h.Request != 9 || h.Kind != KindReply {
			t.Errorf("BufferFunc got header %+v", h)
		}
		if n != len(chunks[i]) {
			t.Errorf("BufferFunc asked for chunk %d of %d bytes, want %d", i, n, len(chunks[i]))
		}
		calls = append(calls, i)
		return provided[i]
	}
	p, err := newReader(frame, 0).Next(buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != len(chunks) {
		t.Fatalf("BufferFunc called for chunks %v", calls)
	}
	for i, c := range p.Chunks {
		if !bytes.Equal(c, chunks[i]) {
			t.Errorf("chunk %d differs", i)
		}
	}
	for _, i := range []int{0, 3} {
		if &p.Chunks[i][0] != &provided[i][0] {
			t.Errorf("chunk %d was not read into the memory provided", i)
		}
	}
	if &p.Chunks[2][0] == &provided[2][0] {
		t.Error("chunk 2 was read into a buffer of the wrong length")
	}
	if bytes.Count(provided[2], []byte{0}) != len(provided[2]) {
		t.Error("the buffer of the wrong length was written")
	}
	if len(p.Chunks[1]) != 0 {
		t.Errorf("zero-length chunk has %d bytes", len(p.Chunks[1]))
	}
}

func TestNilBufferFuncAllocates(t *testing.T) {
	chunks := chunksOf(10, 20)
	p, err := newReader(appendFrame(t, nil, Header{Kind: KindCall}, chunks), 0).Next(func(*Header, int, int) []byte { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		if !bytes.Equal(p.Chunks[i], chunks[i]) {
			t.Fatalf("chunk %d differs", i)
		}
	}
}

func TestTruncatedFrames(t *testing.T) {
	first := appendFrame(t, nil, Header{Kind: KindCall, Action: "a", Args: []byte{1, 2, 3}}, chunksOf(5, 0, 9))
	stream := appendFrame(t, first, Header{Kind: KindReply, Error: "e"}, chunksOf(3))
	for cut := 0; cut < len(stream); cut++ {
		fr := newReader(stream[:cut], 0)
		var err error
		frames := 0
		for err == nil {
			var p *Parcel
			p, err = fr.Next(nil)
			if err == nil {
				frames++
				if p == nil {
					t.Fatalf("cut at %d: nil parcel without error", cut)
				}
			}
		}
		if cut == 0 || cut == len(first) {
			// Between frames: a clean end.
			if err != io.EOF {
				t.Errorf("cut at %d (between frames): %v, want io.EOF", cut, err)
			}
			continue
		}
		var fe *FrameError
		if !errors.As(err, &fe) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d: %v (%T), want a *FrameError wrapping io.ErrUnexpectedEOF", cut, err, err)
		}
		want := 0
		if cut > len(first) {
			want = 1
		}
		if frames != want {
			t.Errorf("cut at %d: read %d whole frames, want %d", cut, frames, want)
		}
	}
}

func TestEOFBetweenFrames(t *testing.T) {
	var stream []byte
	for i := range 3 {
		stream = appendFrame(t, stream, Header{Kind: KindCall, Request: uint64(i)}, chunksOf(i))
	}
	fr := newReader(stream, 0)
	for i := range 3 {
		p, err := fr.Next(nil)
		if err != nil || p.Header.Request != uint64(i) {
			t.Fatalf("frame %d: %v %+v", i, err, p)
		}
	}
	for range 2 {
		if _, err := fr.Next(nil); err != io.EOF {
			t.Fatalf("at the end: %v (%T), want io.EOF itself", err, err)
		}
	}
}

// frameHead returns a frame head declaring body and header lengths.
func frameHead(body uint64, hlen uint32) []byte {
	b := make([]byte, FrameHeadLen)
	putLE64(b, body)
	putLE32(b[8:], hlen)
	return b
}

func TestOversizedFrameRefusedWithoutAllocation(t *testing.T) {
	const maxFrame = 1 << 20
	for _, body := range []uint64{maxFrame + 1, 64 << 20, 1 << 40, math.MaxUint64} {
		// The head is followed by a little data, as a hostile peer would
		// send; nothing of the declared body is allocated for.
		fr := newReader(append(frameHead(body, 10), make([]byte, 100)...), maxFrame)
		var err error
		n := allocatedBy(func() { _, err = fr.Next(nil) })
		var fe *FrameError
		if !errors.Is(err, ErrFrameTooLarge) || !errors.As(err, &fe) {
			t.Fatalf("body %d: %v, want a *FrameError wrapping ErrFrameTooLarge", body, err)
		}
		if !strings.Contains(err.Error(), itoa(body)) {
			t.Errorf("body %d: error %q does not name the length", body, err)
		}
		if n > 64<<10 {
			t.Errorf("body %d: refusing the frame allocated %d bytes", body, n)
		}
	}
	// Exactly the maximum is accepted.
	frame := appendFrame(t, nil, Header{Kind: KindCall}, chunksOf(100))
	body := uint64(len(frame) - FrameHeadLen)
	if _, err := newReader(frame, int64(body)).Next(nil); err != nil {
		t.Fatalf("frame of exactly maxFrame: %v", err)
	}
	if _, err := newReader(frame, int64(body-1)).Next(nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("frame one byte over maxFrame: %v", err)
	}
}

func TestDefaultMaxFrame(t *testing.T) {
	_, err := newReader(frameHead(uint64(DefaultMaxFrame)+1, 10), 0).Next(nil)
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("maxFrame 0 does not mean DefaultMaxFrame: %v", err)
	}
}

func TestBadFrameHeads(t *testing.T) {
	hdr := encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall})
	tests := map[string][]byte{
		"header length zero":        frameHead(10, 0),
		"header longer than body":   frameHead(10, 11),
		"header longer than limit":  frameHead(MaxHeader+100, MaxHeader+1),
		"header is not msgpack":     append(frameHead(4, 4), 0xc1, 0xc1, 0xc1, 0xc1),
		"header is the wrong tuple": append(frameHead(3, 3), msgp.AppendArrayHeader(msgp.AppendUint8(msgp.AppendArrayHeader(nil, 2), 1), 0)...),
		"body longer than header, no chunks": append(append(frameHead(uint64(len(hdr)+4), uint32(len(hdr))), hdr...),
			1, 2, 3, 4),
	}
	for name, b := range tests {
		_, err := newReader(b, int64(MaxHeader)+1000).Next(nil)
		var fe *FrameError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v (%T), want a *FrameError", name, err, err)
		}
	}
}

// frameWithChunkLengths is a frame whose header lists the given chunk
// lengths and whose body carries carried bytes of chunks.
func frameWithChunkLengths(t testing.TB, lens []uint64, carried int) []byte {
	return frameWithHeader(encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall, Chunks: lens}), carried)
}

func TestChunkLengthsMustAddUp(t *testing.T) {
	tests := []struct {
		name    string
		lens    []uint64
		carried int
	}{
		{"short", []uint64{10, 10}, 15},
		{"long", []uint64{10, 10}, 25},
		{"chunks but no bytes", []uint64{1}, 0},
		{"bytes but no chunks", nil, 8},
		{"one huge", []uint64{math.MaxUint64}, 8},
		// Lengths whose sum wraps around to the bytes carried: a reader
		// that adds them up would then allocate a huge chunk.
		{"sum wraps", []uint64{5, math.MaxUint64 - 1, 4}, 7},
		{"sum wraps to zero", []uint64{1 << 63, 1 << 63}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocatedBy(func() {
				_, err = newReader(frameWithChunkLengths(t, tt.lens, tt.carried), 0).Next(func(h *Header, i, n int) []byte {
					t.Errorf("BufferFunc called for chunk %d of %d bytes", i, n)
					return nil
				})
			})
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("%v (%T), want a *FrameError", err, err)
			}
			if n > 1<<20 {
				t.Fatalf("allocated %d bytes", n)
			}
		})
	}
}

func TestFrameErrorMessage(t *testing.T) {
	err := &FrameError{"chunk 3", io.ErrUnexpectedEOF}
	if got := err.Error(); got != "parcel: reading chunk 3: unexpected EOF" {
		t.Fatalf("got %q", got)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal("FrameError does not unwrap")
	}
}

func TestParcelSize(t *testing.T) {
	p := &Parcel{Header: Header{Args: make([]byte, 5)}, Chunks: chunksOf(3, 0, 10)}
	if p.Size() != 18 {
		t.Fatalf("Size %d, want 18", p.Size())
	}
}

func TestFloat64BytesRoundTrip(t *testing.T) {
	s := []float64{0, 1, -2.5, math.Pi, math.Inf(1), math.SmallestNonzeroFloat64}
	b := Float64Bytes(s)
	if len(b) != 8*len(s) {
		t.Fatalf("len %d, want %d", len(b), 8*len(s))
	}
	if &b[0] != (*byte)(unsafe.Pointer(&s[0])) {
		t.Fatal("Float64Bytes copied")
	}
	// Little endian on the wire: the handshake refuses anything else.
	if b[8+6] != 0xf0 || b[8+7] != 0x3f { // 1.0 is 0x3ff0000000000000
		t.Fatalf("1.0 encoded as % x", b[8:16])
	}
	back := BytesFloat64(b)
	if len(back) != len(s) || &back[0] != &s[0] {
		t.Fatal("BytesFloat64 does not give back the same memory")
	}
	b[0] = 0x01 // writes through
	if s[0] == 0 {
		t.Fatal("Float64Bytes does not share memory")
	}

	// Memory from the runtime's usual recipe is aligned for float64, and a
	// chunk read into it comes back as float64s.
	dst := Float64Bytes(make([]float64, len(s)))
	want := []float64{1, 2, 3, 4, 5, 6}
	frame := appendFrame(t, nil, Header{Kind: KindReply}, [][]byte{Float64Bytes(want)})
	p, err := newReader(frame, 0).Next(func(*Header, int, int) []byte { return dst })
	if err != nil {
		t.Fatal(err)
	}
	got := BytesFloat64(p.Chunks[0])
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestBytesFloat64Refuses(t *testing.T) {
	aligned := Float64Bytes(make([]float64, 4))
	tests := map[string][]byte{
		"nil":              nil,
		"empty":            aligned[:0],
		"not a multiple":   aligned[:12],
		"misaligned":       aligned[1:9],
		"misaligned by 4":  aligned[4:20],
		"short":            aligned[:7],
		"misaligned whole": aligned[3:27],
	}
	for name, b := range tests {
		if got := BytesFloat64(b); got != nil {
			t.Errorf("%s: got %v, want nil", name, got)
		}
	}
	if got := BytesFloat64(aligned[8:24]); len(got) != 2 {
		t.Errorf("aligned sub-slice: got %d float64s, want 2", len(got))
	}
	if Float64Bytes(nil) != nil || Float64Bytes([]float64{}) != nil {
		t.Error("Float64Bytes of nothing is not nil")
	}
}

// emptyReader returns neither bytes nor an error, forever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestFrameReaderGivesUpOnEmptyReads(t *testing.T) {
	_, err := NewFrameReader(emptyReader{}, 0).Next(nil)
	var fe *FrameError
	if !errors.As(err, &fe) || !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("%v (%T), want a *FrameError wrapping io.ErrNoProgress", err, err)
	}
}
