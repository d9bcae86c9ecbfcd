//go:build !openblas

package primitives

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
)

// TestRegisterUsesPureBLAS: without the openblas tag, Register puts
// gonum's pure-Go BLAS with the primitives' Dsyrk in place (lapack64 does
// not tell its implementation), and BLAS says so.
func TestRegisterUsesPureBLAS(t *testing.T) {
	reg := runtime.NewRegistry()
	Register(reg, agas.New(reg))
	if _, ok := blas64.Implementation().(pureBLAS); !ok {
		t.Fatalf("blas64 implementation after Register is %T, want pureBLAS", blas64.Implementation())
	}
	if b := BLAS(); b != "gonum (pure Go)" {
		t.Errorf("BLAS() = %q, want %q", b, "gonum (pure Go)")
	}
}

// spd returns a random symmetric positive definite n x n matrix with
// stride lda (the padding holds a marker Dpotrf must not touch).
func spd(rng *rand.Rand, n, lda int) []float64 {
	g := make([]float64, n*n)
	for i := range g {
		g[i] = rng.Float64()*2 - 1
	}
	a := make([]float64, n*lda)
	for i := range a {
		a[i] = 12345
	}
	for i := range n {
		for j := range n {
			s := 0.0
			for k := range n {
				s += g[k*n+i] * g[k*n+j]
			}
			if i == j {
				s += 0.1
			}
			a[i*lda+j] = s
		}
	}
	return a
}

// TestPureDpotrfMatchesGonum: pureLAPACK's Dpotrf gives gonum's factor of
// the upper triangle (and leaves the lower triangle and the padding
// alone), refuses a matrix that is not positive definite, and hands the
// lower triangle to gonum.
func TestPureDpotrfMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 3, 4, 5, 8, 13, 40, 41, 64} {
		for _, pad := range []int{0, 2} {
			for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
				lda := n + pad
				a := spd(rng, n, lda)
				want := append([]float64(nil), a...)
				if !(gonumlapack.Implementation{}).Dpotrf(ul, n, want, lda) {
					t.Fatalf("n=%d: gonum finds the test matrix not positive definite", n)
				}
				got := map[string][]float64{"pureLAPACK.Dpotrf": a}
				if ul == blas.Upper {
					// The Go kernel's trailing updates too, whatever the CPU.
					g := append([]float64(nil), a...)
					if !potrfUpper(n, g, lda, false) {
						t.Fatalf("n=%d: potrfUpper without fma finds the matrix not positive definite", n)
					}
					got["potrfUpper(fma=false)"] = g
				}
				if !(pureLAPACK{}).Dpotrf(ul, n, a, lda) {
					t.Fatalf("n=%d %c: pureLAPACK.Dpotrf finds the matrix not positive definite", n, ul)
				}
				for name, a := range got {
					for i := range a {
						if math.Abs(a[i]-want[i]) > 1e-10*(1+math.Abs(want[i])) {
							t.Fatalf("%s: n=%d lda=%d %c: A[%d, %d] = %v, gonum's Dpotrf gives %v", name, n, lda, ul, i/lda, i%lda, a[i], want[i])
						}
					}
				}
			}
		}
	}
	a := spd(rng, 6, 6)
	a[3*6+3] = -1
	if (pureLAPACK{}).Dpotrf(blas.Upper, 6, a, 6) {
		t.Error("Dpotrf of a matrix with a negative diagonal element reported positive definite")
	}
	a = spd(rng, 6, 6)
	a[2*6+2] = math.NaN()
	if (pureLAPACK{}).Dpotrf(blas.Upper, 6, a, 6) {
		t.Error("Dpotrf of a matrix with NaN on the diagonal reported positive definite")
	}
}

// BenchmarkPureDpotrf: the factorisation of one row's normal equations in
// ALS (order 40), pureLAPACK against gonum.
func BenchmarkPureDpotrf(b *testing.B) {
	const n = 40
	a := spd(rand.New(rand.NewPCG(9, 10)), n, n)
	for _, impl := range []struct {
		name  string
		potrf func(ul blas.Uplo, n int, a []float64, lda int) bool
	}{{"pureLAPACK", pureLAPACK{}.Dpotrf}, {"gonum", gonumlapack.Implementation{}.Dpotrf}} {
		b.Run(impl.name, func(b *testing.B) {
			w := make([]float64, len(a))
			for b.Loop() {
				copy(w, a)
				impl.potrf(blas.Upper, n, w, n)
			}
		})
	}
}
