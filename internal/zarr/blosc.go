package zarr

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"

	"github.com/pierrec/lz4/v4"
)

// Blosc's frame (version 1 of the format, which python-blosc and numcodecs
// write): a 16-byte header — format version, codec version, flags, type
// size, then little-endian int32s: uncompressed size, block size,
// compressed size — then, unless the whole buffer was stored as is, one
// int32 offset per block, and at each offset the block's streams: one per
// byte of the type ("split") or a single one, each an int32 size and that
// many bytes, stored as is when the size equals the stream's.
const (
	bloscHeader    = 16
	bloscShuffle   = 0x01 // byte shuffle
	bloscMemcpyed  = 0x02 // stored without compression, no block table
	bloscBitShuf   = 0x04 // bit shuffle: not supported
	bloscDontSplit = 0x10 // one stream per block
)

// Blosc's codec numbers (the flags' top three bits).
const (
	bloscLZ4  = 1
	bloscZlib = 3
	bloscZstd = 4
)

// unblosc decodes a Blosc frame of want bytes.
func (c *Codec) unblosc(data []byte, want int) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("corrupt blosc chunk: %s", fmt.Sprintf(format, args...))
	}
	if len(data) < bloscHeader {
		return bad("%d bytes, shorter than the %d-byte header", len(data), bloscHeader)
	}
	flags, typesize := data[2], int(data[3])
	nbytes := int(int32(binary.LittleEndian.Uint32(data[4:])))
	blocksize := int(int32(binary.LittleEndian.Uint32(data[8:])))
	cbytes := int(int32(binary.LittleEndian.Uint32(data[12:])))
	switch {
	case data[0] == 0 || data[0] > 2:
		return bad("format version %d: want 1 or 2", data[0])
	case nbytes != want:
		return bad("holds %d bytes, want %d", nbytes, want)
	case cbytes != len(data):
		return bad("header says %d compressed bytes, the chunk has %d", cbytes, len(data))
	case typesize < 1:
		return bad("type size %d: want at least 1", typesize)
	case flags&bloscBitShuf != 0:
		return nil, fmt.Errorf("blosc chunk with bit shuffle: not supported, want byte shuffle or none")
	}
	out := make([]byte, nbytes)
	if flags&bloscMemcpyed != 0 {
		if len(data) != bloscHeader+nbytes {
			return bad("stored chunk of %d bytes, want %d", len(data)-bloscHeader, nbytes)
		}
		copy(out, data[bloscHeader:])
		return out, nil
	}
	if nbytes == 0 {
		return out, nil
	}
	if blocksize < 1 {
		return bad("block size %d", blocksize)
	}
	codec := int(flags >> 5)
	nblocks := (nbytes + blocksize - 1) / blocksize
	if len(data) < bloscHeader+4*nblocks {
		return bad("%d blocks do not fit in %d bytes", nblocks, len(data))
	}
	tmp := make([]byte, blocksize)
	for b := range nblocks {
		bsize := min(blocksize, nbytes-b*blocksize)
		leftover := bsize < blocksize
		start := int(int32(binary.LittleEndian.Uint32(data[bloscHeader+4*b:])))
		if start < bloscHeader+4*nblocks || start > len(data) {
			return bad("block %d starts at %d, outside the chunk", b, start)
		}
		nsplits := 1
		if flags&bloscDontSplit == 0 && !leftover {
			nsplits = typesize
		}
		if bsize%nsplits != 0 {
			return bad("block %d of %d bytes does not split into %d streams", b, bsize, nsplits)
		}
		dst := out[b*blocksize : b*blocksize+bsize]
		if flags&bloscShuffle != 0 && typesize > 1 {
			dst = tmp[:bsize]
		}
		src := data[start:]
		neblock := bsize / nsplits
		for s := range nsplits {
			if len(src) < 4 {
				return bad("block %d stream %d: no size", b, s)
			}
			n := int(int32(binary.LittleEndian.Uint32(src)))
			src = src[4:]
			if n < 0 || n > len(src) {
				return bad("block %d stream %d: %d bytes, %d left", b, s, n, len(src))
			}
			part := dst[s*neblock : (s+1)*neblock]
			if n == neblock {
				copy(part, src[:n])
			} else if err := c.bloscStream(codec, src[:n], part); err != nil {
				return bad("block %d stream %d: %v", b, s, err)
			}
			src = src[n:]
		}
		if flags&bloscShuffle != 0 && typesize > 1 {
			unshuffle(typesize, dst, out[b*blocksize:b*blocksize+bsize])
		}
	}
	return out, nil
}

// bloscStream decompresses one stream of a block into exactly dst.
func (c *Codec) bloscStream(codec int, src, dst []byte) error {
	switch codec {
	case bloscLZ4:
		n, err := lz4.UncompressBlock(src, dst)
		if err != nil {
			return fmt.Errorf("lz4: %v", err)
		}
		if n != len(dst) {
			return fmt.Errorf("lz4 gave %d bytes, want %d", n, len(dst))
		}
		return nil
	case bloscZlib:
		r, err := zlib.NewReader(bytes.NewReader(src))
		if err != nil {
			return fmt.Errorf("zlib: %v", err)
		}
		got, err := readAllLimited(r, len(dst), "zlib")
		if err != nil {
			return err
		}
		if len(got) != len(dst) {
			return fmt.Errorf("zlib gave %d bytes, want %d", len(got), len(dst))
		}
		copy(dst, got)
		return nil
	case bloscZstd:
		got, err := c.unzstd(src, len(dst))
		if err != nil {
			return err
		}
		if len(got) != len(dst) {
			return fmt.Errorf("zstd gave %d bytes, want %d", len(got), len(dst))
		}
		copy(dst, got)
		return nil
	}
	return fmt.Errorf("codec %d: want lz4 (1), zlib (3) or zstd (4)", codec)
}

// unshuffle undoes Blosc's byte shuffle of one block: the shuffled block
// holds byte j of every element, then byte j+1 of every element; bytes past
// the last whole element are stored as they were.
func unshuffle(typesize int, src, dst []byte) {
	n := len(src) / typesize
	for j := range typesize {
		col := src[j*n : (j+1)*n]
		for i, v := range col {
			dst[i*typesize+j] = v
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}
