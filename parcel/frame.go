package parcel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/tinylib/msgp/msgp"
)

const (
	// DefaultMaxFrame is the largest frame body a parcelport accepts unless
	// configured otherwise: 1 GiB.
	DefaultMaxFrame int64 = 1 << 30
	// MaxHeader is the largest encoded header accepted. Headers carry small
	// arguments only; bulk data travels in chunks.
	MaxHeader = 16 << 20
	// FrameHeadLen is the length of a frame's fixed prefix: its body and
	// header lengths.
	FrameHeadLen = 12
	// MaxChunks bounds the number of chunks in one parcel (Lengths):
	// Send refuses more, and so does a reader.
	MaxChunks = 65536
	// MaxArgs bounds Header.Args and Header.Trace (Bytes): Send refuses
	// more, and so does a reader.
	MaxArgs = 65536
)

// ErrFrameTooLarge is returned (wrapped in a *FrameError) for a frame whose
// declared body is longer than the configured maximum.
var ErrFrameTooLarge = errors.New("parcel: frame too large")

// FrameError describes a frame that could not be read.
type FrameError struct {
	Op  string // what was being read: "frame length", "header", "chunk 3", ...
	Err error
}

func (e *FrameError) Error() string { return "parcel: reading " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FrameError) Unwrap() error { return e.Err }

// AppendFrameHead appends the frame prefix and h, encoded with the lengths
// of chunks and this build's HeaderVersion, to dst; h itself is not
// changed. The frame is complete once the chunks follow it on the wire.
func AppendFrameHead(dst []byte, h *Header, chunks [][]byte) ([]byte, error) {
	if err := checkHeader(h, len(chunks)); err != nil {
		return dst, err
	}
	return appendFrameHead(dst, h, chunks)
}

// appendFrameHead is AppendFrameHead for a header that checkHeader passed
// (a parcel that Send checked with checkSend).
func appendFrameHead(dst []byte, h *Header, chunks [][]byte) ([]byte, error) {
	var body uint64
	for _, c := range chunks {
		body += uint64(len(c))
	}
	start := len(dst)
	dst = append(dst, make([]byte, FrameHeadLen)...)
	dst = appendHeader(dst, h, chunks)
	hlen := len(dst) - start - FrameHeadLen
	if hlen > MaxHeader {
		return dst[:start], fmt.Errorf("parcel: header of %d bytes exceeds %d (send bulk data as chunks)", hlen, MaxHeader)
	}
	binary.LittleEndian.PutUint64(dst[start:], body+uint64(hlen))
	binary.LittleEndian.PutUint32(dst[start+8:], uint32(hlen))
	return dst, nil
}

// checkHeader refuses, before anything is written, a header the reading side
// would refuse: sending it would cost the whole connection.
func checkHeader(h *Header, nchunks int) error {
	return checkHeaderBound(h, nchunks, headerBound(h, nchunks))
}

// checkHeaderBound is checkHeader for a header whose headerBound is bound.
func checkHeaderBound(h *Header, nchunks, bound int) error {
	switch {
	case h.Kind < KindCall || h.Kind > KindHeartbeat:
		return fmt.Errorf("parcel: unknown parcel kind %d", h.Kind)
	case nchunks > MaxChunks:
		return fmt.Errorf("parcel: %d chunks, limit %d", nchunks, MaxChunks)
	case len(h.Args) > MaxArgs:
		return fmt.Errorf("parcel: %d bytes of header arguments, limit %d (send bulk data as chunks)", len(h.Args), MaxArgs)
	case bound > MaxHeader:
		return fmt.Errorf("parcel: header of up to %d bytes exceeds %d (send bulk data as chunks)", bound, MaxHeader)
	}
	return nil
}

// headerBound is an upper bound of the encoded length of h carrying nchunks
// chunk lengths.
func headerBound(h *Header, nchunks int) int {
	return h.Msgsize() + (nchunks-len(h.Chunks))*msgp.Uint64Size
}

// BufferFunc returns the memory chunk i of the parcel headed by h, n bytes
// long, is read into. Returning nil (or a slice of another length) lets the
// reader allocate.
type BufferFunc func(h *Header, i int, n int) []byte

// FrameReader reads frames from a byte stream, blocking in the stream's
// Read: a loop over the decoder that every parcelport's reader uses, so it
// refuses exactly what they refuse (see frameDecoder).
type FrameReader struct {
	r     io.Reader
	d     *frameDecoder
	err   error // what the last read returned besides bytes
	empty int   // reads in a row that returned nothing
	last  int64
}

// LastFrameLen is the length on the wire of the frame Next returned last.
func (fr *FrameReader) LastFrameLen() int64 { return fr.last }

// NewFrameReader reads frames from r, refusing any frame whose body exceeds
// maxFrame (DefaultMaxFrame when maxFrame <= 0). It reads r in pieces of up
// to 64 KiB, and reads a chunk straight into its memory, so r needs no
// buffering of its own.
func NewFrameReader(r io.Reader, maxFrame int64) *FrameReader {
	return &FrameReader{r: r, d: newFrameDecoder(maxFrame, nil)}
}

// Next reads one frame. Chunk memory comes from buf where it returns a slice
// of the right length. Next returns io.EOF only when the stream ends cleanly
// between frames; every other failure is a *FrameError and leaves the stream
// unusable.
func (fr *FrameReader) Next(buf BufferFunc) (*Parcel, error) {
	d := fr.d
	d.buf = buf
	for {
		p, wire, err := d.next()
		if err != nil {
			return nil, err
		}
		if p != nil {
			fr.last = wire
			return p, nil
		}
		if fr.err != nil {
			if fr.err == io.EOF {
				return nil, d.end()
			}
			return nil, d.failed(fr.err)
		}
		b, direct := d.space()
		n, err := fr.r.Read(b)
		d.advance(n, direct)
		fr.err = err
		if n == 0 && err == nil {
			if fr.empty++; fr.empty == maxEmptyReads {
				fr.err = io.ErrNoProgress
			}
		} else {
			fr.empty = 0
		}
	}
}

// maxEmptyReads is how many reads in a row may return neither bytes nor
// an error before FrameReader gives up on the stream (io.ErrNoProgress),
// as bufio.Reader does.
const maxEmptyReads = 100

// buffered reports whether bytes read from the stream wait to be decoded:
// if not, the next frame needs a read.
func (fr *FrameReader) buffered() bool { return fr.d.r < fr.d.w }

// DecodeHeader decodes an encoded header, refusing any version but
// HeaderVersion before interpreting the rest.
func DecodeHeader(b []byte, h *Header) error {
	n, rest, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return fmt.Errorf("header is not a msgpack tuple: %w", err)
	}
	if n == 0 {
		return errors.New("empty header tuple")
	}
	v, _, err := msgp.ReadUint64Bytes(rest)
	if err != nil {
		return fmt.Errorf("header version: %w", err)
	}
	if v != uint64(HeaderVersion) {
		return fmt.Errorf("header version %d, this build speaks %d", v, HeaderVersion)
	}
	// Every length the header claims is checked against the bytes there
	// before memory is taken for it (strings by msgp, the byte fields and
	// the chunk list by Bytes and Lengths), so decoding allocates no more
	// than b is long, without a walk of the encoding first.
	rest, err = h.UnmarshalMsg(b)
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d stray bytes after header", len(rest))
	}
	if len(h.Chunks) > MaxChunks {
		return fmt.Errorf("%d chunks, limit %d", len(h.Chunks), MaxChunks)
	}
	if h.Kind < KindCall || h.Kind > KindHeartbeat {
		return fmt.Errorf("unknown parcel kind %d", h.Kind)
	}
	return nil
}

// checkSend refuses a parcel the receiving side would refuse, before it
// costs the connection.
func checkSend(pc *Parcel, maxFrame int64) error {
	if pc.Header.Kind == KindHeartbeat {
		return errors.New("parcel: heartbeats are the parcelport's own")
	}
	bound := headerBound(&pc.Header, len(pc.Chunks))
	if err := checkHeaderBound(&pc.Header, len(pc.Chunks), bound); err != nil {
		return err
	}
	body := int64(bound)
	for _, c := range pc.Chunks {
		body += int64(len(c))
	}
	if body > maxFrame {
		return fmt.Errorf("%w: parcel of up to %d bytes, limit %d", ErrFrameTooLarge, body, maxFrame)
	}
	return nil
}
