package parcel

import "unsafe"

// Parcel is one active message: a header and the raw chunks that follow it.
// The chunk lengths in Header.Chunks are filled in by the parcelport when it
// writes the parcel; a received parcel has them set.
type Parcel struct {
	Header Header
	Chunks [][]byte
}

// Size is the number of payload bytes the parcel carries: its arguments and
// chunks, not the header's fixed fields.
func (p *Parcel) Size() int {
	n := len(p.Header.Args)
	for _, c := range p.Chunks {
		n += len(c)
	}
	return n
}

// Float64Bytes returns the memory of s as bytes, without copying. Parcels
// carry []float64 payloads this way; the handshake makes sure both ends are
// little endian, so the bytes mean the same on both sides.
func Float64Bytes(s []float64) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*8)
}

// BytesFloat64 returns the memory of b as float64s, without copying. len(b)
// must be a multiple of 8 and b must be 8-byte aligned (memory from
// Float64Bytes or from make([]float64) is); otherwise it returns nil.
func BytesFloat64(b []byte) []float64 {
	if len(b) == 0 || len(b)%8 != 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
