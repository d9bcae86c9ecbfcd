package main

import (
	"slices"
	"time"
)

// zarrIO is the Zarr section: WriteZarr and ReadZarr of 1 GiB on 2
// localities against dd's sequential rates of the same disk, and the
// column normalisation of a 4,000,000 x 64 array read from Zarr against
// Dask. The normalisation's input is made once (bench/zarrio makes it when
// missing), then each repetition runs every job once, in reversed order
// every other repetition; the input is read into the page cache right
// before each normalisation (dd and the I/O test drop the cache).
func zarrIO(bin string, reps int) plan {
	rows := str(count("NORM_ROWS", 4000000))
	mib := str(count("ZARR_MIB", 1024))
	norm := func(name string, extra ...string) job {
		return run(name, 2, nil, "zarrio", append([]string{"-test", "normalise", "-rows", rows, "-cols", "64",
			"-input", "{tmp}/normalise-in.zarr", "-output", "{tmp}/normalise-out.zarr", "-n", "1"}, extra...)...)
	}
	dask := pyHas("dask.array") && pyHas("zarr")
	if !dask {
		say("zarr: no python3-dask or python3-zarr: the Dask row will be missing")
	}
	setup := func(int) []job { return []job{norm("normalise-make")} }
	// dd and the I/O test drop the page cache: the input is read back into
	// it before each normalisation, so that both find it there whatever
	// the order.
	warm := job{name: "warm", argv: []string{"bash", "-c", `cat "{tmp}"/normalise-in.zarr/* >/dev/null`},
		parse: func(string) []string { return nil }, timeout: 10 * time.Minute}
	jobs := func(rep int) []job {
		units := [][]job{
			{{name: "dd", argv: []string{"bash", "bench/dd_rate.sh", "{tmp}", mib}, timeout: 10 * time.Minute}},
			{run("zarr-io", 2, nil, "zarrio", "-test", "io", "-mib", mib, "-n", "1", "-dir", "{tmp}")},
			{warm, norm("normalise")},
			{warm, norm("normalise-tiles", "-tiles")},
			{warm, norm("normalise-steps", "-steps")},
		}
		if dask {
			units = append(units, []job{warm, {name: "dask", argv: []string{python, "bench/normalise_dask.py", "--input", "{tmp}/normalise-in.zarr",
				"--output", "{tmp}/normalise-dask.zarr", "-n", "1", "--threads", "2"}, timeout: 30 * time.Minute}})
		}
		var js []job
		for _, u := range alternateUnits(rep, units) {
			js = append(js, u...)
		}
		return js
	}
	return plan{name: "zarr", phases: []phase{{1, setup}, {reps, jobs}}, check: agree("checksum", 1e-9)}
}

// alternateUnits is alternate over groups of jobs that run together.
func alternateUnits(rep int, units [][]job) [][]job {
	if rep%2 == 0 {
		slices.Reverse(units)
	}
	return units
}
