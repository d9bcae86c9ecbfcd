//go:build linux

package parcel

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// putFrame writes the bytes appendFrameHead and the chunks would, in
// place, for headers over the boundaries of every encoding; it leaves a
// frame over its limit, or one that would wrap around the end of the
// ring or not fit in its room, to the caller (0) and writes nothing then.
func TestRingPutFrame(t *testing.T) {
	seg, err := newRingSegment(minRingBytes, make([]byte, ringTokenLen))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.close()
	r := &seg.rings[0]
	rng := rand.New(rand.NewPCG(3, 4))
	written, left := 0, 0
	const limit = 4096 // smaller than some frames, so that the limit is tried too
	for range 2000 {
		h, chunks := randomHeader(rng)
		if len(chunks) > 2 {
			chunks = chunks[:2]
		}
		want, err := AppendFrameHead(nil, &h, chunks)
		if err != nil {
			continue // a header Send refuses
		}
		for _, c := range chunks {
			want = append(want, c...)
		}
		if len(want) > int(r.size/4) {
			continue // the piecewise write below assumes room for it
		}
		start := r.pos
		n, err := r.putFrame(&h, chunks, limit)
		if err != nil {
			t.Fatal(err)
		}
		off := start & (r.size - 1)
		if n == 0 {
			left++
			// putFrame asks for an upper bound of the frame's length:
			// up to headerFixedMax and 9 bytes a chunk more than it is.
			slack := headerFixedMax + 9*len(chunks)
			if len(want)+slack <= limit && off+uint64(len(want)+slack) <= r.size {
				t.Fatalf("putFrame left a frame of %d bytes at %d to the caller, which fits", len(want), off)
			}
			if r.pos != start {
				t.Fatalf("putFrame left a frame of %d bytes to the caller but moved the position by %d", len(want), r.pos-start)
			}
			// The caller's way: piece by piece, across the end of the ring.
			for b := want; len(b) > 0; {
				free, err := r.writable()
				if err != nil {
					t.Fatal(err)
				}
				b = b[r.put(b, free):]
			}
		} else {
			written++
			if n != len(want) || !bytes.Equal(r.data[off:off+uint64(n)], want) {
				t.Fatalf("putFrame wrote %d bytes %x, want %d bytes %x", n, r.data[off:off+uint64(n)], len(want), want)
			}
		}
		r.publish()
		// Read it all back, as the reader would: the ring is never full.
		r.ctl.tail.Store(r.pos)
	}
	if written == 0 || left == 0 {
		t.Fatalf("%d frames written in place and %d left to the caller: the test wants both", written, left)
	}
}
