package main

import (
	"bytes"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// reference writes the data (X as Zarr with Python zarr's default
// compressor, y as .npy, both together as .csv with the label last) and
// runs the same gradient descent in NumPy.
const reference = `
import sys, numpy as np, zarr
d, steps, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = np.random.default_rng(3)
n, f = 2503, 6
X = rng.normal(0, 1.5, size=(n, f))
plane = rng.normal(0, 1, size=f)
y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ plane) + 0.5))).astype(np.float64)
z = zarr.open_array(d + '/X.zarr', mode='w', shape=X.shape, chunks=(400, 4), dtype='<f8')
z[...] = X
np.save(d + '/y.npy', y.astype(np.int64))
np.savetxt(d + '/data.csv', np.hstack([X, y[:, None]]), delimiter=',', fmt='%.17g')
w, b = np.zeros(f), 0.0
for _ in range(steps):
    p = 1 / (1 + np.exp(-(X @ w + b)))
    r = p - y
    w = w - rate * (X.T @ r) / n
    b = b - rate * r.sum() / n
p = 1 / (1 + np.exp(-(X @ w + b)))
np.save(d + '/w.npy', np.append(w, b))
print('accuracy %.6f' % ((p >= 0.5) == (y >= 0.5)).mean())
`

// compare checks Tessera's weights against NumPy's.
const compare = `
import sys, numpy as np, zarr
d, out = sys.argv[1], sys.argv[2]
g = zarr.open_group(out, mode='r')
got = np.append(g['weights'][:], g['intercept'][:])
want = np.load(d + '/w.npy')
diff = np.abs(got - want).max()
assert diff < 1e-8, (diff, got, want)
print('ok', diff)
`

// TestMatchesNumPy runs logreg as 1, 2 and 3 processes, on a Zarr input
// with .npy labels and on a CSV with the labels last: the weights are
// within 1e-8 of NumPy's after the same steps, and the accuracy is NumPy's.
func TestMatchesNumPy(t *testing.T) {
	py := jobtest.Python(t, "numpy", "zarr")
	tessera, prog := jobtest.BuildWithLauncher(t, "logreg")
	if out, err := exec.Command(prog, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "-steps") {
		t.Errorf("logreg --help: %v, output:\n%s\nwant exit 0 and the flags", err, out)
	}
	dir := t.TempDir()
	const steps, rate = "150", "0.3"
	ref, err := exec.Command(py, "-c", reference, dir, steps, rate).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, ref)
	}
	accuracy := regexp.MustCompile(`accuracy (\S+)`).FindStringSubmatch(string(ref))
	for _, c := range []struct {
		n     int
		input []string
	}{
		{1, []string{"--input", filepath.Join(dir, "X.zarr"), "--labels", filepath.Join(dir, "y.npy")}},
		{3, []string{"--input", filepath.Join(dir, "X.zarr"), "--labels", filepath.Join(dir, "y.npy")}},
		{2, []string{"--input", filepath.Join(dir, "data.csv")}},
	} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d-%d", c.n, len(c.input)))
		text, err := jobtest.Launch(t, tessera, prog, c.n, append(c.input, "--steps", steps, "--rate", rate, "--intercept", "--output", out)...)
		if err != nil {
			t.Fatalf("%d localities %q: %v\n%s", c.n, c.input, err, text)
		}
		if !strings.Contains(text, accuracy[0]+",") {
			t.Errorf("%d localities %q: want NumPy's %s in:\n%s", c.n, c.input, accuracy[0], text)
		}
		if cmp, err := exec.Command(py, "-c", compare, dir, out).CombinedOutput(); err != nil || !bytes.HasPrefix(cmp, []byte("ok")) {
			t.Errorf("%d localities %q against NumPy: %v\n%s", c.n, c.input, err, cmp)
		}
	}
	// Bad labels end the job naming the problem.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("1,2,0\n3,4,2\n5,6,1\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", bad}, "label of sample 1 is 2: want 0 or 1"},
		{[]string{"--input", filepath.Join(dir, "X.zarr"), "--labels", bad}, "want one label per sample"},
		{[]string{"--input", filepath.Join(dir, "X.zarr"), "--rate", "0"}, "--rate 0"},
	} {
		text, err := jobtest.Launch(t, tessera, prog, 2, c.args...)
		if err == nil || !strings.Contains(text, c.want) {
			t.Errorf("logreg %q: %v, output:\n%s\nwant a failure naming %q", c.args, err, text, c.want)
		}
	}
}
