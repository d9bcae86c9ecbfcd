package main

import (
	"bytes"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// data writes a tall, skinny matrix of correlated columns as CSV.
const data = `
import sys, numpy as np
rng = np.random.default_rng(11)
n, f = 4001, 7
scales = np.array([9, 5, 3, 2, 1, 0.5, 0.1])
X = rng.normal(size=(n, f)) * scales @ np.linalg.qr(rng.normal(size=(f, f)))[0] + rng.uniform(-3, 3, size=f)
np.savetxt(sys.argv[1] + '/X.csv', X, delimiter=',', fmt='%.17g')
`

// compare checks Tessera's result against scikit-learn's PCA.
const compare = `
import sys, numpy as np, zarr
from sklearn.decomposition import PCA
d, out, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
X = np.loadtxt(d + '/X.csv', delimiter=',')
p = PCA(svd_solver='full').fit(X)
g = zarr.open_group(out, mode='r')
ratio = g['explained_variance_ratio'][:]
assert ratio.shape == (k,), ratio.shape
diff = np.abs(ratio - p.explained_variance_ratio_[:k]).max()
assert diff < 1e-8, ('ratio', diff)
rel = (np.abs(g['explained_variance'][:] - p.explained_variance_[:k]) / p.explained_variance_[:k]).max()
assert rel < 1e-8, ('variance', rel)
assert np.abs(g['mean'][:] - p.mean_).max() < 1e-12
comp = g['components'][:]
align = np.abs(np.sum(comp * p.components_[:k], axis=1))
assert np.abs(align - 1).max() < 1e-8, ('components', align)
scores = g['scores'][:]
ref = p.transform(X)[:, :k] * np.sign(np.sum(comp * p.components_[:k], axis=1))
sd = np.abs(scores - ref).max() / np.abs(ref).max()
assert sd < 1e-8, ('scores', sd)
print('ok', diff, rel, sd)
`

// TestMatchesScikitLearn runs pca as 1, 2 and 3 processes on a CSV the
// test writes: explained-variance ratios within 1e-8 of scikit-learn's
// PCA(svd_solver="full"), the variances, mean, components (up to sign)
// and scores too.
func TestMatchesScikitLearn(t *testing.T) {
	py := jobtest.Python(t, "numpy", "zarr", "sklearn")
	tessera, prog := jobtest.BuildWithLauncher(t, "pca")
	if out, err := exec.Command(prog, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "-components") {
		t.Errorf("pca --help: %v, output:\n%s\nwant exit 0 and the flags", err, out)
	}
	dir := t.TempDir()
	if out, err := exec.Command(py, "-c", data, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	for _, c := range []struct{ n, k int }{{1, 7}, {2, 4}, {3, 7}} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d-%d", c.n, c.k))
		text, err := jobtest.Launch(t, tessera, prog, c.n, "--input", filepath.Join(dir, "X.csv"), "--components", fmt.Sprint(c.k), "--output", out, "--scores")
		if err != nil {
			t.Fatalf("%d localities: %v\n%s", c.n, err, text)
		}
		if got := strings.Count(text, "explained variance"); got != c.k {
			t.Errorf("%d localities: %d components printed, want %d:\n%s", c.n, got, c.k, text)
		}
		if cmp, err := exec.Command(py, "-c", compare, dir, out, fmt.Sprint(c.k)).CombinedOutput(); err != nil || !bytes.HasPrefix(cmp, []byte("ok")) {
			t.Errorf("%d localities, %d components against scikit-learn: %v\n%s", c.n, c.k, err, cmp)
		}
	}
	one := filepath.Join(dir, "one.csv")
	os.WriteFile(one, []byte("1,2,3\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", one}, "want a 2-D array of at least 2 samples"},
		{[]string{"--input", filepath.Join(dir, "X.csv"), "--scores"}, "--scores needs --output"},
		{[]string{"--input", filepath.Join(dir, "absent.zarr")}, "absent.zarr"},
	} {
		text, err := jobtest.Launch(t, tessera, prog, 1, c.args...)
		if err == nil || !strings.Contains(text, c.want) {
			t.Errorf("pca %q: %v, output:\n%s\nwant a failure naming %q", c.args, err, text, c.want)
		}
	}
}
