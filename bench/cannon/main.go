// Command cannon holds the single-process baselines of the Cannon section
// of `make bench`, with the BLAS the primitives use in this build
// (primitives.Register sets it: gonum's pure Go, or OpenBLAS with -tags
// openblas), and no runtime.
//
// By default one process multiplies two n x n matrices of uniform random
// values with one blas64.Gemm on the whole matrices, -repeat times into
// the same C, and prints the time of the best product alone, its GFLOP/s
// (2n³ floating-point operations) and every product's time:
//
//	cannon -n 2048 -repeat 3
//	BenchmarkDgemm/n=2048 3 1.234567 s/op 13.917 GFLOP/s
//
// With -grid q it runs the Dgemms of Cannon on a q x q grid without its
// communication (tiles.go): q² processes at once, each multiplying q pairs
// of (n/q) x (n/q) tiles of its own into its tile of C, cleared and
// reused in every repetition, as a locality of Cannon does with the tiles
// it receives and the memory of the product it released. The time, the slowest
// process's of a repetition and the best of -repeat, bounds what any
// distributed product of these tiles can reach on this machine:
//
//	OPENBLAS_NUM_THREADS=1 cannon -n 4096 -grid 2 -repeat 3
//	BenchmarkNocomm/n=4096 3 2.234567 s/op 61.505 GFLOP/s
package main

import (
	"flag"
	"fmt"
	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

func main() {
	n := flag.Int("n", 2048, "matrix order")
	seed := flag.Uint64("seed", 1, "seed of the matrices")
	grid := flag.Int("grid", 0, "q > 0: Cannon's Dgemms on a q x q grid in q² processes, no communication")
	repeat := flag.Int("repeat", 1, "products timed (the best is reported, every one listed)")
	tile := flag.Bool("tile-process", false, "with -grid: be one of the q² processes (started by the command itself)")
	flag.Parse()
	if *n < 1 || *grid < 0 || *repeat < 1 || flag.NArg() > 0 || (*grid > 0 && *n%*grid != 0) {
		fmt.Fprintln(os.Stderr, "usage: cannon [-n order] [-seed s] [-repeat k] [-grid q] (n a multiple of q)")
		os.Exit(2)
	}
	// The BLAS of the build, as every Tessera program gets it.
	reg := runtime.NewRegistry()
	primitives.Register(reg, agas.New(reg))

	var err error
	switch {
	case *tile:
		err = tileProcess(*n / *grid, *grid, *seed, os.Stdin, os.Stdout)
	case *grid > 0:
		err = noComm(*n, *grid, *repeat, *seed)
	default:
		oneDgemm(*n, *repeat, *seed)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannon:", err)
		os.Exit(1)
	}
}

// randomMatrix returns an r x c matrix of uniform random values.
func randomMatrix(rng *rand.Rand, r, c int) blas64.General {
	m := blas64.General{Rows: r, Cols: c, Stride: c, Data: hugepage.Float64s(r * c)}
	for i := range m.Data {
		m.Data[i] = rng.Float64()
	}
	return m
}

// oneDgemm times repeat n x n products in this process, each into the
// same C, as a loop of Tessera's products reuses the memory of the one it
// released.
func oneDgemm(n, repeat int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	a, b := randomMatrix(rng, n, n), randomMatrix(rng, n, n)
	c := blas64.General{Rows: n, Cols: n, Stride: n, Data: hugepage.Float64s(n * n)}
	best, times := math.Inf(1), make([]string, repeat)
	for r := range repeat {
		start := time.Now()
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
		s := time.Since(start).Seconds()
		best, times[r] = min(best, s), fmt.Sprintf("%.6f", s)
	}
	fmt.Printf("dgemm: %d x %d product in one process (BLAS %s): %.4f s (best of %d)\n", n, n, primitives.BLAS(), best, repeat)
	benchline.Print(os.Stdout, fmt.Sprintf("Dgemm/n=%d", n), repeat, benchline.Metric{Value: best, Unit: "s/op"}, benchline.Metric{Value: gflops(n, best), Unit: "GFLOP/s"})
}

// gflops is the rate of an n x n product of s seconds.
func gflops(n int, s float64) float64 { return 2 * float64(n) * float64(n) * float64(n) / s / 1e9 }
