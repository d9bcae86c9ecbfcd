package primitives

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"github.com/tessera-amt/tessera/runtime"
)

// zscoreData is a test array of shape: irregular values, and a constant
// second column in 2-D (its z-scores are NaN, as NumPy's).
func zscoreData(shape []int) []float64 {
	out := make([]float64, size(shape))
	for g := range out {
		out[g] = 3*math.Sin(0.7*float64(g)) + float64(g%5)
		if len(shape) == 2 && g%shape[1] == 1 {
			out[g] = 5
		}
	}
	return out
}

// zscoreRef is scipy.stats.zscore(x, axis=0) of the row-major x of shape,
// computed plainly: two passes per column.
func zscoreRef(shape []int, x []float64) []float64 {
	rows := shape[0]
	inner := len(x) / rows
	out := make([]float64, len(x))
	for c := range inner {
		mean := 0.0
		for r := range rows {
			mean += x[r*inner+c]
		}
		mean /= float64(rows)
		ss := 0.0
		for r := range rows {
			d := x[r*inner+c] - mean
			ss += d * d
		}
		std := math.Sqrt(ss / float64(rows))
		for r := range rows {
			out[r*inner+c] = (x[r*inner+c] - mean) / std
		}
	}
	return out
}

// TestZScoreZarr normalises arrays of 1 to 3 dimensions stored with chunks
// that do and do not divide the shape (edge chunks along every axis),
// compressed and not, on 1 to 4 localities (some with no chunk row), and
// reads the result back against scipy's zscore computed here.
func TestZScoreZarr(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		shape, chunks []int
	}{
		{[]int{13}, []int{4}},
		{[]int{7, 5}, []int{4, 5}},
		{[]int{10, 3}, []int{3, 2}},
		{[]int{9, 4, 5}, []int{2, 3, 5}},
		{[]int{40, 6}, []int{8, 6}},
	}
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for ci, c := range cases {
				data := zscoreData(c.shape)
				want := zscoreRef(c.shape, data)
				x, err := FromGlobal(e, c.shape, Layout{}, data)
				if err != nil {
					return err
				}
				for _, comp := range []string{"", "zstd"} {
					in := filepath.Join(dir, fmt.Sprintf("n%d-c%d-%s-in", n, ci, comp))
					out := filepath.Join(dir, fmt.Sprintf("n%d-c%d-%s-out", n, ci, comp))
					if err := WriteZarr(ctx, e, runtime.MakeReady(x), in, ZarrOptions{Chunks: c.chunks, Compressor: comp}).Err(ctx); err != nil {
						return err
					}
					if err := ZScoreZarr(ctx, e, in, out, ZarrOptions{Compressor: comp}).Err(ctx); err != nil {
						return err
					}
					y, err := ReadZarr(ctx, e, out, ZarrReadOptions{}).Get(ctx)
					if err != nil {
						return err
					}
					got, err := y.Fetch(ctx, annotate.WholeBlock(c.shape)).Get(ctx)
					if err != nil {
						return err
					}
					for g := range want {
						w, v := want[g], got[g]
						if math.IsNaN(w) != math.IsNaN(v) || math.Abs(w-v) > 1e-12*max(1, math.Abs(w)) {
							return fmt.Errorf("%s shape %v chunks %v: element %d is %v, want %v", out, c.shape, c.chunks, g, v, w)
						}
					}
					y.Release()
				}
			}
			// In place, recompressed: each chunk read before it is written.
			shape := []int{10, 3}
			data := zscoreData(shape)
			want := zscoreRef(shape, data)
			x, err := FromGlobal(e, shape, Layout{}, data)
			if err != nil {
				return err
			}
			p := filepath.Join(dir, fmt.Sprintf("n%d-inplace", n))
			if err := WriteZarr(ctx, e, runtime.MakeReady(x), p, ZarrOptions{Chunks: []int{3, 2}}).Err(ctx); err != nil {
				return err
			}
			if err := ZScoreZarr(ctx, e, p, p, ZarrOptions{Compressor: "zlib"}).Err(ctx); err != nil {
				return err
			}
			y, err := ReadZarr(ctx, e, p, ZarrReadOptions{}).Get(ctx)
			if err != nil {
				return err
			}
			got, err := y.Fetch(ctx, annotate.WholeBlock(shape)).Get(ctx)
			if err != nil {
				return err
			}
			for g := range want {
				if w, v := want[g], got[g]; math.IsNaN(w) != math.IsNaN(v) || math.Abs(w-v) > 1e-12*max(1, math.Abs(w)) {
					return fmt.Errorf("%s in place: element %d is %v, want %v", p, g, v, w)
				}
			}
			return nil
		})
	})
}

// TestZScoreZarrBadInput: a missing input, chunks other than the input's
// and a corrupt chunk fail ZScoreZarr on every locality, naming the input
// and what was expected.
func TestZScoreZarrBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt")
	os.MkdirAll(corrupt, 0o755)
	os.WriteFile(filepath.Join(corrupt, ".zarray"), []byte(`{"zarr_format": 2, "shape": [10, 3], "chunks": [4, 3], "dtype": "<f8", "compressor": {"id": "zlib", "level": 1}, "fill_value": 0.0, "order": "C", "filters": null}`), 0o644)
	os.WriteFile(filepath.Join(corrupt, "2.0"), []byte("not zlib at all"), 0o644) // the last locality's chunk
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				x, err := FromGlobal(e, []int{6, 2}, Layout{}, zscoreData([]int{6, 2}))
				if err != nil {
					return err
				}
				good := filepath.Join(dir, fmt.Sprint("good-", n))
				if err := WriteZarr(ctx, e, runtime.MakeReady(x), good, ZarrOptions{Chunks: []int{2, 2}}).Err(ctx); err != nil {
					return err
				}
				for _, c := range []struct {
					in   string
					opts ZarrOptions
					want []string
				}{
					{filepath.Join(dir, "absent"), ZarrOptions{}, []string{"absent", "no array metadata"}},
					{good, ZarrOptions{Chunks: []int{3, 2}}, []string{"good", "chunks [3 2]: want nil or the input's chunks [2 2]"}},
					{corrupt, ZarrOptions{}, []string{"corrupt"}},
				} {
					out := filepath.Join(dir, fmt.Sprint("out-", n))
					err := ZScoreZarr(ctx, e, c.in, out, c.opts).Err(ctx)
					if err == nil {
						return fmt.Errorf("%s: no error", c.in)
					}
					for _, w := range append(c.want, "ZScoreZarr on locality") {
						if !strings.Contains(err.Error(), w) {
							return fmt.Errorf("%s: error %q does not say %q", c.in, err, w)
						}
					}
				}
				return nil
			})
		})
	}
}

// TestZScoreZarrWithDask normalises arrays Python zarr wrote (its default
// Blosc compressor, a 3-D one too) on 2 and 3 localities and has Dask
// compare the output, read with dask.array.from_zarr, with its own
// (x - x.mean(0)) / x.std(0) of the input.
func TestZScoreZarrWithDask(t *testing.T) {
	py := jobtest.Python(t, "zarr", "dask.array", "numpy")
	dir := t.TempDir()
	write := `
import sys, zarr, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
for name, shape, chunks in [('a2', (50, 9), (7, 4)), ('a3', (11, 4, 6), (3, 4, 4))]:
    z = zarr.open_array(d + '/' + name, mode='w', shape=shape, chunks=chunks, dtype='<f8')
    z[...] = rng.normal(3.0, 2.0, size=shape)
`
	if out, err := exec.Command(py, "-c", write, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	check := `
import sys, numpy as np, dask.array as da
x = da.from_zarr(sys.argv[1])
want = ((x - x.mean(axis=0)) / x.std(axis=0)).compute()
got = da.from_zarr(sys.argv[2]).compute()
if got.shape != want.shape or not np.allclose(got, want, rtol=1e-12, atol=1e-12):
    print("differs: max", np.max(np.abs(got - want)))
    sys.exit(1)
print("ok")
`
	for _, n := range []int{2, 3} {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, name := range []string{"a2", "a3"} {
				in, out := filepath.Join(dir, name), filepath.Join(dir, fmt.Sprintf("%s-z%d", name, n))
				if err := ZScoreZarr(ctx, e, in, out, ZarrOptions{Compressor: "zstd"}).Err(ctx); err != nil {
					return err
				}
			}
			return nil
		})
		for _, name := range []string{"a2", "a3"} {
			in, out := filepath.Join(dir, name), filepath.Join(dir, fmt.Sprintf("%s-z%d", name, n))
			if res, err := exec.Command(py, "-c", check, in, out).CombinedOutput(); err != nil {
				t.Errorf("%d localities, %s: %v\n%s", n, name, err, res)
			}
		}
	}
}
