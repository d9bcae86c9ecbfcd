package parcel

import (
	"bufio"
	"bytes"
	"testing"
)

// The trace context of a call travels in the header, byte for byte, through
// a frame; an empty one stays empty.
func TestHeaderTraceRoundTrip(t *testing.T) {
	for _, tr := range [][]byte{nil, {1}, bytes.Repeat([]byte{0xa5}, 25)} {
		frame := appendFrame(t, nil, Header{Kind: KindCall, Action: "tile.add", Request: 3, Trace: tr, Args: []byte{0x90}}, chunksOf(8))
		p, err := NewFrameReader(bufio.NewReader(bytes.NewReader(frame)), 0).Next(nil)
		if err != nil {
			t.Fatalf("trace %x: %v", tr, err)
		}
		if !bytes.Equal(p.Header.Trace, tr) || p.Header.Action != "tile.add" || len(p.Chunks) != 1 || len(p.Chunks[0]) != 8 {
			t.Fatalf("trace %x: read back header %+v with %d chunks", tr, p.Header, len(p.Chunks))
		}
	}
}
