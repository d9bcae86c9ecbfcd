package report

// zarr is the Zarr section: I/O rates against dd, and the column
// normalisation against Dask.
func zarr() Section {
	return Section{Name: "zarr", Title: "Zarr I/O and column normalisation", Rows: []Row{
		{ID: "zarr-write", Name: "`WriteZarr` of 1 GiB (`<f8`, no compressor, 8 MiB chunks), 2 localities, until synced", Num: One("zarr-io", "Zarr/write", "GB/s"),
			Den: One("dd", "Disk/dd_write", "GB/s"), DenText: "`dd bs=8M conv=fdatasync` to the same disk", Format: "%.2f GB/s", Target: Target{Op: ">=", Bound: 0.8}},
		{ID: "zarr-read", Name: "`ReadZarr` of 1 GiB, 2 localities, page cache dropped", Num: One("zarr-io", "Zarr/read", "GB/s"),
			Den: One("dd", "Disk/dd_read", "GB/s"), DenText: "`dd bs=8M` from the same disk, page cache dropped", Format: "%.2f GB/s", Target: Target{Op: ">=", Bound: 0.8}},
		{ID: "normalise", Name: "Column mean/std normalisation of 4,000,000 x 64 from Zarr to Zarr, 2 localities", Num: One("normalise", "Normalise/tessera", "s/op"),
			Den: One("dask", "Normalise/dask", "s/op"), DenText: "Dask: `da.from_zarr`, `(x - x.mean(0)) / x.std(0)`, `to_zarr`, 2 threads", Format: "%.2f s", Target: Target{Op: "<=", Bound: 0.5}},
		{ID: "normalise-tiles", Name: "The same through whole arrays (`ReadZarr`, `ZScore`, `WriteZarr`, `-tiles`)", Num: One("normalise-tiles", "Normalise/tessera", "s/op"),
			Den: One("dask", "Normalise/dask", "s/op"), DenText: "the same Dask program", Format: "%.2f s"},
		{ID: "normalise-steps", Name: "The same written as NumPy's expression (`Sub` and `Div` of `MeanAxis` and `StdAxis`, `-steps`)", Num: One("normalise-steps", "Normalise/tessera", "s/op"),
			Den: One("dask", "Normalise/dask", "s/op"), DenText: "the same Dask program", Format: "%.2f s"},
	}, Text: "`bench/zarrio` on 2 localities: `-test io` writes a 1 GiB row-tiled array with `primitives.WriteZarr` (timed until `sync(2)` returns) and reads it back with `primitives.ReadZarr` after dropping the page cache (`/proc/sys/vm/drop_caches`, as root; the lines say `1 cache-dropped`), against `bench/dd_rate.sh`'s `dd` rates of the same directory in the same repetition. `-test normalise` reads a 4,000,000 x 64 `<f8` array (62,500-row chunks, no compressor), normalises its columns and writes the result with `primitives.ZScoreZarr` (scipy's `zscore` along axis 0, Zarr to Zarr: each locality streams its chunks through a few reused buffers twice, once for the columns' mean and variance together, merged by Chan's formula and one all-gather, once normalising and writing each chunk; in a second row the same through whole arrays, `ReadZarr`, `primitives.ZScore`, `WriteZarr`, and in a third with the expression a NumPy user writes), against `bench/normalise_dask.py` on the same input; the sums of the first 1000 rows of the results must agree to 1e-9. The input is in the page cache for both; the outputs are not synced."}
}
