package primitives

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Load reads each format by its name, the same array as written.
func TestLoadByName(t *testing.T) {
	dir := t.TempDir()
	shape := []int{7, 3}
	global := globalData(shape, 11, -1, 1)
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		a, err := FromGlobal(e, shape, Tiled(annotate.Row), global)
		if err != nil {
			return err
		}
		npy, csv, zarr := filepath.Join(dir, "a.npy"), filepath.Join(dir, "a.csv"), filepath.Join(dir, "a.zarr")
		if err := WriteNPY(ctx, e, runtime.MakeReady(a), npy, NPYOptions{}).Err(ctx); err != nil {
			return err
		}
		if err := WriteCSV(ctx, e, runtime.MakeReady(a), csv, CSVWriteOptions{}).Err(ctx); err != nil {
			return err
		}
		if _, err := WriteZarr(ctx, e, runtime.MakeReady(a), zarr, ZarrOptions{}).Get(ctx); err != nil {
			return err
		}
		for _, path := range []string{npy, csv, zarr} {
			w, err := AllGather(ctx, e, Load(ctx, e, path, Tiled(annotate.Column))).Get(ctx)
			if err != nil {
				return fmt.Errorf("Load %s: %w", filepath.Base(path), err)
			}
			if !slices.Equal(w.Shape, shape) || !slices.Equal(w.Data, global) {
				return fmt.Errorf("Load %s: shape %v, data %v; want %v, %v", filepath.Base(path), w.Shape, w.Data, shape, global)
			}
		}
		return nil
	})
}

// AllSum gives every locality the element-wise sum of the parts.
func TestAllSum(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			i := float64(e.Locality())
			sum, err := AllSum(ctx, e, []float64{i, 2 * i, 1}).Get(ctx)
			m := float64(n * (n - 1) / 2)
			if err != nil || !slices.Equal(sum, []float64{m, 2 * m, float64(n)}) {
				return fmt.Errorf("AllSum on %d localities: %v, %v", n, sum, err)
			}
			return nil
		})
	})
}
