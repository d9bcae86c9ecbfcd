package parcel

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// sameHeader reports whether a and b are equal, a nil and an empty slice
// counting as the same.
func sameHeader(a, b *Header) bool {
	return a.Version == b.Version && a.Kind == b.Kind && a.Source == b.Source && a.Dest == b.Dest &&
		a.Action == b.Action && a.Request == b.Request && a.Parent == b.Parent &&
		a.Code == b.Code && a.Error == b.Error && bytes.Equal(a.Args, b.Args) && slices.Equal(a.Chunks, b.Chunks)
}

// chunksOf returns chunks of the given lengths filled with a pattern that
// differs from chunk to chunk.
func chunksOf(lens ...int) [][]byte {
	out := make([][]byte, len(lens))
	for i, n := range lens {
		c := make([]byte, n)
		for j := range c {
			c[j] = byte(i*31 + j*7 + 1)
		}
		out[i] = c
	}
	return out
}

// appendFrame appends a whole frame, head and chunks, to dst.
func appendFrame(t testing.TB, dst []byte, h Header, chunks [][]byte) []byte {
	t.Helper()
	dst, err := AppendFrameHead(dst, &h, chunks)
	if err != nil {
		t.Fatalf("AppendFrameHead: %v", err)
	}
	for _, c := range chunks {
		dst = append(dst, c...)
	}
	return dst
}

// allocatedBy returns the bytes the process allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestHeaderRoundTrip(t *testing.T) {
	many := make([]int, MaxChunks)
	for i := range many {
		many[i] = i % 3
	}
	tests := []struct {
		name   string
		h      Header
		chunks [][]byte
	}{
		{"empty", Header{Kind: KindCall}, nil},
		{"all fields", Header{
			Kind: KindReply, Source: 7, Dest: 1<<32 - 1, Action: "matrix.gemm",
			Request: 1<<64 - 1, Parent: 41, Code: CodeActionError,
			Error: "the action failed", Args: []byte{0x93, 1, 2, 3},
		}, chunksOf(8, 16, 3)},
		{"control", Header{Kind: KindControl, Action: "barrier", Args: []byte("x")}, nil},
		{"heartbeat", Header{Kind: KindHeartbeat, Action: byeVerb}, nil},
		{"long action", Header{Kind: KindCall, Action: strings.Repeat("very.long.action.name.", 50000)}, chunksOf(1)},
		{"long error", Header{Kind: KindReply, Code: CodeActionPanic, Error: strings.Repeat("é", 70000)}, nil},
		{"largest args", Header{Kind: KindCall, Args: bytes.Repeat([]byte{0xab}, MaxArgs)}, nil},
		{"many chunks", Header{Kind: KindCall, Action: "scatter"}, chunksOf(many...)},
		{"zero-length chunks", Header{Kind: KindCall}, chunksOf(0, 0, 5, 0)},
		{"only zero-length chunks", Header{Kind: KindReply}, chunksOf(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.h
			frame := appendFrame(t, nil, tt.h, tt.chunks)
			want.Version = HeaderVersion
			want.Chunks = nil
			for _, c := range tt.chunks {
				want.Chunks = append(want.Chunks, uint64(len(c)))
			}

			// Through DecodeHeader alone.
			hlen := int(uint32(frame[8]) | uint32(frame[9])<<8 | uint32(frame[10])<<16 | uint32(frame[11])<<24)
			var got Header
			if err := DecodeHeader(frame[FrameHeadLen:FrameHeadLen+hlen], &got); err != nil {
				t.Fatalf("DecodeHeader: %v", err)
			}
			if !sameHeader(&got, &want) {
				t.Fatalf("DecodeHeader gave\n%+v\nwant\n%+v", got, want)
			}

			// Through a FrameReader, twice in a row.
			stream := append(slices.Clip(frame), frame...)
			fr := NewFrameReader(bufio.NewReader(bytes.NewReader(stream)), 0)
			for range 2 {
				p, err := fr.Next(nil)
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if !sameHeader(&p.Header, &want) {
					t.Fatalf("Next gave header\n%+v\nwant\n%+v", p.Header, want)
				}
				if len(p.Chunks) != len(tt.chunks) {
					t.Fatalf("got %d chunks, want %d", len(p.Chunks), len(tt.chunks))
				}
				for i := range tt.chunks {
					if !bytes.Equal(p.Chunks[i], tt.chunks[i]) {
						t.Fatalf("chunk %d differs", i)
					}
				}
				if fr.LastFrameLen() != int64(len(frame)) {
					t.Fatalf("LastFrameLen %d, want %d", fr.LastFrameLen(), len(frame))
				}
			}
			if _, err := fr.Next(nil); err != io.EOF {
				t.Fatalf("after the frames: %v, want io.EOF", err)
			}
		})
	}
}

func TestAppendFrameHeadEncodesVersionAndChunks(t *testing.T) {
	h := Header{Kind: KindCall, Version: 99, Chunks: []uint64{1, 2, 3, 4, 5}}
	frame, err := AppendFrameHead(nil, &h, chunksOf(10, 0))
	if err != nil {
		t.Fatal(err)
	}
	var got Header
	if err := DecodeHeader(frame[FrameHeadLen:], &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != HeaderVersion || !slices.Equal(got.Chunks, []uint64{10, 0}) {
		t.Fatalf("encoded header: version %d chunks %v, want %d [10 0]", got.Version, got.Chunks, HeaderVersion)
	}
	if h.Version != 99 || !slices.Equal(h.Chunks, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("AppendFrameHead changed its header: version %d chunks %v", h.Version, h.Chunks)
	}
}

func TestAppendFrameHeadRefusesWhatReadersRefuse(t *testing.T) {
	tests := []struct {
		name   string
		h      Header
		chunks int
		want   string
	}{
		{"kind zero", Header{}, 0, "unknown parcel kind 0"},
		{"kind too large", Header{Kind: KindHeartbeat + 1}, 0, "unknown parcel kind 5"},
		{"too many chunks", Header{Kind: KindCall}, MaxChunks + 1, "chunks, limit"},
		{"args too long", Header{Kind: KindCall, Args: make([]byte, MaxArgs+1)}, 0, "header arguments"},
		{"header too long", Header{Kind: KindCall, Action: strings.Repeat("a", MaxHeader)}, 0, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := AppendFrameHead(dst, &tt.h, make([][]byte, tt.chunks))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed to %q", out)
			}
		})
	}
}

// encodeHeader encodes h as is, version included.
func encodeHeader(t testing.TB, h Header) []byte {
	t.Helper()
	b, err := h.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// frameWithHeader wraps an encoded header, followed by chunk bytes, in a
// frame head.
func frameWithHeader(hdr []byte, chunkBytes int) []byte {
	body := uint64(len(hdr) + chunkBytes)
	f := make([]byte, FrameHeadLen, FrameHeadLen+int(body))
	putLE64(f, body)
	putLE32(f[8:], uint32(len(hdr)))
	f = append(f, hdr...)
	return append(f, make([]byte, chunkBytes)...)
}

func putLE64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func putLE32(b []byte, v uint32) {
	for i := range 4 {
		b[i] = byte(v >> (8 * i))
	}
}

func TestDecodeHeaderRefusesOtherVersions(t *testing.T) {
	for _, v := range []uint8{0, HeaderVersion + 1, 255} {
		b := encodeHeader(t, Header{Version: v, Kind: KindCall})
		var h Header
		err := DecodeHeader(b, &h)
		if err == nil {
			t.Fatalf("version %d accepted", v)
		}
		for _, want := range []string{"version " + itoa(uint64(v)), "speaks " + itoa(uint64(HeaderVersion))} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("version %d: error %q does not contain %q", v, err, want)
			}
		}
		// And the same through a FrameReader, as a *FrameError.
		_, err = NewFrameReader(bufio.NewReader(bytes.NewReader(frameWithHeader(b, 0))), 0).Next(nil)
		var fe *FrameError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "version "+itoa(uint64(v))) {
			t.Errorf("version %d through FrameReader: %v", v, err)
		}
	}

	// A future version need not fit a uint8, nor have twelve fields: the
	// version is checked first and reported whatever it is.
	b := msgp.AppendArrayHeader(nil, 13)
	b = msgp.AppendUint16(b, 300)
	b = msgp.AppendString(b, "a field this build does not know")
	var h Header
	err := DecodeHeader(b, &h)
	if err == nil || !strings.Contains(err.Error(), "version 300") || !strings.Contains(err.Error(), "speaks "+itoa(uint64(HeaderVersion))) {
		t.Fatalf("version 300: %v", err)
	}
}

func TestDecodeHeaderRefusesUnknownKind(t *testing.T) {
	for _, k := range []Kind{0, KindHeartbeat + 1, 200} {
		var h Header
		err := DecodeHeader(encodeHeader(t, Header{Version: HeaderVersion, Kind: k}), &h)
		if err == nil || !strings.Contains(err.Error(), "unknown parcel kind "+itoa(uint64(k))) {
			t.Errorf("kind %d: %v", k, err)
		}
	}
}

func TestDecodeHeaderRefusesMalformed(t *testing.T) {
	good := encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall, Action: "x", Args: []byte{1, 2}, Chunks: []uint64{3}})
	tests := map[string][]byte{
		"empty":          nil,
		"not an array":   msgp.AppendString(nil, "hello"),
		"empty tuple":    msgp.AppendArrayHeader(nil, 0),
		"version string": msgp.AppendString(msgp.AppendArrayHeader(nil, 12), "1"),
		"too few fields": msgp.AppendUint8(msgp.AppendUint8(msgp.AppendArrayHeader(nil, 2), HeaderVersion), uint8(KindCall)),
		"truncated":      good[:len(good)-1],
		"stray bytes":    append(slices.Clip(good), 0xc0),
	}
	for name, b := range tests {
		var h Header
		if err := DecodeHeader(b, &h); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// hugeChunkArray returns an encoded header whose Chunks array claims n
// elements while none follow.
func hugeChunkArray(t *testing.T, n uint32) []byte {
	b := encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall})
	if b[len(b)-1] != 0x90 { // empty fixarray: Chunks is the last field
		t.Fatalf("unexpected encoding, last byte %#x", b[len(b)-1])
	}
	b = b[:len(b)-1]
	b = append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return b
}

func TestHugeChunkArrayRefusedWithoutAllocation(t *testing.T) {
	const claim = 4_000_000_000
	b := hugeChunkArray(t, claim)

	// The msgp:limit in header.go guards the generated decoder on its own.
	var h Header
	var err error
	n := allocatedBy(func() { _, err = h.UnmarshalMsg(b) })
	if !errors.Is(err, msgp.ErrLimitExceeded) {
		t.Fatalf("UnmarshalMsg: %v, want msgp.ErrLimitExceeded", err)
	}
	if n > 1<<20 {
		t.Fatalf("UnmarshalMsg allocated %d bytes for a %d-byte header", n, len(b))
	}

	// DecodeHeader refuses it, and so does a FrameReader.
	h = Header{}
	n = allocatedBy(func() { err = DecodeHeader(b, &h) })
	if err == nil {
		t.Fatal("DecodeHeader accepted 4 billion chunks")
	}
	if n > 1<<20 {
		t.Fatalf("DecodeHeader allocated %d bytes for a %d-byte header", n, len(b))
	}
	fr := NewFrameReader(bufio.NewReader(bytes.NewReader(frameWithHeader(b, 0))), 0)
	n = allocatedBy(func() { _, err = fr.Next(nil) })
	var fe *FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("FrameReader: %v, want a *FrameError", err)
	}
	if n > 1<<20 {
		t.Fatalf("FrameReader allocated %d bytes for a %d-byte header", n, len(b))
	}

	// A claim within the limit but not backed by bytes costs no more than
	// the bytes that are there.
	b = hugeChunkArray(t, MaxChunks)
	n = allocatedBy(func() { err = DecodeHeader(b, &h) })
	if err == nil {
		t.Fatal("DecodeHeader accepted a chunk array without its elements")
	}
	if n > 64<<10 {
		t.Fatalf("DecodeHeader allocated %d bytes for a %d-byte header claiming %d chunks", n, len(b), MaxChunks)
	}
}

func TestHeaderArrayLimits(t *testing.T) {
	// More chunks than the limit, each present: the limit refuses them.
	b := encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall, Chunks: make([]uint64, MaxChunks+1)})
	var h Header
	if err := DecodeHeader(b, &h); !errors.Is(err, msgp.ErrLimitExceeded) {
		t.Fatalf("%d chunks: %v, want msgp.ErrLimitExceeded", MaxChunks+1, err)
	}
	// msgp applies the array limit to byte slices too, hence MaxArgs.
	b = encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall, Args: make([]byte, MaxArgs+1)})
	if err := DecodeHeader(b, &h); !errors.Is(err, msgp.ErrLimitExceeded) {
		t.Fatalf("%d bytes of args: %v, want msgp.ErrLimitExceeded", MaxArgs+1, err)
	}
	// Exactly at the limits is fine.
	b = encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall, Args: make([]byte, MaxArgs), Chunks: make([]uint64, MaxChunks)})
	if err := DecodeHeader(b, &h); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindCall: "call", KindReply: "reply", KindControl: "control", KindHeartbeat: "heartbeat", 0: "kind(0)", 77: "kind(77)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, want)
		}
	}
}

// BenchmarkDecodeHeader decodes the header of a 64-byte call into room
// for its fields: as a connection's reader does (readHeader, with its
// cache of action names), and with the generated msgp code alone.
func BenchmarkDecodeHeader(b *testing.B) {
	h := Header{Version: HeaderVersion, Kind: KindCall, Source: 1, Dest: 0, Action: "bench.echo", Request: 7, Parent: 1 << 40, Args: []byte{0x90}, Chunks: []uint64{64}}
	buf, err := h.MarshalMsg(nil)
	if err != nil {
		b.Fatal(err)
	}
	var args [32]byte
	var lens [2]uint64
	var names nameCache
	for _, bc := range []struct {
		name   string
		decode func([]byte, *Header) error
	}{
		{"reader", func(b []byte, h *Header) error { return readHeader(b, h, &names) }},
		{"msgp", DecodeHeader},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := new(Header)
			b.ReportAllocs()
			for b.Loop() {
				*d = Header{Args: args[:0], Chunks: lens[:0]}
				if err := bc.decode(buf, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendFrameHead encodes the frame head of a 64-byte call.
func BenchmarkAppendFrameHead(b *testing.B) {
	h := Header{Kind: KindCall, Source: 1, Dest: 0, Action: "bench.echo", Request: 7, Parent: 1 << 40, Args: []byte{0x90}}
	chunks := chunksOf(64)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendFrameHead(buf[:0], &h, chunks); err != nil {
			b.Fatal(err)
		}
	}
}
