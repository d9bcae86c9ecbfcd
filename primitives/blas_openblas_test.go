//go:build openblas

package primitives

import (
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/netlib/blas/netlib"

	lapacknetlib "gonum.org/v1/netlib/lapack/netlib"
)

// TestRegisterUsesOpenBLAS: after Register, gonum's blas64 is OpenBLAS,
// BLAS says so, and a product through gonum's mat agrees with a naive one.
func TestRegisterUsesOpenBLAS(t *testing.T) {
	reg := runtime.NewRegistry()
	Register(reg, agas.New(reg))
	if _, ok := blas64.Implementation().(netlib.Implementation); !ok {
		t.Fatalf("blas64 implementation after Register is %T, want netlib.Implementation", blas64.Implementation())
	}
	if b := BLAS(); !strings.HasPrefix(b, "OpenBLAS (OpenBLAS ") {
		t.Errorf("BLAS() = %q, want OpenBLAS and its configuration", b)
	}
	const n = 37
	a, b := globalData([]int{n, n}, 1, -1, 1), globalData([]int{n, n}, 2, -1, 1)
	var c mat.Dense
	c.Mul(mat.NewDense(n, n, a), mat.NewDense(n, n, b))
	for i := range n {
		for j := range n {
			want := 0.0
			for k := range n {
				want += a[i*n+k] * b[k*n+j]
			}
			if got := c.At(i, j); !closeTo(got, want, 1e-12) {
				t.Fatalf("OpenBLAS product element (%d, %d) = %v, want %v", i, j, got, want)
			}
		}
	}
}

// baseBLAS and baseLAPACK are this build's BLAS and LAPACK without the
// primitives' small routines: OpenBLAS and LAPACKE through netlib.
func baseBLAS() blas.Float64     { return netlib.Implementation{} }
func baseLAPACK() lapack.Float64 { return lapacknetlib.Implementation{} }
