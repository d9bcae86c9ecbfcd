// Command cannon is the single-process baseline of the Cannon section of
// `make bench`: one process, no runtime, multiplies two n x n matrices of
// uniform random values with one blas64.Gemm on the whole matrices, with
// the BLAS the primitives use in this build (primitives.Register sets it:
// gonum's pure Go, or OpenBLAS with -tags openblas). It prints the time of
// the product alone and its GFLOP/s (2n³ floating-point operations):
//
//	cannon -n 2048
//	RESULT name=dgemm n=2048 seconds=1.234567 gflops=13.917
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

func main() {
	n := flag.Int("n", 2048, "matrix order")
	seed := flag.Uint64("seed", 1, "seed of the matrices")
	flag.Parse()
	if *n < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: cannon [-n order] [-seed s]")
		os.Exit(2)
	}
	// The BLAS of the build, as every Tessera program gets it.
	reg := runtime.NewRegistry()
	primitives.Register(reg, agas.New(reg))

	r := rand.New(rand.NewPCG(*seed, 1))
	mk := func() blas64.General {
		m := blas64.General{Rows: *n, Cols: *n, Stride: *n, Data: make([]float64, *n**n)}
		for i := range m.Data {
			m.Data[i] = r.Float64()
		}
		return m
	}
	a, b := mk(), mk()
	c := blas64.General{Rows: *n, Cols: *n, Stride: *n, Data: make([]float64, *n**n)}
	start := time.Now()
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
	s := time.Since(start).Seconds()
	fmt.Printf("dgemm: %d x %d product in one process (BLAS %s): %.4f s\n", *n, *n, primitives.BLAS(), s)
	fmt.Printf("RESULT name=dgemm n=%d seconds=%.6f gflops=%.3f\n", *n, s, 2*float64(*n)*float64(*n)*float64(*n)/s/1e9)
}
