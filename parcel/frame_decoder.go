package parcel

import (
	"encoding/binary"
	"fmt"
	"io"
)

// frameDecoder is the one reader of the frame layout (see the package
// documentation, "Wire format"): every reader of every parcelport feeds it
// the bytes of a connection as they arrive, and it returns the frames they
// complete. It does no I/O and keeps its place between calls, so the same
// code serves a reader that blocks (FrameReader, a loop over it), TCP's raw
// reader, and nbio's event loop, which is handed whatever a socket had.
//
// It is where a peer's bytes are checked, in this order and each before
// anything is allocated for what they declare:
//
//   - the body length against maxFrame (ErrFrameTooLarge);
//   - the header length: not zero, at most MaxHeader, within the body;
//   - the header: its version first, then every length in it against the
//     bytes there (readHeader, DecodeHeader), its kind, its chunk count;
//   - the chunk lengths: each within what is left of the body and all of
//     them adding up to it, checked by subtraction so that hostile lengths
//     cannot wrap around;
//   - the end of the stream: inside a frame it is io.ErrUnexpectedEOF (end).
//
// Bytes are read either into the decoder's staging buffer (frame prefixes,
// headers, and whatever follows them in the same read) or, while a chunk is
// being filled and the staging buffer is empty, straight into the chunk's
// memory — the memory Handler.Buffer provided — so a large chunk is read
// from the socket into its destination without a copy.
//
// Its use is a loop: read into space, tell advance how much came, then
// take frames from next until it returns none (feed does the last two).
// space may be called only once next has returned no frame.
type frameDecoder struct {
	maxFrame int64
	buf      BufferFunc // chunk memory; may be nil
	names    nameCache  // the action names of the connection's parcels

	stage []byte // staging buffer; unconsumed bytes are stage[r:w]
	r, w  int

	// The frame whose chunks are being filled (in.p): in is nil between
	// frames.
	in    *inParcel
	ci    int   // chunk being filled
	off   int   // bytes of chunk ci filled
	frame int64 // length on the wire of the current frame

	// With recycle set (a reader whose handler is a Recycler), last is
	// the parcel next returned last; spare, if not nil, is memory the
	// next frame's parcel is read into (reuse).
	recycle     bool
	last, spare *inParcel
}

const stageLen = 64 << 10

func newFrameDecoder(maxFrame int64, buf BufferFunc) *frameDecoder {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &frameDecoder{maxFrame: maxFrame, buf: buf, stage: make([]byte, stageLen)}
}

// space returns where the next read should go and whether that is chunk
// memory (direct) rather than the staging buffer. It is never empty.
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
		// the front; next grows the buffer if the header needs more room.
		n := copy(d.stage, d.stage[d.r:d.w])
		d.r, d.w = 0, n
	}
	return d.stage[d.w:], false
}

// advance takes in n bytes just read into the slice space returned.
func (d *frameDecoder) advance(n int, direct bool) {
	if direct {
		d.off += n
	} else {
		d.w += n
	}
}

// next returns the next frame the bytes taken in complete, and its length
// on the wire, or a nil parcel when it needs more bytes. After an error the
// stream is unusable.
func (d *frameDecoder) next() (*Parcel, int64, error) {
	for {
		if d.in == nil {
			done, err := d.head()
			if err != nil || !done {
				return nil, 0, err
			}
		} else if d.ci >= 0 {
			c := d.in.p.Chunks[d.ci]
			if d.off < len(c) {
				if d.r == d.w {
					return nil, 0, nil
				}
				m := copy(c[d.off:], d.stage[d.r:d.w])
				d.r += m
				d.off += m
				if d.off < len(c) {
					return nil, 0, nil
				}
			}
		}
		if p := d.nextChunk(); p != nil {
			return p, d.frame, nil
		}
	}
}

// feed takes in n bytes just read into the slice space returned and calls
// deliver for every frame they complete. It returns the first error; after
// an error the stream is unusable.
func (d *frameDecoder) feed(n int, direct bool, deliver func(p *Parcel, wire int64)) error {
	d.advance(n, direct)
	for {
		p, wire, err := d.next()
		if p == nil {
			return err
		}
		deliver(p, wire)
	}
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

// checkFrameHead checks the prefix of a frame: its body length against
// maxFrame, its header length against the body and MaxHeader.
func checkFrameHead(body, hlen uint64, maxFrame int64) error {
	if body > uint64(maxFrame) {
		return &FrameError{"frame length", fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, body, maxFrame)}
	}
	if hlen > body || hlen > MaxHeader || hlen == 0 {
		return &FrameError{"frame length", fmt.Errorf("header length %d invalid for body of %d bytes", hlen, body)}
	}
	return nil
}

// checkChunkLengths checks that the chunk lengths a header lists fill the
// frame's chunk bytes exactly. It subtracts instead of adding: a sum of
// hostile lengths could wrap.
func checkChunkLengths(lens []uint64, chunkBytes uint64) error {
	rest := chunkBytes
	for i, n := range lens {
		if n > rest {
			return &FrameError{"header", fmt.Errorf("chunk %d of %d bytes overruns the frame's %d bytes of chunks", i, n, chunkBytes)}
		}
		rest -= n
	}
	if rest != 0 {
		return &FrameError{"header", fmt.Errorf("chunk lengths add up to %d, frame carries %d", chunkBytes-rest, chunkBytes)}
	}
	return nil
}

// head decodes the frame prefix and header at stage[r:], if they have
// arrived. It reports whether they had.
func (d *frameDecoder) head() (bool, error) {
	avail := d.w - d.r
	if avail < FrameHeadLen {
		return false, nil
	}
	pre := d.stage[d.r : d.r+FrameHeadLen]
	body := binary.LittleEndian.Uint64(pre)
	hlen := uint64(binary.LittleEndian.Uint32(pre[8:]))
	if err := checkFrameHead(body, hlen, d.maxFrame); err != nil {
		return false, err
	}
	need := FrameHeadLen + int(hlen)
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
	in := d.spare
	if in != nil {
		d.spare = nil
	} else {
		in = new(inParcel)
	}
	p := &in.p
	p.Header.Args, p.Header.Chunks = in.args[:0], in.lens[:0]
	if err := readHeader(d.stage[d.r+FrameHeadLen:d.r+need], &p.Header, &d.names); err != nil {
		return false, &FrameError{"header", err}
	}
	if err := checkChunkLengths(p.Header.Chunks, body-hlen); err != nil {
		return false, err
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
	d.frame = int64(FrameHeadLen + body)
	return true, nil
}

// nextChunk moves on from a filled chunk (or the header) to the next chunk
// that is not empty, asking for its memory, or, after the last, ends the
// frame and returns its parcel.
func (d *frameDecoder) nextChunk() *Parcel {
	p := &d.in.p
	for {
		d.ci++
		d.off = 0
		if d.ci == len(p.Chunks) {
			if d.recycle {
				d.last = d.in
			}
			d.in = nil
			return p
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

// reuse lets the decoder read the next frame's parcel into the memory of
// p, the parcel it returned last, whose receiver keeps nothing of it: not
// the parcel, its header, nor the chunks the decoder gave memory for (see
// Recycler). Any other p is ignored.
func (d *frameDecoder) reuse(p *Parcel) {
	if d.last != nil && &d.last.p == p {
		*d.last = inParcel{} // keeps none of the chunks' memory alive
		d.spare, d.last = d.last, nil
	}
}

// Recycler is a Handler that can tell a port it keeps nothing of a parcel
// once it has received it, so that the port reads the next parcel from
// that peer into the same memory instead of allocating: a port whose
// readers reuse parcels (the SHM port's ring readers) calls ReceiveOnce
// instead of Receive.
type Recycler interface {
	Handler
	// ReceiveOnce is Receive, reporting whether the handler keeps p past
	// the call: the parcel, its header (Args, Trace, Chunks), or chunk
	// memory that Buffer did not provide. If it does not, the port may
	// overwrite all of them with the next parcel.
	ReceiveOnce(p *Parcel) (kept bool)
}

// midFrame reports whether the decoder holds part of a frame: the stream
// ending now would truncate it.
func (d *frameDecoder) midFrame() bool { return d.in != nil || d.r < d.w }

// end is what the stream ending now means: io.EOF between frames, else a
// *FrameError wrapping io.ErrUnexpectedEOF that says where the frame was
// cut.
func (d *frameDecoder) end() error {
	if !d.midFrame() {
		return io.EOF
	}
	return d.failed(io.ErrUnexpectedEOF)
}

// failed wraps err, a failure to read more of the stream, in a
// *FrameError saying which part of a frame was being read.
func (d *frameDecoder) failed(err error) error {
	switch {
	case d.in != nil:
		return &FrameError{"chunk " + itoa(uint64(d.ci)), err}
	case d.w-d.r < FrameHeadLen:
		return &FrameError{"frame length", err}
	}
	return &FrameError{"header", err}
}
