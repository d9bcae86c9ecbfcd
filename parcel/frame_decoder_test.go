package parcel

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"unsafe"
)

func TestFrameDecoderPieces(t *testing.T) {
	// The same stream fed in pieces of every size from 1 byte up decodes to
	// what FrameReader reads, chunks landing in the memory provided.
	var stream []byte
	var want []*Parcel
	for k := range 6 {
		h := Header{Kind: KindCall, Action: fmt.Sprintf("p%d", k), Request: uint64(k), Args: []byte{byte(k)}}
		var chunks [][]byte
		switch k % 3 {
		case 1:
			chunks = chunksOf(0, 70000, 3)
		case 2:
			chunks = chunksOf(5)
		}
		stream = appendFrame(t, stream, h, chunks)
		if k == 3 {
			stream = appendFrame(t, stream, Header{Kind: KindHeartbeat}, nil)
		}
	}
	fr := NewFrameReader(bufio.NewReader(strings.NewReader(string(stream))), 0)
	for {
		p, err := fr.Next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	for _, piece := range []int{1, 7, 12, 100, 4096, 65536, len(stream)} {
		provided := map[string]bool{}
		d := newFrameDecoder(0, func(h *Header, i int, n int) []byte {
			if n == 70000 {
				provided[h.Action] = true
				return make([]byte, n)
			}
			return nil
		})
		var got []*Parcel
		var wires int64
		src := stream
		for len(src) > 0 {
			b, direct := d.space()
			n := min(piece, len(src), len(b))
			copy(b, src[:n])
			src = src[n:]
			if err := d.feed(n, direct, func(p *Parcel, wire int64) { got = append(got, p); wires += wire }); err != nil {
				t.Fatalf("pieces of %d: %v", piece, err)
			}
		}
		if d.midFrame() || wires != int64(len(stream)) {
			t.Fatalf("pieces of %d: decoder mid-frame %v, %d of %d bytes in frames", piece, d.midFrame(), wires, len(stream))
		}
		if len(got) != len(want) {
			t.Fatalf("pieces of %d: %d parcels, want %d", piece, len(got), len(want))
		}
		for i := range want {
			if !sameHeader(&got[i].Header, &want[i].Header) || len(got[i].Chunks) != len(want[i].Chunks) {
				t.Fatalf("pieces of %d: parcel %d is %+v, want %+v", piece, i, got[i].Header, want[i].Header)
			}
			for j := range want[i].Chunks {
				if string(got[i].Chunks[j]) != string(want[i].Chunks[j]) {
					t.Fatalf("pieces of %d: parcel %d chunk %d differs", piece, i, j)
				}
			}
		}
		if len(provided) != 2 {
			t.Fatalf("pieces of %d: chunk memory provided for %v", piece, provided)
		}
	}
}

// Small chunks that the handler gives no memory for are read into the
// parcel's own room, 8-byte aligned: a frame of two that fit costs one
// allocation, and one whose second chunk does not fit one more.
func TestFrameDecoderSmallChunks(t *testing.T) {
	for _, tc := range []struct {
		lens   []int
		allocs float64
	}{{[]int{24, 40}, 1}, {[]int{32, 40}, 2}} {
		chunks := chunksOf(tc.lens...)
		frame := appendFrame(t, nil, Header{Kind: KindCall}, chunks)
		d := newFrameDecoder(0, func(*Header, int, int) []byte { return nil })
		var got *Parcel
		feed := func() {
			b, direct := d.space()
			n := copy(b, frame)
			if err := d.feed(n, direct, func(p *Parcel, _ int64) { got = p }); err != nil {
				t.Fatal(err)
			}
		}
		if allocs := testing.AllocsPerRun(100, feed); allocs != tc.allocs {
			t.Errorf("chunks of %v: %v allocations per frame, want %v", tc.lens, allocs, tc.allocs)
		}
		for i, c := range got.Chunks {
			if string(c) != string(chunks[i]) {
				t.Fatalf("chunks of %v: chunk %d differs", tc.lens, i)
			}
			if uintptr(unsafe.Pointer(unsafe.SliceData(c)))%8 != 0 {
				t.Errorf("chunks of %v: chunk %d is not 8-byte aligned", tc.lens, i)
			}
		}
	}
}
