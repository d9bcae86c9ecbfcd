package zarr

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Codec encodes and decodes the chunks of arrays. It keeps a zstd encoder
// and decoder once one is needed; its methods may run concurrently.
type Codec struct {
	once sync.Once
	enc  map[int]*zstd.Encoder
	dec  *zstd.Decoder
	mu   sync.Mutex
	err  error
}

// zstdDecoder returns the codec's decoder.
func (c *Codec) zstdDecoder() (*zstd.Decoder, error) {
	c.once.Do(func() {
		c.dec, c.err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(8*maxChunkElems))
	})
	return c.dec, c.err
}

// zstdEncoder returns the codec's encoder of a level (zstd's numbering).
func (c *Codec) zstdEncoder(level int) (*zstd.Encoder, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.enc[level]; ok {
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1),
		zstd.WithSingleSegment(true)) // the frame states its size, which numcodecs needs
	if err != nil {
		return nil, err
	}
	if c.enc == nil {
		c.enc = make(map[int]*zstd.Encoder)
	}
	c.enc[level] = e
	return e, nil
}

// Encode returns the stored bytes of one chunk of m: vals, ChunkElems
// elements in row-major order, in m's dtype, compressed. An <i8 value that
// is not an integer, or out of int64's range, is an error.
func (c *Codec) Encode(m Meta, vals []float64) ([]byte, error) {
	if len(vals) != m.ChunkElems() {
		return nil, fmt.Errorf("zarr: chunk of %d elements, want %d (chunks %v)", len(vals), m.ChunkElems(), m.Chunks)
	}
	raw := make([]byte, 8*len(vals))
	switch m.Dtype {
	case Float64:
		for i, v := range vals {
			binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
		}
	case Int64:
		for i, v := range vals {
			if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 {
				return nil, fmt.Errorf("zarr: element %d of the chunk is %g: want an integer for dtype %s", i, v, Int64)
			}
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(int64(v)))
		}
	default:
		return nil, fmt.Errorf("zarr: dtype %q: want %q or %q", m.Dtype, Float64, Int64)
	}
	comp := m.Compressor
	if comp == nil {
		return raw, nil
	}
	var buf bytes.Buffer
	switch comp.ID {
	case "zlib":
		w, err := zlib.NewWriterLevel(&buf, comp.Level)
		if err != nil {
			return nil, fmt.Errorf("zarr: zlib level %d: %v", comp.Level, err)
		}
		w.Write(raw)
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case "gzip":
		w, err := gzip.NewWriterLevel(&buf, comp.Level)
		if err != nil {
			return nil, fmt.Errorf("zarr: gzip level %d: %v", comp.Level, err)
		}
		w.Write(raw)
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case "zstd":
		e, err := c.zstdEncoder(comp.Level)
		if err != nil {
			return nil, fmt.Errorf("zarr: zstd level %d: %v", comp.Level, err)
		}
		return e.EncodeAll(raw, nil), nil
	}
	return nil, fmt.Errorf("zarr: writing with compressor %q is not supported: want none, zlib, gzip or zstd", comp.ID)
}

// Decode returns the elements of one stored chunk of m (ChunkElems of them,
// row-major) as float64. Corrupt or short data is an error saying what was
// expected.
func (c *Codec) Decode(m Meta, data []byte) ([]float64, error) {
	want := 8 * m.ChunkElems()
	raw, err := c.decompress(m.Compressor, data, want)
	if err != nil {
		return nil, err
	}
	if len(raw) != want {
		return nil, fmt.Errorf("chunk decodes to %d bytes, want %d (%d elements of %s)", len(raw), want, m.ChunkElems(), m.Dtype)
	}
	vals := make([]float64, m.ChunkElems())
	switch m.Dtype {
	case Float64:
		for i := range vals {
			vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	case Int64:
		for i := range vals {
			vals[i] = float64(int64(binary.LittleEndian.Uint64(raw[8*i:])))
		}
	default:
		return nil, fmt.Errorf("dtype %q: want %q or %q", m.Dtype, Float64, Int64)
	}
	return vals, nil
}

// decompress undoes the compressor; want is the size of the raw chunk.
func (c *Codec) decompress(comp *Compressor, data []byte, want int) ([]byte, error) {
	if comp == nil {
		return data, nil
	}
	switch comp.ID {
	case "zlib":
		r, err := zlib.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("corrupt zlib chunk: %v", err)
		}
		return readAllLimited(r, want, "zlib")
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("corrupt gzip chunk: %v", err)
		}
		return readAllLimited(r, want, "gzip")
	case "zstd":
		return c.unzstd(data, want)
	case "blosc":
		return c.unblosc(data, want)
	}
	return nil, fmt.Errorf("compressor %q: want none, zlib, gzip, zstd or blosc", comp.ID)
}

// readAllLimited reads a decompressing reader to its end, failing past want
// bytes (a chunk that would not fit) or on corrupt data.
func readAllLimited(r io.Reader, want int, what string) ([]byte, error) {
	out := make([]byte, want+1)
	n, err := io.ReadFull(r, out)
	switch {
	case err == nil:
		return nil, fmt.Errorf("corrupt %s chunk: more than the %d bytes of a chunk", what, want)
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		// n bytes, the end of the stream checked below
	default:
		return nil, fmt.Errorf("corrupt %s chunk: %v", what, err)
	}
	if cl, ok := r.(io.Closer); ok {
		if err := cl.Close(); err != nil {
			return nil, fmt.Errorf("corrupt %s chunk: %v", what, err)
		}
	}
	return out[:n], nil
}

// unzstd decodes a zstd frame of at most want bytes.
func (c *Codec) unzstd(data []byte, want int) ([]byte, error) {
	d, err := c.zstdDecoder()
	if err != nil {
		return nil, err
	}
	out, err := d.DecodeAll(data, make([]byte, 0, want))
	if err != nil {
		return nil, fmt.Errorf("corrupt zstd chunk: %v", err)
	}
	return out, nil
}
