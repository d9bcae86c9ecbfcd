//go:build !openblas

package primitives

import (
	"github.com/tessera-amt/tessera/internal/linalg"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"

	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
)

// BLAS names the BLAS and LAPACK behind the primitives' local numerics
// (gonum's blas64 and lapack64): in this build gonum's own pure-Go
// implementations with the primitives' Dgemm and Dsyrk (pureBLAS) and
// Dpotrf (smallLAPACK), whose kernels are AVX2 and FMA assembly where the
// CPU has both (Dgemm's AVX-512 where it has that). A build with -tags
// openblas uses OpenBLAS instead.
func BLAS() string {
	switch g := linalg.NewGemmer(); {
	case g != nil && g.Kernel() != "AVX2":
		return "gonum (pure Go) with Tessera's " + g.Kernel() + " Dgemm and AVX2 Dsyrk"
	case g != nil:
		return "gonum (pure Go) with Tessera's AVX2 Dgemm and Dsyrk"
	}
	return "gonum (pure Go)"
}

// useBLAS sets the BLAS of the build for gonum's blas64 and lapack64;
// Register calls it, once per program before the runtime starts. Here
// they are gonum's pure-Go BLAS and LAPACK with pureBLAS's Dgemm and Dsyrk
// and smallLAPACK's Dpotrf.
func useBLAS() {
	if _, ok := blas64.Implementation().(pureBLAS); !ok {
		blas64.Use(newPureBLAS(gonum.Implementation{}))
		lapack64.Use(smallLAPACK{gonumlapack.Implementation{}})
	}
}
