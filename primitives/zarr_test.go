package primitives

import (
	"context"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/zarr"
	"github.com/tessera-amt/tessera/runtime"
)

// exactData is the array Python and Go both compute without rounding:
// element g (row-major) is g/4 - 3.
func exactData(shape []int) []float64 {
	out := make([]float64, size(shape))
	for g := range out {
		out[g] = float64(g)/4 - 3
	}
	return out
}

// TestZarrRoundTrip writes every shape and tiling with several chunk
// shapes and compressors and reads each back into another tiling.
func TestZarrRoundTrip(t *testing.T) {
	dir := t.TempDir()
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for si, shape := range testShapes {
				ref := exactData(shape)
				for li, l := range layouts(shape, n) {
					x, err := FromGlobal(e, shape, l, ref)
					if err != nil {
						return err
					}
					chunks := [][]int{nil, make([]int, len(shape))}
					for d := range shape {
						chunks[1][d] = 2 // chunks that cross tiles
					}
					comps := [][]string{{"", "zstd"}, {"zlib", "gzip"}}
					for ci, c := range chunks {
						for _, comp := range comps[ci] {
							p := filepath.Join(dir, fmt.Sprintf("n%d-s%d-l%d-c%d-%s", n, si, li, ci, comp))
							if _, err := WriteZarr(ctx, e, runtime.MakeReady(x), p, ZarrOptions{Chunks: c, Compressor: comp}).Get(ctx); err != nil {
								return err
							}
							for _, rl := range layouts(shape, n) {
								y, err := ReadZarr(ctx, e, p, ZarrReadOptions{Layout: rl}).Get(ctx)
								if err != nil {
									return err
								}
								if err := checkTile(y, ref, fmt.Sprintf("%s written %s chunks %v read %s", p, describe(shape, l), c, describe(shape, rl))); err != nil {
									return err
								}
								y.Release()
							}
						}
					}
				}
			}
			return nil
		})
	})
}

// TestZarrWithPython has Python zarr write arrays (its default Blosc-lz4
// compressor, with missing chunks, with nested chunk keys) that Tessera
// reads on 1 to 4 localities, and reads with zarr and
// dask.array.from_zarr what Tessera writes.
func TestZarrWithPython(t *testing.T) {
	py := jobtest.Python(t, "zarr", "dask.array", "numpy")
	dir := t.TempDir()
	write := `
import sys, os, zarr, numpy as np
d = sys.argv[1]
for name, shape, chunks in [('a1', (29,), (8,)), ('a2', (23, 9), (5, 4)), ('a3', (5, 6, 7), (2, 4, 3))]:
    n = int(np.prod(shape))
    z = zarr.open_array(d + '/' + name, mode='w', shape=shape, chunks=chunks, dtype='<f8')
    z[...] = (np.arange(n) / 4 - 3).reshape(shape)
z = zarr.open_array(d + '/ints', mode='w', shape=(40, 3), chunks=(7, 3), dtype='<i8')
z[...] = np.arange(120).reshape(40, 3) * 4 - 12
z = zarr.open_array(d + '/nested', mode='w', shape=(23, 9), chunks=(6, 5), dtype='<f8', dimension_separator='/', compressor=None)
z[...] = (np.arange(23 * 9) / 4 - 3).reshape(23, 9)
z = zarr.open_array(d + '/sparse', mode='w', shape=(20, 4), chunks=(5, 4), dtype='<f8', fill_value=-1.5)
z[0:5] = 7.0
z[15:20] = 8.0
`
	if out, err := exec.Command(py, "-c", write, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	// 5.0 and 10.0 were never written: missing chunks, read as the fill.
	sparse := make([]float64, 80)
	for i := range sparse {
		switch {
		case i < 20:
			sparse[i] = 7
		case i >= 60:
			sparse[i] = 8
		default:
			sparse[i] = -1.5
		}
	}
	ints := make([]float64, 120)
	for i := range ints {
		ints[i] = float64(i*4 - 12)
	}
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, c := range []struct {
				name  string
				shape []int
				ref   []float64
			}{
				{"a1", []int{29}, nil}, {"a2", []int{23, 9}, nil}, {"a3", []int{5, 6, 7}, nil},
				{"ints", []int{40, 3}, ints}, {"sparse", []int{20, 4}, sparse}, {"nested", []int{23, 9}, nil},
			} {
				ref := c.ref
				if ref == nil {
					ref = exactData(c.shape)
				}
				for _, l := range layouts(c.shape, n) {
					x, err := ReadZarr(ctx, e, filepath.Join(dir, c.name), ZarrReadOptions{Layout: l}).Get(ctx)
					if err != nil {
						return err
					}
					if fmt.Sprint(x.Shape()) != fmt.Sprint(c.shape) {
						return fmt.Errorf("%s: shape %v, want %v", c.name, x.Shape(), c.shape)
					}
					if err := checkTile(x, ref, c.name+" "+describe(c.shape, l)); err != nil {
						return err
					}
				}
			}
			// Tessera writes, Python reads.
			for _, shape := range testShapes {
				for _, comp := range []string{"", "zlib", "gzip", "zstd"} {
					for _, dtype := range []string{"<f8", "<i8"} {
						ref := exactData(shape)
						if dtype == "<i8" {
							for i := range ref {
								ref[i] = float64(i*3 - 5)
							}
						}
						x, err := FromGlobal(e, shape, Tiled(annotate.Sym), ref)
						if err != nil {
							return err
						}
						chunks := []int{3, 2, 4}[:len(shape)]
						p := filepath.Join(dir, fmt.Sprintf("go-%d-%d-%s-%s", n, len(shape), comp, dtype[1:]))
						if _, err := WriteZarr(ctx, e, runtime.MakeReady(x), p, ZarrOptions{Chunks: chunks, Compressor: comp, Dtype: dtype}).Get(ctx); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
		read := `
import sys, glob, zarr, dask.array as da, numpy as np
for p in sorted(glob.glob(sys.argv[1] + '/go-' + sys.argv[2] + '-*')):
    z = zarr.open_array(p, mode='r')
    n = int(np.prod(z.shape))
    want = (np.arange(n) * 3 - 5) if z.dtype == np.int64 else (np.arange(n) / 4 - 3)
    want = want.reshape(z.shape)
    assert (z[...] == want).all(), (p, z[...])
    d = da.from_zarr(p)
    assert (d.compute() == want).all(), p
    assert float(d.sum().compute()) == float(want.sum()), p
    print('ok', p.rsplit('/', 1)[1], z.dtype, z.compressor)
`
		out, err := exec.Command(py, "-c", read, dir, fmt.Sprint(n)).CombinedOutput()
		if err != nil || strings.Count(string(out), "ok") != 24 {
			t.Fatalf("python reading Tessera's arrays: %v\n%s", err, out)
		}
	})
}

// TestZarrBadInput reads arrays Tessera does not support or that are
// damaged: each fails on every locality, naming the array, the locality
// and what was expected.
func TestZarrBadInput(t *testing.T) {
	dir := t.TempDir()
	meta := `{"zarr_format": 2, "shape": [10, 3], "chunks": [4, 3], "dtype": "<f8", "compressor": %s, "fill_value": 0.0, "order": "%s", "filters": null}`
	mk := func(name, comp, order string, dtype string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(p, 0o755)
		m := fmt.Sprintf(meta, comp, order)
		m = strings.Replace(m, `"<f8"`, `"`+dtype+`"`, 1)
		os.WriteFile(filepath.Join(p, ".zarray"), []byte(m), 0o644)
		return p
	}
	f4 := mk("f4", "null", "C", "<f4")
	fortran := mk("fortran", "null", "F", "<f8")
	corrupt := mk("corrupt", `{"id": "zlib", "level": 1}`, "C", "<f8")
	for _, k := range []string{"0.0", "1.0", "2.0"} {
		os.WriteFile(filepath.Join(corrupt, k), []byte("not zlib at all"), 0o644)
	}
	short := mk("short", "null", "C", "<f8")
	for _, k := range []string{"0.0", "1.0", "2.0"} {
		os.WriteFile(filepath.Join(short, k), make([]byte, 40), 0o644)
	}
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				for _, c := range []struct {
					path string
					want []string
				}{
					{f4, []string{"f4", `dtype "<f4": want "<f8" or "<i8"`}},
					{fortran, []string{"fortran", `order "F": want "C"`}},
					{corrupt, []string{"corrupt", "chunk", "corrupt zlib chunk"}},
					{short, []string{"short", "chunk", "decodes to 40 bytes, want 96"}},
					{filepath.Join(dir, "absent"), []string{"absent", "no array metadata"}},
				} {
					_, err := ReadZarr(ctx, e, c.path, ZarrReadOptions{}).Get(ctx)
					if err == nil {
						return fmt.Errorf("%s: no error", c.path)
					}
					for _, w := range append(c.want, "ReadZarr on locality") {
						if !strings.Contains(err.Error(), w) {
							return fmt.Errorf("%s: error %q does not say %q", c.path, err, w)
						}
					}
				}
				x, err := FromGlobal(e, []int{4, 2}, Layout{}, []float64{1, 2, 3, 4, 5, 6, 7, 8.5})
				if err != nil {
					return err
				}
				_, err = WriteZarr(ctx, e, runtime.MakeReady(x), filepath.Join(dir, fmt.Sprint("bad-", n)), ZarrOptions{Dtype: "<i8", Chunks: []int{1, 2}}).Get(ctx)
				if err == nil || !strings.Contains(err.Error(), "want an integer") || !strings.Contains(err.Error(), "WriteZarr") {
					return fmt.Errorf("8.5 written as <i8: %v", err)
				}
				_, err = WriteZarr(ctx, e, runtime.MakeReady(x), filepath.Join(dir, "lz"), ZarrOptions{Compressor: "lzma"}).Get(ctx)
				if err == nil || !strings.Contains(err.Error(), `compressor "lzma"`) {
					return fmt.Errorf("lzma: %v", err)
				}
				return nil
			})
		})
	}
}

// TestSaveZarr stores whole arrays from one process, read back by ReadZarr
// on 3 localities.
func TestSaveZarr(t *testing.T) {
	dir := t.TempDir()
	for i, shape := range testShapes {
		opts := ZarrOptions{Compressor: "zstd"}
		if i == 1 {
			opts = ZarrOptions{Chunks: []int{2, 2}, Dtype: "<i8"}
		}
		ref := exactData(shape)
		if opts.Dtype == "<i8" {
			for g := range ref {
				ref[g] = float64(g - 4)
			}
		}
		if err := SaveZarr(filepath.Join(dir, fmt.Sprint(i)), Whole{Shape: shape, Data: ref}, opts); err != nil {
			t.Fatal(err)
		}
	}
	if err := SaveZarr(filepath.Join(dir, "bad"), Whole{Shape: []int{3}, Data: []float64{1}}, ZarrOptions{}); err == nil || !strings.Contains(err.Error(), "1 elements for shape [3]") {
		t.Errorf("short data: %v", err)
	}
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		for i, shape := range testShapes {
			ref := exactData(shape)
			if i == 1 {
				for g := range ref {
					ref[g] = float64(g - 4)
				}
			}
			x, err := ReadZarr(ctx, e, filepath.Join(dir, fmt.Sprint(i)), ZarrReadOptions{Layout: Tiled(annotate.Sym)}).Get(ctx)
			if err != nil {
				return err
			}
			if err := checkTile(x, ref, fmt.Sprint("saved ", shape)); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestZarrChunksOfATile: a locality reads exactly the chunks its tile
// meets, and a write whose chunks lie inside the tiles fetches nothing
// while one whose chunks cross them fetches only what its chunks lack.
func TestZarrChunksOfATile(t *testing.T) {
	m := zarr.Meta{Shape: []int{23, 9, 5}, Chunks: []int{4, 2, 5}}
	tl, err := annotate.New(annotate.Sym, m.Shape, 6)
	if err != nil {
		t.Fatal(err)
	}
	for _, tile := range tl.Tiles {
		got := map[string]bool{}
		chunksOf(m, tile.Halo, func(idx []int) { got[m.Key(idx)] = true })
		g := m.Grid()
		for i := range g[0] {
			for j := range g[1] {
				b, _ := chunkBlock(m, []int{i, j, 0})
				_, meets := b.Intersect(tile.Halo)
				if meets != got[m.Key([]int{i, j, 0})] {
					t.Errorf("tile %v, chunk %d.%d.0 (%v): listed %v, meets %v", tile.Halo, i, j, b, got[m.Key([]int{i, j, 0})], meets)
				}
			}
		}
	}
	dir := t.TempDir()
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		shape := []int{30, 4}
		x, err := FromGlobal(e, shape, Tiled(annotate.Row), exactData(shape))
		if err != nil {
			return err
		}
		before := e.Counters().BytesFetched
		if err := WriteZarr(ctx, e, runtime.MakeReady(x), filepath.Join(dir, "aligned"), ZarrOptions{Chunks: []int{5, 4}}).Err(ctx); err != nil {
			return err
		}
		if got := e.Counters().BytesFetched - before; got != 0 {
			return fmt.Errorf("locality %d fetched %d bytes writing chunks inside its tile", e.Locality(), got)
		}
		// Chunks of 4 rows: tiles [0,10) [10,20) [20,30); locality 0 writes
		// chunks 0-2 (rows 0-12: 2 rows of locality 1's), locality 1 chunks
		// 3-4 (rows 12-20), locality 2 chunks 5-7 (rows 20-30).
		before = e.Counters().BytesFetched
		if err := WriteZarr(ctx, e, runtime.MakeReady(x), filepath.Join(dir, "crossing"), ZarrOptions{Chunks: []int{4, 4}}).Err(ctx); err != nil {
			return err
		}
		want := map[int]uint64{0: 2 * 4 * 8, 1: 0, 2: 0}[e.Locality()]
		if got := e.Counters().BytesFetched - before; got != want {
			return fmt.Errorf("locality %d fetched %d bytes writing crossing chunks, want %d", e.Locality(), got, want)
		}
		return nil
	})
}

// TestZarrManyChunks reads an uncompressed array of many more chunks
// than parallel readers (the chunks read straight into the tile), one
// chunk missing, on 1 to 4 localities and two layouts: every element is
// the one written, or the fill value where the chunk is missing.
func TestZarrManyChunks(t *testing.T) {
	dir := t.TempDir()
	shape := []int{1000, 3}
	ref := exactData(shape)
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			p := filepath.Join(dir, fmt.Sprintf("many-%d", n))
			x, err := FromGlobal(e, shape, Tiled(annotate.Row), ref)
			if err != nil {
				return err
			}
			if err := WriteZarr(ctx, e, runtime.MakeReady(x), p, ZarrOptions{Chunks: []int{7, 3}}).Err(ctx); err != nil {
				return err
			}
			want := slices.Clone(ref)
			if e.Locality() == 0 {
				if err := os.Remove(filepath.Join(p, "40.0")); err != nil { // rows 280 to 286
					return err
				}
			}
			clear(want[280*3 : 287*3]) // zarr's fill value: 0
			// An all-reduce: the chunk is gone before anyone reads.
			if _, err := AllSum(ctx, e, []float64{0}).Get(ctx); err != nil {
				return err
			}
			for _, l := range []Layout{Tiled(annotate.Row), {Kind: annotate.Row, Halo: 2}} {
				y, err := ReadZarr(ctx, e, p, ZarrReadOptions{Layout: l}).Get(ctx)
				if err != nil {
					return err
				}
				if err := checkTile(y, want, fmt.Sprintf("%s read %s", p, describe(shape, l))); err != nil {
					return err
				}
				y.Release()
			}
			return nil
		})
	})
}

// TestZarrRewrite writes arrays to the same directory again: raw chunks
// over raw chunks of the same size, then compressed chunks (shorter) over
// them, then raw ones over those; every read gives the last array written.
func TestZarrRewrite(t *testing.T) {
	dir := t.TempDir()
	shape := []int{300, 4}
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			p := filepath.Join(dir, fmt.Sprintf("rewrite-%d", n))
			for i, comp := range []string{"", "", "zlib", ""} {
				ref := globalData(shape, uint64(10+i), -1, 1)
				x, err := FromGlobal(e, shape, Tiled(annotate.Row), ref)
				if err != nil {
					return err
				}
				if err := WriteZarr(ctx, e, runtime.MakeReady(x), p, ZarrOptions{Chunks: []int{16, 4}, Compressor: comp}).Err(ctx); err != nil {
					return err
				}
				y, err := ReadZarr(ctx, e, p, ZarrReadOptions{Layout: Tiled(annotate.Row)}).Get(ctx)
				if err != nil {
					return err
				}
				if err := checkTile(y, ref, fmt.Sprintf("write %d (compressor %q) over the last", i, comp)); err != nil {
					return err
				}
				x.Release()
				y.Release()
			}
			return nil
		})
	})
}
