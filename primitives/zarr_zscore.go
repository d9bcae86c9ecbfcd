package primitives

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/zarr"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/runtime"
)

// ZScoreZarr normalises the columns of the Zarr array in directory in and
// writes the result to the Zarr array in directory out: ZScore along axis
// 0, (x - x.mean(0)) / x.std(0) with NumPy's std (ddof 0), without holding
// the array in memory. Each locality takes a contiguous run of the input's
// chunk rows (chunks along axis 0) and streams over them twice, a few
// chunk buffers per locality reused throughout: first reading each chunk
// for the columns' count, mean and sum of squared deviations (merged by
// Chan's formula in chunk order, then across localities in locality order
// after one AllGather, so every locality holds the same bits), then
// reading it again, normalising it and writing it as the output's chunk
// of the same index. So a 2 GiB input costs a few chunks of memory rather
// than two tiles of its size, whose fresh pages' faults dominate ZScore's
// time. Chunks are read through the page cache (never O_DIRECT, unlike
// ReadZarr), so the second pass finds them there when the input fits.
//
// The output has the input's shape and chunks; opts gives its compressor
// (opts.Chunks must be nil or the input's chunks, opts.Dtype "" or "<f8").
// Locality 0 writes its metadata after the first pass; out may be in
// itself (each chunk is read whole before it is written). A missing input chunk is the fill
// value; a constant column gives NaN, as ZScore. A bad input fails the
// future on every locality: the AllGather, reserved when called, carries
// the failure of the first pass, and a barrier, also reserved when called,
// that of the second and ends the write everywhere.
func ZScoreZarr(ctx context.Context, e *Env, in, out string, opts ZarrOptions) *runtime.Future[struct{}] {
	const op = "ZScoreZarr"
	stats, err := e.reserve(op)
	if err != nil {
		return runtime.MakeFailed[struct{}](err)
	}
	done, err := e.reserve(op)
	if err != nil {
		stats.Cancel(err)
		return runtime.MakeFailed[struct{}](err)
	}
	return runtime.SpawnNamed(ctx, e.rt, "primitives."+op, func(ctx context.Context) (_ struct{}, err error) {
		defer func() {
			if err != nil { // no effect on a collective already issued
				stats.Cancel(err)
				done.Cancel(err)
			}
		}()
		return struct{}{}, zscoreZarr(ctx, e, stats, done, in, out, opts)
	})
}

// zscoreStream is one locality's part of a ZScoreZarr: the input's and the
// output's metadata, its chunks and the buffers they pass through.
type zscoreStream struct {
	e        *Env
	in, out  string
	m, om    zarr.Meta
	jobs     [][]int // the chunks of this locality, grid indices
	inner    int     // elements of one chunk row (the chunk's extents past axis 0)
	rest     int     // elements of one array row
	codec    zarr.Codec
	bufs     chan []float64
	fail     func(format string, args ...any) error
	nativeLE bool
}

func zscoreZarr(ctx context.Context, e *Env, stats, done *runtime.Reservation, in, out string, opts ZarrOptions) error {
	const op = "ZScoreZarr"
	s := &zscoreStream{e: e, in: in, out: out, nativeLE: binary.NativeEndian.Uint16([]byte{1, 0}) == 1}
	s.fail = func(format string, args ...any) error {
		return e.errorf(op, "zarr %s to zarr %s: %s", in, out, fmt.Sprintf(format, args...))
	}
	raw, err := os.ReadFile(filepath.Join(in, ".zarray"))
	if err != nil {
		return s.fail("no array metadata: %v", err)
	}
	if s.m, err = zarr.ParseMeta(in, raw); err != nil {
		return e.wrap(op, err)
	}
	m := s.m
	if len(m.Shape) == 0 {
		return s.fail("a 0-d array: want at least one axis to normalise along")
	}
	if opts.Chunks != nil && !slices.Equal(opts.Chunks, m.Chunks) {
		return s.fail("chunks %v: want nil or the input's chunks %v", opts.Chunks, m.Chunks)
	}
	if opts.Dtype != "" && opts.Dtype != zarr.Float64 {
		return s.fail("dtype %q: want %q", opts.Dtype, zarr.Float64)
	}
	t, err := annotate.New(annotate.Row, m.Shape, 1)
	if err != nil {
		return s.fail("%v", err)
	}
	if s.om, err = zarrMeta(t, ZarrOptions{Chunks: m.Chunks, Compressor: opts.Compressor, Level: opts.Level}); err != nil {
		return s.fail("%v", err)
	}
	s.om.Separator = m.Separator
	s.inner = m.ChunkElems() / m.Chunks[0]
	s.rest = 1
	for _, n := range m.Shape[1:] {
		s.rest *= n
	}
	rows := m.Grid()[0]
	lo, hi := rows*e.Locality()/e.Size(), rows*(e.Locality()+1)/e.Size()
	if lo < hi {
		b := annotate.WholeBlock(m.Shape)
		b[0] = annotate.Span{Start: lo * m.Chunks[0], Stop: min(hi*m.Chunks[0], m.Shape[0])}
		chunksOf(m, b, func(idx []int) { s.jobs = append(s.jobs, idx) })
	}
	s.bufs = make(chan []float64, readers())

	// First pass: each chunk's count, mean and squared deviations per
	// element of a chunk row, merged in chunk order.
	parts := make([][]float64, len(s.jobs))
	err = e.parallel(len(s.jobs), func(i int) error {
		buf, err := s.read(s.jobs[i])
		if err != nil {
			return err
		}
		defer s.put(buf)
		parts[i] = chunkMoments(buf, s.validRows(s.jobs[i]), s.inner)
		return nil
	}, nil)
	if err != nil {
		return err
	}
	acc := make([]float64, 3*s.rest)
	for i, idx := range s.jobs {
		n := float64(s.validRows(idx))
		s.eachColumn(idx, func(c, g int) {
			varK{}.merge(acc[3*g:3*g+3], []float64{n, parts[i][2*c], parts[i][2*c+1]})
		})
	}
	all, err := stats.AllGather(ctx, acc).Get(ctx)
	if err != nil {
		return e.wrap(op, err)
	}
	if len(all) != len(acc)*e.Size() {
		return s.fail("gathered %d partial values, want %d", len(all), len(acc)*e.Size())
	}
	acc = all[:len(acc):len(acc)]
	for l := 1; l < e.Size(); l++ {
		o := all[l*len(acc) : (l+1)*len(acc)]
		for j := 0; j < len(acc); j += 3 {
			varK{}.merge(acc[j:j+3], o[j:j+3])
		}
	}
	// Every locality read the input's metadata before the AllGather, so
	// the output's may replace it (out the same directory as in).
	if err := os.MkdirAll(out, 0o755); err != nil {
		return s.fail("%v", err)
	}
	if e.Locality() == 0 {
		meta, err := s.om.Marshal()
		if err == nil {
			err = os.WriteFile(filepath.Join(out, ".zarray"), meta, 0o644)
		}
		if err != nil {
			return s.fail("%v", err)
		}
	}
	mean, std := make([]float64, s.rest), make([]float64, s.rest)
	for g := range mean {
		mean[g] = acc[3*g+1]
		std[g] = varK{std: true}.final(acc[3*g:3*g+3], 0)
	}

	// Second pass: read each chunk again, normalise it and write it.
	err = e.parallel(len(s.jobs), func(i int) error {
		idx := s.jobs[i]
		buf, err := s.read(idx)
		if err != nil {
			return err
		}
		defer s.put(buf)
		cm, cs := make([]float64, s.inner), make([]float64, s.inner)
		inside := make([]bool, s.inner)
		s.eachColumn(idx, func(c, g int) { cm[c], cs[c], inside[c] = mean[g], std[g], true })
		valid := s.validRows(idx)
		for r := range valid {
			row := buf[r*s.inner : (r+1)*s.inner]
			for c := range row {
				row[c] = (row[c] - cm[c]) / cs[c]
			}
		}
		// Outside the array: the output's fill value.
		for c, in := range inside {
			if !in {
				for r := range valid {
					buf[r*s.inner+c] = s.om.Fill
				}
			}
		}
		for k := valid * s.inner; k < len(buf); k++ {
			buf[k] = s.om.Fill
		}
		return s.write(idx, buf)
	}, nil)
	if err != nil {
		return err
	}
	if _, err := done.Barrier(ctx).Get(ctx); err != nil {
		return e.wrap(op, err)
	}
	return nil
}

// validRows is how many of chunk idx's rows lie inside the array.
func (s *zscoreStream) validRows(idx []int) int {
	start := idx[0] * s.m.Chunks[0]
	return min(s.m.Chunks[0], s.m.Shape[0]-start)
}

// eachColumn calls fn with the offset c in a chunk row of chunk idx and
// the offset g in an array row of every element of the chunk row inside
// the array.
func (s *zscoreStream) eachColumn(idx []int, fn func(c, g int)) {
	m := s.m
	nd := len(m.Shape)
	if nd == 1 {
		fn(0, 0)
		return
	}
	pos := make([]int, nd) // pos[d], d >= 1: the position inside the chunk
	for {
		inside := true
		c, g := 0, 0
		for d := 1; d < nd; d++ {
			at := idx[d]*m.Chunks[d] + pos[d]
			if at >= m.Shape[d] {
				inside = false
			}
			c = c*m.Chunks[d] + pos[d]
			g = g*m.Shape[d] + at
		}
		if inside {
			fn(c, g)
		}
		d := nd - 1
		for ; d >= 1; d-- {
			if pos[d]++; pos[d] < m.Chunks[d] {
				break
			}
			pos[d] = 0
		}
		if d < 1 {
			return
		}
	}
}

// chunkMoments returns, for each of the inner elements of a row, the mean
// and the sum of squared deviations from it over the first rows rows of
// chunk (row-major, inner elements a row), interleaved.
func chunkMoments(chunk []float64, rows, inner int) []float64 {
	sum := make([]float64, inner)
	for r := range rows {
		row := chunk[r*inner : (r+1)*inner]
		for c, v := range row {
			sum[c] += v
		}
	}
	out := make([]float64, 2*inner)
	for c := range sum {
		out[2*c] = sum[c] / float64(rows)
		sum[c] = 0
	}
	for r := range rows {
		row := chunk[r*inner : (r+1)*inner]
		for c, v := range row {
			d := v - out[2*c]
			sum[c] += d * d
		}
	}
	for c := range sum {
		out[2*c+1] = sum[c]
	}
	return out
}

// get takes a chunk buffer, put gives it back.
func (s *zscoreStream) get() []float64 {
	select {
	case b := <-s.bufs:
		return b
	default:
		return make([]float64, s.m.ChunkElems())
	}
}

func (s *zscoreStream) put(b []float64) {
	select {
	case s.bufs <- b:
	default:
	}
}

// read returns input chunk idx, whole, in a buffer of s: the fill value
// when the chunk is missing.
func (s *zscoreStream) read(idx []int) ([]float64, error) {
	key := s.m.Key(idx)
	name := filepath.Join(s.in, key)
	buf := s.get()
	if s.m.Compressor == nil && s.m.Dtype == zarr.Float64 && s.nativeLE {
		err := readRaw(name, parcel.Float64Bytes(buf), false) // cached for the second pass
		if errors.Is(err, fs.ErrNotExist) {
			for k := range buf {
				buf[k] = s.m.Fill
			}
			return buf, nil
		}
		if err != nil {
			s.put(buf)
			return nil, s.fail("chunk %s: %v", key, err)
		}
		return buf, nil
	}
	stored, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		for k := range buf {
			buf[k] = s.m.Fill
		}
		return buf, nil
	}
	if err == nil {
		var vals []float64
		if vals, err = s.codec.Decode(s.m, stored); err == nil {
			copy(buf, vals)
			return buf, nil
		}
	}
	s.put(buf)
	return nil, s.fail("chunk %s: %v", key, err)
}

// write stores buf as output chunk idx.
func (s *zscoreStream) write(idx []int, buf []float64) error {
	key := s.om.Key(idx)
	data := parcel.Float64Bytes(buf)
	if s.om.Compressor != nil || !s.nativeLE {
		var err error
		if data, err = s.codec.Encode(s.om, buf); err != nil {
			return s.fail("chunk %s: %v", key, err)
		}
	}
	if err := writeChunk(filepath.Join(s.out, key), data); err != nil {
		return s.fail("chunk %s: %v", key, err)
	}
	return nil
}
