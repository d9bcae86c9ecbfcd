package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// reference makes the data and scikit-learn's answer.
const reference = `
import sys, json, numpy as np
from sklearn.cluster import KMeans
d, iters = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(7)
centres = rng.uniform(-6, 6, size=(4, 5))
X = centres[rng.integers(0, 4, size=3001)] + rng.normal(0, 2.5, size=(3001, 5))
init = X[rng.choice(len(X), 4, replace=False)]
np.save(d + '/X.npy', X)
np.save(d + '/init.npy', init)
km = KMeans(n_clusters=4, init=init, n_init=1, max_iter=iters, tol=0, algorithm='lloyd').fit(X)
np.save(d + '/labels.npy', km.labels_)
np.save(d + '/centres.npy', km.cluster_centers_)
json.dump({'inertia': float(km.inertia_), 'n_iter': int(km.n_iter_)}, open(d + '/ref.json', 'w'))
`

// compare checks Tessera's Zarr result against scikit-learn's.
const compare = `
import sys, numpy as np, zarr
d, out = sys.argv[1], sys.argv[2]
g = zarr.open_group(out, mode='r')
labels, centres = g['labels'][:], g['centres'][:]
assert labels.dtype == np.int64, labels.dtype
want = np.load(d + '/labels.npy')
assert (labels == want).all(), 'labels differ at %d points' % (labels != want).sum()
rel = np.abs(centres - np.load(d + '/centres.npy')).max() / np.abs(centres).max()
assert rel < 1e-9, rel
print('ok', rel)
`

// TestMatchesScikitLearn runs kmeans as 1 and 3 processes on data the
// test writes and compares labels, centres, inertia and iterations with
// scikit-learn's KMeans(init=centres, n_init=1, algorithm="lloyd") after
// the same iterations: 4 that stop before convergence and 100 that reach
// it.
func TestMatchesScikitLearn(t *testing.T) {
	py := jobtest.Python(t, "numpy", "zarr", "sklearn")
	tessera, prog := jobtest.BuildWithLauncher(t, "kmeans")
	// --help is a request, not an error: exit 0 and the flags listed.
	if out, err := exec.Command(prog, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "-iterations") {
		t.Errorf("kmeans --help: %v, output:\n%s\nwant exit 0 and the flags", err, out)
	}
	inertia := regexp.MustCompile(`(\d+) iterations \(converged: (true|false)\), inertia (\S+);`)
	for _, iters := range []int{4, 100} {
		dir := t.TempDir()
		if out, err := exec.Command(py, "-c", reference, dir, fmt.Sprint(iters)).CombinedOutput(); err != nil {
			t.Fatalf("scikit-learn: %v\n%s", err, out)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, "ref.json"))
		var ref struct {
			Inertia float64
			NIter   int `json:"n_iter"`
		}
		if err := json.Unmarshal(raw, &ref); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3} {
			out := filepath.Join(dir, fmt.Sprint("out-", n))
			text, err := jobtest.Launch(t, tessera, prog, n, "--input", filepath.Join(dir, "X.npy"), "--init", filepath.Join(dir, "init.npy"),
				"--iterations", fmt.Sprint(iters), "--output", out)
			if err != nil {
				t.Fatalf("%d localities, %d iterations: %v\n%s", n, iters, err, text)
			}
			m := inertia.FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("no inertia in:\n%s", text)
			}
			got, _ := strconv.ParseFloat(m[3], 64)
			if r := math.Abs(got-ref.Inertia) / ref.Inertia; r > 1e-9 {
				t.Errorf("%d localities, %d iterations: inertia %.17g, scikit-learn %.17g (relative %g)", n, iters, got, ref.Inertia, r)
			}
			if m[1] != fmt.Sprint(ref.NIter) {
				t.Errorf("%d localities, %d iterations: ran %s, scikit-learn %d", n, iters, m[1], ref.NIter)
			}
			if iters == 100 && m[2] != "true" || iters == 4 && m[2] != "false" {
				t.Errorf("%d iterations: converged %s", iters, m[2])
			}
			if cmp, err := exec.Command(py, "-c", compare, dir, out).CombinedOutput(); err != nil || !bytes.HasPrefix(cmp, []byte("ok")) {
				t.Errorf("%d localities, %d iterations against scikit-learn: %v\n%s", n, iters, err, cmp)
			}
		}
	}
}

// TestBadInput: each problem ends the job with a message naming it.
func TestBadInput(t *testing.T) {
	tessera, prog := jobtest.BuildWithLauncher(t, "kmeans")
	dir := t.TempDir()
	f4 := filepath.Join(dir, "f4.zarr")
	os.MkdirAll(f4, 0o755)
	os.WriteFile(filepath.Join(f4, ".zarray"), []byte(`{"zarr_format": 2, "shape": [10, 3], "chunks": [5, 3], "dtype": "<f4", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`), 0o644)
	points := filepath.Join(dir, "p.npy")
	if out, err := exec.Command(prog, "--make-input", points, "--points", "50", "--dims", "3").CombinedOutput(); err != nil {
		t.Fatalf("--make-input: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", f4, "--k", "2"}, `dtype "<f4": want "<f8" or "<i8"`},
		{[]string{"--input", filepath.Join(dir, "absent.npy"), "--k", "2"}, "absent.npy"},
		{[]string{"--input", points}, "give exactly one of --init FILE and --k K"},
		{[]string{"--input", points, "--k", "60"}, "--k 60"},
		{[]string{"--input", points, "--init", f4}, "f4.zarr"},
	} {
		out, err := jobtest.Launch(t, tessera, prog, 2, c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("kmeans %q: %v, output:\n%s\nwant a failure naming %q", c.args, err, out, c.want)
		}
	}
}
