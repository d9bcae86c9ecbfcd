package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// This file holds the byte-level pieces of OTF2 3.0 shared by the writer and
// the reader: compressed integers, chunk headers and record framing. The
// on-disk format, as verified against libotf2 3.0.2, is described in
// testdata/otf2/FORMAT.md beside the golden archives written by libotf2.

// OTF2 chunk and buffer markers.
const (
	otf2EndOfChunk  = 0x00 // rest of the chunk is padding
	otf2EndOfFile   = 0x02 // the last chunk ends 02 01
	otf2EndOfBuffer = 0x01
	otf2ChunkHeader = 0x03 // 03 42 <u64 first> <u64 last>
	otf2Endianness  = 0x42 // little endian

	otf2ChunkHeaderLen = 18
)

// Chunk sizes libotf2 accepts, and its defaults.
const (
	OTF2MinChunkSize        = 256 * 1024
	OTF2MaxChunkSize        = 16 * 1024 * 1024
	OTF2DefaultEvtChunkSize = 1024 * 1024
	OTF2DefaultDefChunkSize = 4 * 1024 * 1024
)

// Event record types.
const (
	otf2EvtTimestamp     = 0x05
	otf2EvtAttributeList = 0x06
	otf2EvtEnter         = 0x0c
	otf2EvtLeave         = 0x0d
	otf2EvtMetric        = 0x1f

	tsLen = 1 + 8 // a TIMESTAMP record: the type and a fixed u64
)

// Global definition record types.
const (
	otf2DefClockProperties = 5
	otf2DefString          = 10
	otf2DefAttribute       = 11
	otf2DefSystemTreeNode  = 12
	otf2DefLocationGroup   = 13
	otf2DefLocation        = 14
	otf2DefRegion          = 15
	otf2DefMetricMember    = 19
	otf2DefMetricClass     = 20
)

// OTF2Type is an OTF2 value type (OTF2_Type).
type OTF2Type uint8

// The OTF2 value types this package reads and writes.
const (
	OTF2TypeNone     OTF2Type = 0
	OTF2TypeUint8    OTF2Type = 1
	OTF2TypeUint16   OTF2Type = 2
	OTF2TypeUint32   OTF2Type = 3
	OTF2TypeUint64   OTF2Type = 4
	OTF2TypeInt8     OTF2Type = 5
	OTF2TypeInt16    OTF2Type = 6
	OTF2TypeInt32    OTF2Type = 7
	OTF2TypeInt64    OTF2Type = 8
	OTF2TypeFloat    OTF2Type = 9
	OTF2TypeDouble   OTF2Type = 10
	OTF2TypeString   OTF2Type = 11
	OTF2TypeRegion   OTF2Type = 14
	OTF2TypeLocation OTF2Type = 13
)

var otf2TypeNames = map[OTF2Type]string{
	OTF2TypeNone: "NONE", OTF2TypeUint8: "UINT8", OTF2TypeUint16: "UINT16",
	OTF2TypeUint32: "UINT32", OTF2TypeUint64: "UINT64", OTF2TypeInt8: "INT8",
	OTF2TypeInt16: "INT16", OTF2TypeInt32: "INT32", OTF2TypeInt64: "INT64",
	OTF2TypeFloat: "FLOAT", OTF2TypeDouble: "DOUBLE", OTF2TypeString: "STRING",
	OTF2TypeLocation: "LOCATION", OTF2TypeRegion: "REGION",
}

func (t OTF2Type) String() string {
	if s, ok := otf2TypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("OTF2Type(%d)", uint8(t))
}

// Undefined references (the type's maximum, written as FF).
const (
	OTF2UndefinedU32 = math.MaxUint32
	OTF2UndefinedU64 = math.MaxUint64
)

// appendU32c appends a compressed u32: 0 -> 00, max -> FF, otherwise a
// length byte and the low-order bytes.
func appendU32c(b []byte, v uint32) []byte {
	if v == math.MaxUint32 {
		return append(b, 0xff)
	}
	return appendCompressed(b, uint64(v))
}

// appendU64c appends a compressed u64.
func appendU64c(b []byte, v uint64) []byte {
	if v == math.MaxUint64 {
		return append(b, 0xff)
	}
	return appendCompressed(b, v)
}

// appendI64c appends a compressed i64: non-negative values as a u64,
// negative ones as 08 and eight bytes of two's complement.
func appendI64c(b []byte, v int64) []byte {
	if v < 0 {
		b = append(b, 8)
		return binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return appendCompressed(b, uint64(v))
}

// appendCompressed appends v as a length byte and its low-order bytes
// (putCompressed).
func appendCompressed(b []byte, v uint64) []byte {
	b = slices.Grow(b, estU64)
	return b[:len(b)+putCompressed(b[len(b):len(b)+estU64], v)]
}

func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// putU32c writes v at the start of b as appendU32c appends it and returns
// the number of bytes it takes. b must have room for estU32 bytes: the
// value is stored whole, and the bytes past its length are left for the
// next field to overwrite. It is appendU32c without the append, for the
// tracer, which encodes each event in place.
func putU32c(b []byte, v uint32) int {
	if v == math.MaxUint32 {
		b[0] = 0xff
		return 1
	}
	n := (bits.Len32(v) + 7) / 8
	b[0] = byte(n)
	binary.LittleEndian.PutUint32(b[1:estU32], v)
	return 1 + n
}

// putU64c is putU32c for a compressed u64 (appendU64c); b must have room
// for estU64 bytes.
func putU64c(b []byte, v uint64) int {
	if v == math.MaxUint64 {
		b[0] = 0xff
		return 1
	}
	return putCompressed(b, v)
}

// putCompressed writes v at the start of b as a length byte and its
// low-order bytes (none for 0) and returns the number of bytes that
// takes; b must have room for estU64 bytes, the value being stored whole.
func putCompressed(b []byte, v uint64) int {
	n := (bits.Len64(v) + 7) / 8
	b[0] = byte(n)
	binary.LittleEndian.PutUint64(b[1:estU64], v)
	return 1 + n
}

func appendString(b []byte, s string) []byte { return append(append(b, s...), 0) }

// Upper-bound sizes libotf2 uses to choose the record framing and to decide
// when to open a new chunk.
const (
	estU8  = 1
	estU32 = 5
	estU64 = 9
)

func estString(s string) int { return len(s) + 1 }

// appendRecord frames payload as a record of type typ: <typ><len u8> for an
// estimate below 255, <typ><FF><u64 len> otherwise.
func appendRecord(b []byte, typ byte, estimate int, payload []byte) []byte {
	b = append(b, typ)
	if estimate >= 255 {
		b = append(b, 0xff)
		b = appendU64(b, uint64(len(payload)))
	} else {
		b = append(b, byte(len(payload)))
	}
	return append(b, payload...)
}

// recordEstimate is the upper bound of a framed record with a payload
// estimate of est.
func recordEstimate(est int) int {
	if est >= 255 {
		return 1 + 9 + est
	}
	return 1 + 1 + est
}

// errShort is returned by the decoder when a field runs past the end.
var errShort = errors.New("unexpected end of data")

// decoder reads OTF2 fields from a byte slice; the first error sticks and
// later reads return zero values.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) u8() uint8 {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail(errShort)
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(errShort)
		return nil
	}
	v := d.b[d.off : d.off+n]
	d.off += n
	return v
}

func (d *decoder) fixedU64() uint64 {
	p := d.bytes(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (d *decoder) fixedU32() uint32 {
	p := d.bytes(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (d *decoder) compressed(max int) uint64 {
	n := d.u8()
	if d.err != nil {
		return 0
	}
	if n == 0xff {
		return math.MaxUint64
	}
	if int(n) > max {
		d.fail(fmt.Errorf("compressed integer of %d bytes (at most %d)", n, max))
		return 0
	}
	p := d.bytes(int(n))
	var v uint64
	for i, c := range p {
		v |= uint64(c) << (8 * i)
	}
	return v
}

func (d *decoder) u32c() uint32 {
	v := d.compressed(4)
	if v == math.MaxUint64 {
		return math.MaxUint32
	}
	return uint32(v)
}

func (d *decoder) u64c() uint64 { return d.compressed(8) }

func (d *decoder) i64c() int64 { return int64(d.compressed(8)) }

func (d *decoder) str() string {
	if d.err != nil {
		return ""
	}
	for i := d.off; i < len(d.b); i++ {
		if d.b[i] == 0 {
			s := string(d.b[d.off:i])
			d.off = i + 1
			return s
		}
	}
	d.fail(errors.New("unterminated string"))
	return ""
}

// recordLen reads the length of a framed record (u8, or FF and a u64).
func (d *decoder) recordLen() int {
	n := uint64(d.u8())
	if n == 0xff {
		n = d.fixedU64()
	}
	if d.err == nil && n > uint64(len(d.b)-d.off) {
		d.fail(fmt.Errorf("record length %d runs past the end of the chunk", n))
		return 0
	}
	return int(n)
}

// chunkHeader holds the two counters of a chunk header.
type chunkHeader struct{ first, last uint64 }

func appendChunkHeader(b []byte, h chunkHeader) []byte {
	b = append(b, otf2ChunkHeader, otf2Endianness)
	b = appendU64(b, h.first)
	return appendU64(b, h.last)
}

// splitChunks cuts a chunked file into the record bytes of each chunk (after
// its header, up to its end marker) and returns the headers. The last chunk
// must end with END_OF_FILE END_OF_BUFFER.
func splitChunks(data []byte, chunkSize uint64) ([][]byte, []chunkHeader, error) {
	if chunkSize < otf2ChunkHeaderLen+2 {
		return nil, nil, fmt.Errorf("chunk size %d too small", chunkSize)
	}
	var chunks [][]byte
	var hdrs []chunkHeader
	for off := uint64(0); ; off += chunkSize {
		if off >= uint64(len(data)) {
			return nil, nil, fmt.Errorf("chunk %d: missing (file ends at %d bytes without END_OF_FILE)", len(chunks), len(data))
		}
		end := min(off+chunkSize, uint64(len(data)))
		c := data[off:end]
		if len(c) < otf2ChunkHeaderLen {
			return nil, nil, fmt.Errorf("chunk %d at offset %d: truncated header (%d bytes)", len(chunks), off, len(c))
		}
		if c[0] != otf2ChunkHeader {
			return nil, nil, fmt.Errorf("chunk %d at offset %d: bad chunk marker %#02x", len(chunks), off, c[0])
		}
		if c[1] != otf2Endianness {
			return nil, nil, fmt.Errorf("chunk %d at offset %d: unsupported endianness %#02x", len(chunks), off, c[1])
		}
		hdrs = append(hdrs, chunkHeader{
			first: binary.LittleEndian.Uint64(c[2:]),
			last:  binary.LittleEndian.Uint64(c[10:]),
		})
		chunks = append(chunks, c[otf2ChunkHeaderLen:])
		if end == uint64(len(data)) {
			return chunks, hdrs, nil
		}
	}
}

// chunkWriter lays records out in chunks of a fixed size. Full chunks are
// handed to flush (or kept, when flush is nil).
type chunkWriter struct {
	cur    []byte
	size   uint64
	count  uint64 // events so far
	events bool   // event file: count events, reserve a timestamp
	first  uint64 // 1-based number of the chunk's first event
	done   []byte
	flush  func([]byte) error
}

func newChunkWriter(flush func([]byte) error, size uint64, events bool) *chunkWriter {
	c := &chunkWriter{size: size, events: events, flush: flush, first: 1}
	c.cur = appendChunkHeader(make([]byte, 0, 4096), chunkHeader{first: 1})
	return c
}

// free is the room left in the current chunk, keeping two bytes for the
// end markers.
func (c *chunkWriter) free() int { return int(c.size) - len(c.cur) - 2 }

// record appends one record (rec, with upper bound est). For an event
// file, ts says whether a TIMESTAMP record must precede it (it always does
// at the start of a chunk) and nEvents how many events rec holds.
func (c *chunkWriter) record(est int, rec []byte, ts bool, t uint64, nEvents uint64) error {
	if err := c.begin(est, ts, t); err != nil {
		return err
	}
	c.cur = append(c.cur, rec...)
	c.count += nEvents
	return nil
}

// begin makes room in the current chunk for a record of at most est bytes,
// starting the next chunk if needed, and for an event file writes the
// TIMESTAMP record t that precedes it when ts says so or a chunk starts.
// The record follows: appended, or encoded in place (room and commit).
func (c *chunkWriter) begin(est int, ts bool, t uint64) error {
	extra := 0
	if c.events {
		extra = tsLen
	}
	newChunk := false
	if extra+est >= c.free() && len(c.cur) > otf2ChunkHeaderLen {
		if err := c.nextChunk(); err != nil {
			return err
		}
		newChunk = true
	}
	if extra+est >= c.free() {
		return fmt.Errorf("otf2: record of up to %d bytes does not fit a chunk of %d", est, c.size)
	}
	if c.events && (ts || newChunk) {
		c.cur = append(c.cur, otf2EvtTimestamp)
		c.cur = appendU64(c.cur, t)
	}
	return nil
}

// room returns the est bytes after the end of the current chunk, for a
// record of at most est bytes to be encoded in place after begin; commit
// then takes the n bytes the record took.
func (c *chunkWriter) room(est int) []byte {
	if cap(c.cur)-len(c.cur) < est {
		c.cur = slices.Grow(c.cur, est)
	}
	return c.cur[len(c.cur) : len(c.cur)+est]
}

// commit adds the first n bytes of room, a record of nEvents events.
func (c *chunkWriter) commit(n int, nEvents uint64) {
	c.cur = c.cur[:len(c.cur)+n]
	c.count += nEvents
}

func (c *chunkWriter) patchHeader() {
	last := uint64(0)
	if c.events {
		last = c.count
	}
	binary.LittleEndian.PutUint64(c.cur[2:], c.first)
	binary.LittleEndian.PutUint64(c.cur[10:], last)
}

func (c *chunkWriter) nextChunk() error {
	c.patchHeader()
	for uint64(len(c.cur)) < c.size {
		c.cur = append(c.cur, otf2EndOfChunk)
	}
	var err error
	if c.flush != nil {
		err = c.flush(c.cur)
		c.cur = c.cur[:0]
	} else {
		c.done = append(c.done, c.cur...)
		c.cur = make([]byte, 0, 4096)
	}
	if c.events {
		c.first = c.count + 1
	}
	c.cur = appendChunkHeader(c.cur, chunkHeader{first: c.first})
	return err
}

// finish closes the last chunk and returns what was not flushed.
func (c *chunkWriter) finish() []byte {
	c.patchHeader()
	c.cur = append(c.cur, otf2EndOfFile, otf2EndOfBuffer)
	return append(c.done, c.cur...)
}
