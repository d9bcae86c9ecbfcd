package parcel

import "github.com/tinylib/msgp/msgp"

// Bytes is a byte field of the Header, at most MaxArgs long. Its decoding
// is written by hand:
// the generated code takes memory for the length a field claims (up to its
// limit) before it looks whether the bytes are there; this checks first,
// so that a header costs no more memory than it is long, and it reuses the
// capacity the field has. A []byte converts to and from it freely.
type Bytes []byte

// MarshalMsg appends z as a msgpack bin.
func (z Bytes) MarshalMsg(b []byte) ([]byte, error) { return msgp.AppendBytes(b, z), nil }

// UnmarshalMsg reads a msgpack bin into z.
func (z *Bytes) UnmarshalMsg(b []byte) ([]byte, error) {
	v, rest, err := msgp.ReadBytesZC(b) // checks the length against b
	switch {
	case err != nil:
		return b, err
	case len(v) > MaxArgs:
		return b, msgp.ErrLimitExceeded
	}
	*z = append((*z)[:0], v...)
	return rest, nil
}

// Msgsize bounds the encoded size of z.
func (z Bytes) Msgsize() int { return msgp.BytesPrefixSize + len(z) }

// Lengths is the Header's list of chunk lengths, decoded by hand for the
// same reason as Bytes: a list longer than MaxChunks, or longer than the
// bytes left (each length takes one at least), is refused before memory
// is taken for it. A []uint64 converts to and from it freely.
type Lengths []uint64

// MarshalMsg appends z as a msgpack array of unsigned integers.
func (z Lengths) MarshalMsg(b []byte) ([]byte, error) {
	b = msgp.AppendArrayHeader(b, uint32(len(z)))
	for _, n := range z {
		b = msgp.AppendUint64(b, n)
	}
	return b, nil
}

// UnmarshalMsg reads a msgpack array of unsigned integers into z.
func (z *Lengths) UnmarshalMsg(b []byte) ([]byte, error) {
	n, rest, err := msgp.ReadArrayHeaderBytes(b)
	switch {
	case err != nil:
		return b, err
	case n > MaxChunks:
		return b, msgp.ErrLimitExceeded
	case int(n) > len(rest):
		return b, msgp.ErrShortBytes
	}
	s := (*z)[:0]
	if cap(s) < int(n) {
		s = make(Lengths, 0, n)
	}
	for range n {
		var v uint64
		if v, rest, err = msgp.ReadUint64Bytes(rest); err != nil {
			return b, err
		}
		s = append(s, v)
	}
	*z = s
	return rest, nil
}

// Msgsize bounds the encoded size of z.
func (z Lengths) Msgsize() int { return msgp.ArrayHeaderSize + len(z)*msgp.Uint64Size }
