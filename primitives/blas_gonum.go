//go:build !openblas

package primitives

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"

	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
)

// BLAS names the BLAS and LAPACK behind the primitives' local numerics
// (gonum's blas64 and lapack64): in this build gonum's own pure-Go
// implementations, which use every core for a large Dgemm, with the
// primitives' Dsyrk and Dpotrf for small upper triangles (smallBLAS,
// smallLAPACK). A build with -tags openblas uses OpenBLAS instead.
func BLAS() string { return "gonum (pure Go)" }

// useBLAS sets the BLAS of the build for gonum's blas64 and lapack64;
// Register calls it, once per program before the runtime starts. Here
// they are gonum's pure-Go BLAS and LAPACK with smallBLAS's Dsyrk and
// smallLAPACK's Dpotrf.
func useBLAS() {
	if _, ok := blas64.Implementation().(smallBLAS); !ok {
		blas64.Use(smallBLAS{gonum.Implementation{}})
		lapack64.Use(smallLAPACK{gonumlapack.Implementation{}})
	}
}
