package parcel

import (
	"encoding/binary"
	"fmt"
)

// frameDecoder assembles frames from the pieces a non-blocking reader gets:
// it is fed whatever bytes arrived and keeps its place between calls. It
// applies the checks of FrameReader in the same order, so a frame is refused
// before anything is allocated for it.
//
// Bytes are read either into the decoder's staging buffer (frame prefixes,
// headers, and whatever follows them in the same read) or, while a chunk is
// being filled and the staging buffer is empty, straight into the chunk's
// memory — the memory Handler.Buffer provided — so a large chunk is read
// from the socket into its destination without a copy.
type frameDecoder struct {
	maxFrame int64
	buf      BufferFunc // chunk memory; may be nil
	names    nameCache  // the action names of the connection's parcels

	stage []byte // staging buffer; unconsumed bytes are stage[r:w]
	r, w  int

	// The frame whose chunks are being filled (in.p): in is nil between
	// chunks phases.
	in    *inParcel
	ci    int   // chunk being filled
	off   int   // bytes of chunk ci filled
	frame int64 // length on the wire of the current frame
}

const stageLen = 64 << 10

func newFrameDecoder(maxFrame int64, buf BufferFunc) *frameDecoder {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &frameDecoder{maxFrame: maxFrame, buf: buf, stage: make([]byte, stageLen)}
}

// space returns where the next read should go and whether that is chunk
// memory (direct) rather than the staging buffer.
func (d *frameDecoder) space() (b []byte, direct bool) {
	if d.in != nil && d.r == d.w {
		d.r, d.w = 0, 0
		return d.in.p.Chunks[d.ci][d.off:], true
	}
	if d.r == d.w {
		d.r, d.w = 0, 0
	}
	if d.w == len(d.stage) {
		// Only a frame prefix or header can be incomplete at the end of a
		// full buffer (chunk bytes are consumed as they come): move it to
		// the front, growing the buffer if the header needs more room.
		n := copy(d.stage, d.stage[d.r:d.w])
		d.r, d.w = 0, n
	}
	return d.stage[d.w:], false
}

// fed consumes n bytes just read into the slice space returned, calling
// deliver for every frame completed. It returns the first error; after an
// error the stream is unusable.
func (d *frameDecoder) fed(n int, direct bool, deliver func(p *Parcel, wire int64)) error {
	if direct {
		d.off += n
		return d.nextChunk(deliver)
	}
	d.w += n
	for d.r < d.w {
		if d.in == nil {
			done, err := d.head()
			if err != nil || !done {
				return err
			}
			if err := d.nextChunk(deliver); err != nil {
				return err
			}
			continue
		}
		c := d.in.p.Chunks[d.ci][d.off:]
		m := copy(c, d.stage[d.r:d.w])
		d.r += m
		d.off += m
		if err := d.nextChunk(deliver); err != nil {
			return err
		}
	}
	return nil
}

// inParcel is a received parcel with room for the small arguments, chunk
// lengths and chunks of most parcels, and for the bytes of small chunks
// that the handler gives no memory for, so that receiving one costs one
// allocation (and the action name's string for calls).
type inParcel struct {
	p      Parcel
	args   [32]byte
	lens   [2]uint64
	chunks [2][]byte
	small  [SmallChunks / 8]float64 // 8-byte aligned, as a []float64 view needs
	used   int                      // bytes of small taken
}

// SmallChunks is how many bytes of small chunks a received parcel holds in
// its own memory: a handler gives no memory (Handler.Buffer returns nil)
// for the chunks that fit, which then cost no allocation of their own.
const SmallChunks = 64

// chunk returns n bytes for a chunk: from the parcel's room for small
// chunks, 8-byte aligned, while it lasts; else new memory.
func (in *inParcel) chunk(n int) []byte {
	if n <= SmallChunks-in.used {
		c := Float64Bytes(in.small[:])[in.used : in.used+n : in.used+n]
		in.used += (n + 7) &^ 7
		return c
	}
	return make([]byte, n)
}

// head decodes the frame prefix and header at stage[r:], if they have
// arrived. It reports whether they had.
func (d *frameDecoder) head() (bool, error) {
	avail := d.w - d.r
	if avail < frameHeadLen {
		return false, nil
	}
	pre := d.stage[d.r : d.r+frameHeadLen]
	body := binary.LittleEndian.Uint64(pre)
	hlen := uint64(binary.LittleEndian.Uint32(pre[8:]))
	if body > uint64(d.maxFrame) {
		return false, &FrameError{"frame length", fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, body, d.maxFrame)}
	}
	if hlen > body || hlen > MaxHeader || hlen == 0 {
		return false, &FrameError{"frame length", fmt.Errorf("header length %d invalid for body of %d bytes", hlen, body)}
	}
	need := frameHeadLen + int(hlen)
	if avail < need {
		if need > len(d.stage) {
			// The header is bounded by MaxHeader, checked above.
			grown := make([]byte, need)
			d.w = copy(grown, d.stage[d.r:d.w])
			d.r = 0
			d.stage = grown
		}
		return false, nil
	}
	in := new(inParcel)
	p := &in.p
	p.Header.Args, p.Header.Chunks = in.args[:0], in.lens[:0]
	if err := readHeader(d.stage[d.r+frameHeadLen:d.r+need], &p.Header, &d.names); err != nil {
		return false, &FrameError{"header", err}
	}
	rest := body - hlen
	for i, n := range p.Header.Chunks {
		if n > rest {
			return false, &FrameError{"header", fmt.Errorf("chunk %d of %d bytes overruns the frame's %d bytes of chunks", i, n, body-hlen)}
		}
		rest -= n
	}
	if rest != 0 {
		return false, &FrameError{"header", fmt.Errorf("chunk lengths add up to %d, frame carries %d", body-hlen-rest, body-hlen)}
	}
	d.r += need
	if len(d.stage) > stageLen && d.r == d.w {
		d.stage, d.r, d.w = make([]byte, stageLen), 0, 0 // let a huge header go
	}
	switch n := len(p.Header.Chunks); {
	case n == 0:
		p.Header.Chunks = nil
	case n <= len(in.chunks):
		p.Chunks = in.chunks[:n:n]
	default:
		p.Chunks = make([][]byte, n)
	}
	d.in, d.ci, d.off = in, -1, 0
	d.frame = int64(frameHeadLen + body)
	return true, nil
}

// nextChunk moves on from a filled chunk: to the next one that is not
// empty, asking for its memory, or, after the last, delivers the parcel.
func (d *frameDecoder) nextChunk(deliver func(p *Parcel, wire int64)) error {
	p := &d.in.p
	if d.ci >= 0 && d.off < len(p.Chunks[d.ci]) {
		return nil
	}
	for {
		d.ci++
		d.off = 0
		if d.ci == len(p.Chunks) {
			d.in = nil
			deliver(p, d.frame)
			return nil
		}
		n := p.Header.Chunks[d.ci]
		var c []byte
		if d.buf != nil {
			c = d.buf(&p.Header, d.ci, int(n))
		}
		if uint64(len(c)) != n {
			c = d.in.chunk(int(n))
		}
		p.Chunks[d.ci] = c
		if n > 0 {
			return nil
		}
	}
}

// midFrame reports whether the decoder holds part of a frame: the stream
// ending now would truncate it.
func (d *frameDecoder) midFrame() bool { return d.in != nil || d.r < d.w }
