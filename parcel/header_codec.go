package parcel

import (
	"encoding/binary"
	"math"
	"slices"
)

// The header's encoding is the one its msgp code defines (header_gen.go,
// with the field codecs of header_fields.go). Every frame's header is
// written by appendHeader and read by readHeader, which do the same as
// that code for the forms msgp writes — each value in its smallest
// encoding — in one pass over the bytes, without a call and an error path
// per field; they are on the path of every parcel. A header in any other
// form (an integer in a wider encoding than it needs, which msgp also
// reads) and every malformed one goes to the msgp code, which decodes it
// or says what is wrong. TestAppendHeaderMatchesMsgp and FuzzReadHeader
// hold the two to the same bytes and the same headers.

// The msgpack type bytes the header uses.
const (
	mpFixArray = 0x90 // | length, up to 15
	mpFixStr   = 0xa0 // | length, up to 31
	mpBin8     = 0xc4
	mpBin16    = 0xc5
	mpBin32    = 0xc6
	mpUint8    = 0xcc
	mpUint16   = 0xcd
	mpUint32   = 0xce
	mpUint64   = 0xcf
	mpStr8     = 0xd9
	mpStr16    = 0xda
	mpStr32    = 0xdb
	mpArray16  = 0xdc
	mpArray32  = 0xdd
)

// headerFields is the number of elements of the Header tuple.
const headerFields = 12

// headerFixedMax bounds the bytes of an encoded header besides its
// strings, byte fields and chunk lengths: the tuple's and the version's
// bytes, kind and code (2 each at most), source and dest (5), request and
// parent (9), the prefixes of two strs, two bins and the chunk list (5).
const headerFixedMax = 2 + 2*2 + 2*5 + 2*9 + 5*5

// headerMax bounds the bytes of h encoded with nchunks chunk lengths:
// what appendHeader takes room for, and the cheap bound the shm port's
// in-place writes go by.
func headerMax(h *Header, nchunks int) int {
	return headerFixedMax + len(h.Action) + len(h.Error) + len(h.Args) + len(h.Trace) + 9*nchunks
}

// appendHeader appends h, with this build's HeaderVersion and the lengths
// of chunks as its chunk list, as Header.MarshalMsg would encode it. It
// takes the room once and writes each field in place: it is on the path
// of every parcel.
func appendHeader(b []byte, h *Header, chunks [][]byte) []byte {
	need := headerMax(h, len(chunks))
	start := len(b)
	b = slices.Grow(b, need)
	w := b[start : start+need]
	w[0], w[1] = mpFixArray|headerFields, HeaderVersion
	i := putUint(w, 2, uint64(h.Kind))
	i = putUint(w, i, uint64(h.Source))
	i = putUint(w, i, uint64(h.Dest))
	i = putStr(w, i, h.Action)
	i = putUint(w, i, h.Request)
	i = putUint(w, i, h.Parent)
	i = putUint(w, i, uint64(h.Code))
	// Most parcels carry no error text, no trace and no arguments in the
	// header (a []byte or []float64 travels as a chunk): written here,
	// without a call each.
	if len(h.Error) == 0 {
		w[i] = mpFixStr
		i++
	} else {
		i = putStr(w, i, h.Error)
	}
	if len(h.Args) == 0 {
		w[i], w[i+1] = mpBin8, 0
		i += 2
	} else {
		i = putBin(w, i, h.Args)
	}
	if len(h.Trace) == 0 {
		w[i], w[i+1] = mpBin8, 0
		i += 2
	} else {
		i = putBin(w, i, h.Trace)
	}
	switch n := len(chunks); {
	case n <= 15:
		w[i] = mpFixArray | byte(n)
		i++
	case n <= math.MaxUint16:
		w[i], w[i+1], w[i+2] = mpArray16, byte(n>>8), byte(n)
		i += 3
	default:
		w[i] = mpArray32
		binary.BigEndian.PutUint32(w[i+1:], uint32(n))
		i += 5
	}
	for _, c := range chunks {
		i = putUint(w, i, uint64(len(c)))
	}
	return b[:start+i]
}

// putUint writes v at w[i:] in its smallest msgpack encoding and returns
// the index past it.
func putUint(w []byte, i int, v uint64) int {
	if v < 0x80 {
		w[i] = byte(v)
		return i + 1
	}
	return putUintWide(w, i, v)
}

func putUintWide(w []byte, i int, v uint64) int {
	switch {
	case v <= math.MaxUint8:
		w[i], w[i+1] = mpUint8, byte(v)
		return i + 2
	case v <= math.MaxUint16:
		w[i] = mpUint16
		binary.BigEndian.PutUint16(w[i+1:], uint16(v))
		return i + 3
	case v <= math.MaxUint32:
		w[i] = mpUint32
		binary.BigEndian.PutUint32(w[i+1:], uint32(v))
		return i + 5
	}
	w[i] = mpUint64
	binary.BigEndian.PutUint64(w[i+1:], v)
	return i + 9
}

// putStr writes s at w[i:] as a msgpack str.
func putStr(w []byte, i int, s string) int {
	if len(s) <= 31 {
		w[i] = mpFixStr | byte(len(s))
		i++
	} else {
		i = putLen(w, i, len(s), mpStr8, mpStr16, mpStr32)
	}
	if len(s) == 0 {
		return i
	}
	return i + copy(w[i:], s)
}

// putBin writes v at w[i:] as a msgpack bin.
func putBin(w []byte, i int, v []byte) int {
	i = putLen(w, i, len(v), mpBin8, mpBin16, mpBin32)
	return i + copy(w[i:], v)
}

// putLen writes the type byte and length of a str or bin of n bytes: t8,
// t16 or t32, the smallest that holds n.
func putLen(w []byte, i, n int, t8, t16, t32 byte) int {
	switch {
	case n <= math.MaxUint8:
		w[i], w[i+1] = t8, byte(n)
		return i + 2
	case n <= math.MaxUint16:
		w[i] = t16
		binary.BigEndian.PutUint16(w[i+1:], uint16(n))
		return i + 3
	}
	w[i] = t32
	binary.BigEndian.PutUint32(w[i+1:], uint32(n))
	return i + 5
}

// readHeader decodes b into h as DecodeHeader does, reusing the room h's
// Args, Trace and Chunks have, and taking the action name from names when
// it holds it (nil: a new string).
func readHeader(b []byte, h *Header, names *nameCache) error {
	if readHeaderFast(b, h, names) {
		return nil
	}
	return DecodeHeader(b, h)
}

// readHeaderFast decodes b into h if it is a well-formed header in the
// forms appendHeader writes, and reports whether it was; if not, h is left
// partly written, for DecodeHeader to write over. Each getter returns the
// index past what it read, or -1, which makes the getters after it fail
// too.
func readHeaderFast(b []byte, h *Header, names *nameCache) bool {
	// The shortest header: 2 bytes of tuple and version, 7 integers, 2
	// empty strs, 2 empty bins and an empty chunk list. The kind, 1 to 4,
	// is a fixint in its smallest encoding.
	if len(b) < 15 || b[0] != mpFixArray|headerFields || b[1] != HeaderVersion {
		return false
	}
	kind := uint64(b[2])
	source, i := getUint(b, 3)
	dest, i := getUint(b, i)
	action, i := getStr(b, i)
	request, i := getUint(b, i)
	parent, i := getUint(b, i)
	code, i := getUint(b, i)
	errText, i := getStr(b, i)
	args, i := getBin(b, i)
	trace, i := getBin(b, i)
	if i < 0 || i >= len(b) || kind < uint64(KindCall) || kind > uint64(KindHeartbeat) ||
		source > math.MaxUint32 || dest > math.MaxUint32 || code > math.MaxUint8 {
		return false
	}
	var n int
	switch c := b[i]; {
	case c&0xf0 == mpFixArray:
		n, i = int(c&0x0f), i+1
	case c == mpArray16 && i+3 <= len(b):
		n, i = int(binary.BigEndian.Uint16(b[i+1:])), i+3
	default:
		return false // an array32 holds more than MaxChunks
	}
	// Each length takes a byte at least, and the list must end the header.
	if n > MaxChunks || n > len(b)-i {
		return false
	}
	lens := h.Chunks[:0]
	for range n {
		var v uint64
		v, i = getUint(b, i)
		lens = append(lens, v)
	}
	if i != len(b) {
		return false
	}
	h.Version, h.Kind, h.Code = HeaderVersion, Kind(kind), Code(code)
	h.Source, h.Dest = uint32(source), uint32(dest)
	h.Request, h.Parent = request, parent
	h.Action = names.name(action)
	h.Error = ""
	if len(errText) > 0 {
		h.Error = string(errText)
	}
	h.Args, h.Trace = h.Args[:0], h.Trace[:0]
	if len(args) > 0 {
		h.Args = append(h.Args, args...)
	}
	if len(trace) > 0 {
		h.Trace = append(h.Trace, trace...)
	}
	h.Chunks = lens
	return true
}

// getUint reads an unsigned integer at b[i:] in its smallest encoding.
func getUint(b []byte, i int) (uint64, int) {
	if uint(i) < uint(len(b)) && b[i] < 0x80 {
		return uint64(b[i]), i + 1
	}
	return getUintWide(b, i)
}

func getUintWide(b []byte, i int) (uint64, int) {
	if uint(i) >= uint(len(b)) {
		return 0, -1
	}
	switch rest := b[i+1:]; b[i] {
	case mpUint8:
		if len(rest) >= 1 {
			return uint64(rest[0]), i + 2
		}
	case mpUint16:
		if len(rest) >= 2 {
			return uint64(binary.BigEndian.Uint16(rest)), i + 3
		}
	case mpUint32:
		if len(rest) >= 4 {
			return uint64(binary.BigEndian.Uint32(rest)), i + 5
		}
	case mpUint64:
		if len(rest) >= 8 {
			return binary.BigEndian.Uint64(rest), i + 9
		}
	}
	return 0, -1
}

// getStr reads a msgpack str at b[i:], returning a view of its bytes.
func getStr(b []byte, i int) ([]byte, int) {
	if uint(i) >= uint(len(b)) {
		return nil, -1
	}
	if c := b[i]; c&0xe0 == mpFixStr {
		return take(b, i+1, int(c&0x1f))
	}
	return getLong(b, i, mpStr8, mpStr16, mpStr32, math.MaxUint32)
}

// getBin reads a msgpack bin of at most MaxArgs bytes at b[i:], returning
// a view of its bytes.
func getBin(b []byte, i int) ([]byte, int) {
	if uint(i) < uint(len(b)) && b[i] == mpBin8 && i+1 < len(b) {
		return take(b, i+2, int(b[i+1]))
	}
	return getLong(b, i, mpBin8, mpBin16, mpBin32, MaxArgs)
}

// getLong reads a str or bin at b[i:] whose type byte is t8, t16 or t32
// and that is at most limit bytes long.
func getLong(b []byte, i int, t8, t16, t32 byte, limit int) ([]byte, int) {
	if uint(i) >= uint(len(b)) {
		return nil, -1
	}
	var n, at int
	switch rest := b[i+1:]; {
	case b[i] == t8 && len(rest) >= 1:
		n, at = int(rest[0]), 2
	case b[i] == t16 && len(rest) >= 2:
		n, at = int(binary.BigEndian.Uint16(rest)), 3
	case b[i] == t32 && len(rest) >= 4:
		n, at = int(binary.BigEndian.Uint32(rest)), 5
	default:
		return nil, -1
	}
	if n > limit {
		return nil, -1
	}
	return take(b, i+at, n)
}

// take returns the n bytes at b[i:] and the index past them.
func take(b []byte, i, n int) ([]byte, int) {
	if n > len(b)-i {
		return nil, -1
	}
	return b[i : i+n], i + n
}

// nameCache keeps the action names and control verbs a connection's
// parcels carried, so that a parcel naming one again costs no string. It
// is one reader's: not safe for concurrent use. A nil cache keeps none.
type nameCache struct {
	recent [8]string // by nameSlot: a look without hashing
	names  map[string]string
}

// The bounds of a name cache: a peer that sends ever new names fills it
// and then pays a string per name, as without the cache.
const (
	maxCachedNames   = 1024
	maxCachedNameLen = 128
)

// nameSlot is where in recent the name b would be.
func nameSlot(b []byte) int { return (len(b) + int(b[0]) + int(b[len(b)-1])) & 7 }

// name returns b as a string: the cached one if b is cached.
func (c *nameCache) name(b []byte) string {
	if c == nil || len(b) == 0 || len(b) > maxCachedNameLen {
		return string(b)
	}
	slot := &c.recent[nameSlot(b)]
	if *slot == string(b) {
		return *slot
	}
	s, ok := c.names[string(b)]
	if !ok {
		s = string(b)
		if len(c.names) >= maxCachedNames {
			return s
		}
		if c.names == nil {
			c.names = make(map[string]string)
		}
		c.names[s] = s
	}
	*slot = s
	return s
}
