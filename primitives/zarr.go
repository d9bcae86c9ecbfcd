package primitives

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/zarr"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/runtime"
)

// ZarrOptions says how WriteZarr stores an array.
type ZarrOptions struct {
	// Chunks is the chunk shape, one extent per dimension; nil gives the
	// extents of the largest tile, halved along the outermost dimension
	// that allows it until a chunk holds at most 8 MiB.
	Chunks []int
	// Dtype is "<f8" (the default) or "<i8" (every element must then be an
	// integer: argmin indices, labels).
	Dtype string
	// Compressor is "" or "none", "zlib", "gzip" or "zstd"; Level its
	// level (0: 1 for zlib and gzip, 3 for zstd).
	Compressor string
	Level      int
}

// zarrChunkBytes bounds the default chunk.
const zarrChunkBytes = 8 << 20

// WriteZarr stores a as a Zarr version 2 array in the directory path (a
// directory store every locality can reach, created if missing; an
// existing .zarray and chunks of the same names are replaced). Each chunk
// is written by the locality owning its first element, in parallel over
// the locality's cores: from its own tile, or with the chunk's block
// fetched when the chunk reaches into other tiles. Locality 0 writes the
// metadata. One barrier, reserved when called, ends the write on every
// locality, so the future fails everywhere when one locality fails.
func WriteZarr(ctx context.Context, e *Env, a *runtime.Future[*Array], path string, opts ZarrOptions) *runtime.Future[struct{}] {
	const op = "WriteZarr"
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (struct{}, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if err := x.pin(e, op); err != nil {
			return struct{}{}, err
		}
		defer x.unpin()
		if err := writeZarr(ctx, e, x, path, opts); err != nil {
			return struct{}{}, err
		}
		if _, err := r.Barrier(ctx).Get(ctx); err != nil {
			return struct{}{}, e.wrap(op, err)
		}
		return struct{}{}, nil
	})
}

// zarrMeta returns the metadata WriteZarr gives an array tiled by t.
func zarrMeta(t annotate.Tiling, opts ZarrOptions) (zarr.Meta, error) {
	shape := t.Shape
	m := zarr.Meta{Shape: slices.Clone(shape), Dtype: opts.Dtype, Chunks: slices.Clone(opts.Chunks)}
	if m.Dtype == "" {
		m.Dtype = zarr.Float64
	}
	switch opts.Compressor {
	case "", "none":
	case "zlib", "gzip", "zstd":
		level := opts.Level
		if level == 0 {
			level = 1
			if opts.Compressor == "zstd" {
				level = 3
			}
		}
		m.Compressor = &zarr.Compressor{ID: opts.Compressor, Level: level}
	default:
		return m, fmt.Errorf("compressor %q: want none, zlib, gzip or zstd", opts.Compressor)
	}
	if m.Chunks == nil {
		m.Chunks = defaultChunks(t)
	}
	if len(m.Chunks) != len(shape) {
		return m, fmt.Errorf("chunks %v for shape %v: want one extent per dimension", m.Chunks, shape)
	}
	for _, c := range m.Chunks {
		if c < 1 {
			return m, fmt.Errorf("chunks %v: want extents >= 1", m.Chunks)
		}
	}
	return m, nil
}

// defaultChunks is the largest tile's extents, halved along the outermost
// dimension that allows it until a chunk holds at most zarrChunkBytes.
func defaultChunks(t annotate.Tiling) []int {
	c := make([]int, len(t.Shape))
	for _, tile := range t.Tiles {
		for d, s := range tile.Owned {
			c[d] = max(c[d], s.Len(), 1)
		}
	}
	for {
		n := 8
		for _, v := range c {
			n *= v
		}
		if n <= zarrChunkBytes {
			return c
		}
		d := 0
		for d < len(c)-1 && c[d] == 1 {
			d++
		}
		if c[d] == 1 {
			return c
		}
		c[d] = (c[d] + 1) / 2
	}
}

// chunkBlock is the part of the array chunk idx covers (clipped to the
// shape) and the chunk's whole block (not clipped).
func chunkBlock(m zarr.Meta, idx []int) (clipped, whole annotate.Block) {
	clipped, whole = make(annotate.Block, len(idx)), make(annotate.Block, len(idx))
	for d, i := range idx {
		start := i * m.Chunks[d]
		whole[d] = annotate.Span{Start: start, Stop: start + m.Chunks[d]}
		clipped[d] = annotate.Span{Start: start, Stop: min(start+m.Chunks[d], m.Shape[d])}
	}
	return clipped, whole
}

// chunksOf calls fn with the index of every chunk meeting block b.
func chunksOf(m zarr.Meta, b annotate.Block, fn func(idx []int)) {
	if b.Empty() {
		return
	}
	lo, hi := make([]int, len(b)), make([]int, len(b))
	for d, s := range b {
		lo[d], hi[d] = s.Start/m.Chunks[d], (s.Stop-1)/m.Chunks[d]
	}
	idx := slices.Clone(lo)
	for {
		fn(slices.Clone(idx))
		d := len(idx) - 1
		for ; d >= 0; d-- {
			if idx[d]++; idx[d] <= hi[d] {
				break
			}
			idx[d] = lo[d]
		}
		if d < 0 {
			return
		}
	}
}

// zarrJob is one chunk to encode and write, or to read and decode.
type zarrJob struct {
	idx   []int
	block annotate.Block // the chunk's part of the array
	data  []float64      // WriteZarr: the block's elements, row-major
	raw   []byte         // WriteZarr: the chunk as stored, the tile's memory
	local bool           // WriteZarr: the block is in this locality's tile
}

// rawChunk says whether chunk idx is stored as a contiguous part of a tile
// over block held, and at which element offset of the tile: an
// uncompressed, little-endian <f8 chunk, not at the array's edge, inside
// held, whose chunks and held block span every dimension but the first.
func rawChunk(m zarr.Meta, held annotate.Block, idx []int) (int, bool) {
	if m.Compressor != nil || m.Dtype != zarr.Float64 || binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return 0, false
	}
	clipped, whole := chunkBlock(m, idx)
	if !clipped.Equal(whole) || !held.Contains(clipped) {
		return 0, false
	}
	inner := 1
	for d := 1; d < len(m.Shape); d++ {
		if m.Chunks[d] != m.Shape[d] || held[d].Len() != m.Shape[d] {
			return 0, false
		}
		inner *= m.Shape[d]
	}
	return (clipped[0].Start - held[0].Start) * inner, true
}

// writeZarr writes this locality's chunks.
func writeZarr(ctx context.Context, e *Env, x *Array, path string, opts ZarrOptions) error {
	const op = "WriteZarr"
	fail := func(format string, args ...any) error {
		return e.errorf(op, "array %s to zarr %s: %s", x.ann.FullName(), path, fmt.Sprintf(format, args...))
	}
	m, err := zarrMeta(x.ann.Tiling, opts)
	if err != nil {
		return fail("%v", err)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fail("%v", err)
	}
	if e.Locality() == 0 {
		meta, err := m.Marshal()
		if err != nil {
			return fail("%v", err)
		}
		if err := os.WriteFile(filepath.Join(path, ".zarray"), meta, 0o644); err != nil {
			return fail("%v", err)
		}
	}
	owned, held := x.ann.Local().Owned, x.ann.Local().Halo
	var jobs []zarrJob
	var fetches []*runtime.Future[[]float64]
	chunksOf(m, owned, func(idx []int) {
		b, _ := chunkBlock(m, idx)
		first := make(annotate.Block, len(b))
		for d, s := range b {
			first[d] = annotate.Span{Start: s.Start, Stop: s.Start + 1}
		}
		if !owned.Contains(first) {
			return // another locality writes it
		}
		j := zarrJob{idx: idx, block: b}
		if off, ok := rawChunk(m, held, idx); ok {
			j.raw = parcel.Float64Bytes(x.data[off : off+b.Size()])
			fetches = append(fetches, nil)
		} else if held.Contains(b) {
			j.local = true // copied out of the tile when encoded
			fetches = append(fetches, nil)
		} else {
			fetches = append(fetches, x.Fetch(ctx, b))
		}
		jobs = append(jobs, j)
	})
	var codec zarr.Codec
	return e.parallel(len(jobs), func(i int) error {
		j := &jobs[i]
		if f := fetches[i]; f != nil {
			d, err := f.Get(ctx)
			if err != nil {
				return e.wrap(op, err)
			}
			j.data = d
		}
		if j.local {
			j.data = make([]float64, j.block.Size())
			copyBlock(j.data, j.block, x.data, held, j.block)
		}
		if j.raw != nil { // the tile's own bytes are the chunk
			if err := writeChunk(filepath.Join(path, m.Key(j.idx)), j.raw); err != nil {
				return fail("%v", err)
			}
			return nil
		}
		clipped, whole := chunkBlock(m, j.idx)
		vals := j.data
		if !clipped.Equal(whole) { // an edge chunk, stored whole
			vals = make([]float64, whole.Size())
			for k := range vals {
				vals[k] = m.Fill
			}
			copyBlock(vals, whole, j.data, clipped, clipped)
		}
		enc, err := codec.Encode(m, vals)
		j.data = nil // the chunk's elements are not needed any more
		if err != nil {
			return fail("chunk %s: %v", m.Key(j.idx), err)
		}
		if err := writeChunk(filepath.Join(path, m.Key(j.idx)), enc); err != nil {
			return fail("%v", err)
		}
		return nil
	}, func(i int) bool { return fetches[i] != nil })
}

// readers is how many goroutines parallel runs: the cores, and at least 4,
// some waiting on the disk.
func readers() int { return max(4, goruntime.GOMAXPROCS(0)) }

// parallel runs fn(0..n-1) over this process's cores and returns the first
// error. The indices for which waits(i) is true call futures' Get, which
// needs the task's own goroutine: those run there, the others on
// goroutines of their own.
func (e *Env) parallel(n int, fn func(i int) error, waits func(i int) bool) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	record := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	work := make(chan int)
	for range readers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := fn(i); err != nil {
					record(err)
				}
			}
		}()
	}
	for i := range n {
		if waits != nil && waits(i) {
			if err := fn(i); err != nil {
				record(err)
			}
			continue
		}
		work <- i
	}
	close(work)
	wg.Wait()
	return first
}

// ZarrReadOptions says how ReadZarr lays out the array it reads.
type ZarrReadOptions struct {
	// Layout names and tiles the array; an empty Name gives
	// "<base>_zarr_<k>" (base: the directory's name without extension).
	Layout Layout
}

// ReadZarr reads the Zarr version 2 array in the directory path (dtype
// "<f8" or "<i8", order C, no filters; no compressor, zlib, gzip, zstd or
// Blosc with lz4, zlib or zstd, as Python zarr writes by default) into an
// array laid out by opts.Layout, any tiling. Each locality reads the
// metadata and only the chunks its tile meets, in parallel over its cores
// (an uncompressed chunk not in the page cache straight from the disk into
// the tile, which is the locality's own memory, not a lendable segment);
// a missing chunk is the fill value, as zarr reads it. One barrier,
// reserved when called, makes a bad file (unsupported dtype or compressor,
// order F, a corrupt chunk) fail the future on every locality; the error
// names the array, the locality and what was expected.
func ReadZarr(ctx context.Context, e *Env, path string, opts ZarrReadOptions) *runtime.Future[*Array] {
	const op = "ReadZarr"
	l := opts.Layout
	if l.Name == "" {
		l.Name = e.newName(csvBase(filepath.Clean(path)) + "_zarr")
	}
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (*Array, error) {
		x, err := readZarr(e, path, l)
		if err != nil {
			return nil, err
		}
		if _, err := r.Barrier(ctx).Get(ctx); err != nil {
			return nil, e.wrap(op, err)
		}
		return x, nil
	})
}

// readZarr reads this locality's tile.
func readZarr(e *Env, path string, l Layout) (*Array, error) {
	const op = "ReadZarr"
	fail := func(format string, args ...any) error {
		return e.errorf(op, "zarr %s: %s", path, fmt.Sprintf(format, args...))
	}
	raw, err := os.ReadFile(filepath.Join(path, ".zarray"))
	if err != nil {
		return nil, fail("no array metadata: %v", err)
	}
	m, err := zarr.ParseMeta(path, raw)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	ann, err := e.annotation(op, m.Shape, l)
	if err != nil {
		return nil, err
	}
	h := ann.Local().Halo
	// Every element is read or filled below. The locality's own memory,
	// advised onto huge pages, rather than a lendable shared segment of 4
	// KiB pages: the reads fault the whole tile in, and 1 GiB on 2
	// localities read 1.58, 1.79 and 2.21 GB/s so against 0.49, 1.05 and
	// 1.13 from a shared segment, in alternation (dd 1.37, 1.01, 1.73).
	// The tile is then sent rather than lent to localities on this machine.
	data := runtime.NewTile(e.rt, h.Size(), runtime.TileOptions{Uncleared: true}).Float64s()
	var jobs []zarrJob
	chunksOf(m, h, func(idx []int) {
		b, _ := chunkBlock(m, idx)
		jobs = append(jobs, zarrJob{idx: idx, block: b})
	})
	var codec zarr.Codec
	err = e.parallel(len(jobs), func(i int) error {
		j := jobs[i]
		sub, _ := j.block.Intersect(h)
		key := m.Key(j.idx)
		if off, ok := rawChunk(m, h, j.idx); ok {
			err := readRaw(filepath.Join(path, key), parcel.Float64Bytes(data[off:off+j.block.Size()]), true)
			if errors.Is(err, fs.ErrNotExist) {
				fillBlock(data, h, sub, m.Fill)
				return nil
			}
			if err != nil {
				return fail("chunk %s: %v", key, err)
			}
			return nil
		}
		stored, err := os.ReadFile(filepath.Join(path, key))
		if errors.Is(err, fs.ErrNotExist) {
			fillBlock(data, h, sub, m.Fill)
			return nil
		}
		if err != nil {
			return fail("chunk %s: %v", key, err)
		}
		vals, err := codec.Decode(m, stored)
		if err != nil {
			return fail("chunk %s: %v", key, err)
		}
		_, whole := chunkBlock(m, j.idx)
		copyBlock(data, h, vals, whole, sub)
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return e.newArray(op, ann, data)
}

// writeChunk writes the chunk file name with data, as os.WriteFile does,
// but over an existing file's pages rather than truncating it first: a
// chunk rewritten with as many bytes (an array written again to the same
// place) reuses the file's page-cache pages instead of freeing them and
// taking new ones; a longer old file is cut to the new length after.
func writeChunk(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && st.Size() > int64(len(data)) {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readRaw reads an uncompressed chunk file of exactly len(dst) bytes
// into dst: with direct, from the disk straight into dst when none of it
// is cached (readDirect); else through the page cache, which keeps it
// for a second read.
func readRaw(file string, dst []byte, direct bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != int64(len(dst)) {
		return fmt.Errorf("chunk decodes to %d bytes, want %d", st.Size(), len(dst))
	}
	if direct {
		if ok, err := readDirect(f, dst); ok {
			return err
		}
	}
	_, err = io.ReadFull(f, dst)
	return err
}

// fillBlock sets block sub of dst, row-major over block db, to v.
func fillBlock(dst []float64, db, sub annotate.Block, v float64) {
	src := make([]float64, sub.Size())
	for i := range src {
		src[i] = v
	}
	copyBlock(dst, db, src, sub, sub)
}

// SaveZarr stores w, a whole array one locality holds (an AllGather's
// result, a small replicated result such as k-means centres), as a Zarr
// version 2 array in the directory path, from this process alone: chunks
// as opts says (nil: the whole array as one chunk up to 8 MiB). Unlike
// WriteZarr it is not a collective; one locality calls it.
func SaveZarr(path string, w Whole, opts ZarrOptions) error {
	t, err := annotate.New(annotate.Row, w.Shape, 1)
	if err != nil {
		return fmt.Errorf("primitives: SaveZarr %s: %v", path, err)
	}
	m, err := zarrMeta(t, opts)
	if err == nil && len(w.Data) != annotate.WholeBlock(w.Shape).Size() {
		err = fmt.Errorf("%d elements for shape %v", len(w.Data), w.Shape)
	}
	if err == nil {
		err = os.MkdirAll(path, 0o755)
	}
	var meta []byte
	if err == nil {
		meta, err = m.Marshal()
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(path, ".zarray"), meta, 0o644)
	}
	var codec zarr.Codec
	whole := annotate.WholeBlock(w.Shape)
	chunksOf(m, whole, func(idx []int) {
		if err != nil {
			return
		}
		clipped, full := chunkBlock(m, idx)
		vals := make([]float64, full.Size())
		for k := range vals {
			vals[k] = m.Fill
		}
		copyBlock(vals, full, w.Data, whole, clipped)
		var enc []byte
		if enc, err = codec.Encode(m, vals); err == nil {
			err = os.WriteFile(filepath.Join(path, m.Key(idx)), enc, 0o644)
		}
	})
	if err != nil {
		return fmt.Errorf("primitives: SaveZarr %s: %v", path, err)
	}
	return nil
}
