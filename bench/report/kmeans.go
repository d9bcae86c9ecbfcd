package report

// kmeans is the k-means section: examples/kmeans against scikit-learn and
// Dask on the same points and centres.
func kmeans() Section {
	km := func(job string) Measure { return One(job, "KMeans/"+job, "s/op") }
	tessera := One("kmeans", "KMeans/tessera", "s/op")
	return Section{Name: "kmeans", Title: "k-means against scikit-learn and Dask", Rows: []Row{
		{ID: "kmeans-sklearn", Name: "k-means (Lloyd), 2,000,000 x 32, k = 16, 10 iterations, 2 localities", Num: tessera, Den: km("sklearn"),
			DenText: "scikit-learn `KMeans(init=centres, n_init=1, algorithm=\"lloyd\")`, OpenMP on the same 2 cores", Format: "%.2f s", Target: Target{Op: "<=", Bound: 1.0}},
		{ID: "kmeans-dask", Name: "The same against Dask", Num: tessera, Den: km("dask"),
			DenText: "the same loop in Dask array, threaded, 2 workers", Format: "%.2f s", Target: Target{Op: "<=", Bound: 0.5}},
	}, Text: "`examples/kmeans --k 16 --iterations 10` on 2 localities, on points it made (`--make-input --clusters 1`: one Gaussian blob, so that no run converges before the 10th iteration; one `.npy` file), from the first 16 points, timing the clustering without the read; `bench/kmeans_sklearn.py` fits scikit-learn's Lloyd from the same centres with `tol=0` (it stops early only when no label changes, as the example does), and `bench/kmeans_dask.py` runs the same loop in Dask array (distances as |x|² - 2x·cᵀ + |c|², one-hot centre sums). The inertias must agree to 1e-6. The example assigns points as scikit-learn does, a block of points against all centres in one matrix product, labels and sums taken right after it; 16 segments of blocks run as tasks on each locality's lanes, their buffers kept across iterations."}
}
