package parcel

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

// fuzzMaxFrame is the frame limit of the fuzzed reader.
const fuzzMaxFrame = 1 << 20

// fuzzSeeds are valid and broken streams to start from. The committed files
// in testdata/fuzz/FuzzFrameReader hold more.
func fuzzSeeds(t testing.TB) [][]byte {
	single := appendFrame(t, nil, Header{Kind: KindCall, Source: 1, Dest: 2, Action: "tile.add", Request: 5, Args: []byte{0x92, 1, 2}}, chunksOf(16, 0, 3))
	two := appendFrame(t, append([]byte(nil), single...), Header{Kind: KindReply, Request: 5, Code: CodeActionError, Error: "boom"}, nil)
	heartbeat := appendFrame(t, nil, Header{Kind: KindHeartbeat, Action: byeVerb}, nil)
	return [][]byte{
		nil,
		single,
		two,
		heartbeat,
		single[:len(single)-5],  // truncated in a chunk
		single[:FrameHeadLen+3], // truncated in the header
		append(frameHead(1<<40, 10), single[12:]...), // oversized
		frameWithChunkLengths(t, []uint64{5, math.MaxUint64 - 1, 4}, 7),
	}
}

func FuzzFrameReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := NewFrameReader(bytes.NewReader(data), fuzzMaxFrame)
		// Every other chunk goes into memory "provided by the handler".
		buf := func(h *Header, i int, n int) []byte {
			if n < 0 || n > len(data) {
				t.Fatalf("BufferFunc asked for %d bytes from %d bytes of input", n, len(data))
			}
			if i%2 == 0 {
				return make([]byte, n)
			}
			return nil
		}
		var err error
		var whole []*Parcel
		read := 0
		alloc := allocatedBy(func() {
			for err == nil {
				var p *Parcel
				p, err = fr.Next(buf)
				if err != nil {
					break
				}
				whole = append(whole, p)
				read += int(fr.LastFrameLen())
				if read > len(data) {
					t.Fatalf("frames of %d bytes read from %d bytes", read, len(data))
				}
				if p.Size() > len(data) || len(p.Chunks) > len(data) || len(p.Header.Chunks) != len(p.Chunks) {
					t.Fatalf("parcel of %d bytes in %d chunks (%d listed) from %d bytes", p.Size(), len(p.Chunks), len(p.Header.Chunks), len(data))
				}
				for i, c := range p.Chunks {
					if uint64(len(c)) != p.Header.Chunks[i] {
						t.Fatalf("chunk %d has %d bytes, header says %d", i, len(c), p.Header.Chunks[i])
					}
				}
				if len(p.Header.Action)+len(p.Header.Error)+len(p.Header.Args) > len(data) {
					t.Fatal("header larger than its input")
				}
				if p.Header.Version != HeaderVersion || p.Header.Kind < KindCall || p.Header.Kind > KindHeartbeat {
					t.Fatalf("accepted header %+v", p.Header)
				}
			}
		})
		var fe *FrameError
		if err != io.EOF && !errors.As(err, &fe) {
			t.Fatalf("error %v (%T) is neither io.EOF nor a *FrameError", err, err)
		}
		// The last, failed frame may have allocated up to the frame limit
		// (its chunk memory) before the data ran out; everything else is
		// bounded by the input.
		if limit := uint64(3*fuzzMaxFrame + 64*len(data) + 1<<20); alloc > limit {
			t.Fatalf("reading %d bytes allocated %d bytes", len(data), alloc)
		}
		// The same bytes fed in pieces, as the raw and nbio readers feed
		// the decoder, give the same frames and end the same way.
		if len(data) > 0 {
			piece := 1 + int(data[len(data)-1])%97
			d := newFrameDecoder(fuzzMaxFrame, nil)
			var got []*Parcel
			var ferr error
			for src := data; len(src) > 0 && ferr == nil; {
				b, direct := d.space()
				n := copy(b, src[:min(piece, len(src))])
				src = src[n:]
				ferr = d.feed(n, direct, func(p *Parcel, _ int64) { got = append(got, p) })
			}
			if ferr == nil {
				ferr = d.end()
			}
			if len(got) != len(whole) || (ferr == io.EOF) != (err == io.EOF) {
				t.Fatalf("in pieces of %d: %d frames ending in %v; whole: %d frames ending in %v", piece, len(got), ferr, len(whole), err)
			}
			for i := range got {
				if !sameHeader(&got[i].Header, &whole[i].Header) || len(got[i].Chunks) != len(whole[i].Chunks) {
					t.Fatalf("in pieces of %d: frame %d is %+v, whole %+v", piece, i, got[i].Header, whole[i].Header)
				}
				for j := range got[i].Chunks {
					if !bytes.Equal(got[i].Chunks[j], whole[i].Chunks[j]) {
						t.Fatalf("in pieces of %d: frame %d chunk %d differs", piece, i, j)
					}
				}
			}
		}
	})
}
