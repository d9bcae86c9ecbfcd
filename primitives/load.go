package primitives

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/tessera-amt/tessera/runtime"
)

// Load reads an array from a file or directory by its name, as numpy.load
// does by its format: a .npy file (ReadNPY), a .csv file (ReadCSV), or
// else a Zarr directory (ReadZarr), laid out by l.
func Load(ctx context.Context, e *Env, path string, l Layout) *runtime.Future[*Array] {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		return ReadNPY(ctx, e, path, NPYOptions{Layout: l})
	case ".csv":
		return ReadCSV(ctx, e, path, CSVOptions{Layout: l})
	}
	return ReadZarr(ctx, e, path, ZarrReadOptions{Layout: l})
}

// AllSum adds every locality's part element-wise and gives every locality
// the sum, the same bits on each: the partial results of an SPMD loop
// (k-means' cluster sums, a gradient) combined in one AllReduce of the
// Env's communicator, reserved when AllSum is called. Every locality
// passes a part of the same length.
func AllSum(ctx context.Context, e *Env, part []float64) *runtime.Future[[]float64] {
	return collective(ctx, e, "AllSum", func(ctx context.Context, r *runtime.Reservation) ([]float64, error) {
		sum, err := r.AllReduce(ctx, part, runtime.ReduceSum).Get(ctx)
		if err != nil {
			return nil, e.wrap("AllSum", err)
		}
		return sum, nil
	})
}
