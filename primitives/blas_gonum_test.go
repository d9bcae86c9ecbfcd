//go:build !openblas

package primitives

import (
	"testing"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/linalg"
	"github.com/tessera-amt/tessera/runtime"
	"golang.org/x/sys/cpu"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack"

	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
)

// TestRegisterUsesPureBLAS: without the openblas tag, Register puts
// gonum's pure-Go BLAS with the primitives' Dsyrk in place (lapack64 does
// not tell its implementation), and BLAS says so.
func TestRegisterUsesPureBLAS(t *testing.T) {
	reg := runtime.NewRegistry()
	Register(reg, agas.New(reg))
	if b, ok := blas64.Implementation().(pureBLAS); !ok || b.Float64 != (gonum.Implementation{}) {
		t.Fatalf("blas64 implementation after Register is %#v, want gonum.Implementation in pureBLAS", blas64.Implementation())
	}
	want := "gonum (pure Go)"
	switch {
	case cpu.X86.HasAVX512F && linalg.HaveFMA():
		want = "gonum (pure Go) with Tessera's AVX-512 Dgemm and AVX2 Dsyrk"
	case linalg.HaveFMA():
		want = "gonum (pure Go) with Tessera's AVX2 Dgemm and Dsyrk"
	}
	if b := BLAS(); b != want {
		t.Errorf("BLAS() = %q, want %q", b, want)
	}
}

// baseBLAS and baseLAPACK are this build's BLAS and LAPACK without the
// primitives' small routines: gonum's pure Go.
func baseBLAS() blas.Float64     { return gonum.Implementation{} }
func baseLAPACK() lapack.Float64 { return gonumlapack.Implementation{} }
