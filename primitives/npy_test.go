package primitives

import (
	"context"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/runtime"
)

// TestNPYRoundTripWithNumPy has NumPy save arrays that Tessera reads on 1
// to 4 localities in every tiling, writes them back from every tiling and
// has NumPy load what Tessera wrote.
func TestNPYRoundTripWithNumPy(t *testing.T) {
	py := jobtest.Python(t, "numpy")
	dir := t.TempDir()
	save := `
import sys, numpy as np
d = sys.argv[1]
for shape in [(13,), (7, 5), (3, 4, 5)]:
    n = int(np.prod(shape))
    np.save(d + '/f%d.npy' % len(shape), (np.arange(n) / 4 - 3).reshape(shape))
np.save(d + '/ints.npy', (np.arange(35) * 4 - 12).reshape(7, 5))
np.save(d + '/fortran.npy', np.asfortranarray(np.ones((7, 5))))
np.save(d + '/big.npy', np.ones((7, 5), dtype='>f8'))
np.save(d + '/f4.npy', np.ones((7, 5), dtype='<f4'))
`
	if out, err := exec.Command(py, "-c", save, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "cut.npy"), func() []byte {
		b, _ := os.ReadFile(filepath.Join(dir, "f2.npy"))
		return b[:len(b)-8]
	}(), 0o644)
	ints := make([]float64, 35)
	for i := range ints {
		ints[i] = float64(4*i - 12)
	}
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range testShapes {
				ref := exactData(shape)
				file := filepath.Join(dir, fmt.Sprintf("f%d.npy", len(shape)))
				for li, l := range layouts(shape, n) {
					x, err := ReadNPY(ctx, e, file, NPYOptions{Layout: l}).Get(ctx)
					if err != nil {
						return err
					}
					if err := checkTile(x, ref, file+" "+describe(shape, l)); err != nil {
						return err
					}
					out := filepath.Join(dir, fmt.Sprintf("go-%d-%d-%d.npy", n, len(shape), li))
					if _, err := WriteNPY(ctx, e, runtime.MakeReady(x), out, NPYOptions{}).Get(ctx); err != nil {
						return err
					}
				}
			}
			x, err := ReadNPY(ctx, e, filepath.Join(dir, "ints.npy"), NPYOptions{}).Get(ctx)
			if err != nil {
				return err
			}
			if err := checkTile(x, ints, "ints.npy"); err != nil {
				return err
			}
			if _, err := WriteNPY(ctx, e, runtime.MakeReady(x), filepath.Join(dir, fmt.Sprintf("goint-%d.npy", n)), NPYOptions{Dtype: "<i8"}).Get(ctx); err != nil {
				return err
			}
			for _, c := range []struct{ file, want string }{
				{"fortran.npy", "fortran_order True: want a C-order"},
				{"big.npy", `dtype ">f8" is big-endian: want "<f8" or "<i8"`},
				{"f4.npy", `dtype "<f4": want "<f8" or "<i8"`},
				{"cut.npy", "want 408"},
				{"absent.npy", "absent.npy"},
			} {
				_, err := ReadNPY(ctx, e, filepath.Join(dir, c.file), NPYOptions{}).Get(ctx)
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), "ReadNPY on locality") {
					return fmt.Errorf("%s: error %v, want one naming the file, the locality and %q", c.file, err, c.want)
				}
			}
			return nil
		})
		load := `
import sys, glob, numpy as np
k = 0
for p in sorted(glob.glob(sys.argv[1] + '/go-%s-*.npy' % sys.argv[2])):
    a = np.load(p)
    assert a.dtype == np.float64 and (a.ravel() == np.arange(a.size) / 4 - 3).all(), (p, a)
    k += 1
a = np.load(sys.argv[1] + '/goint-%s.npy' % sys.argv[2])
assert a.dtype == np.int64 and a.shape == (7, 5) and (a.ravel() == np.arange(35) * 4 - 12).all(), a
print('ok', k)
`
		out, err := exec.Command(py, "-c", load, dir, fmt.Sprint(n)).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok ") || strings.TrimSpace(string(out)) == "ok 0" {
			t.Fatalf("numpy loading Tessera's files: %v\n%s", err, out)
		}
	})
}
