//go:build !openblas

package primitives

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// syrkCase is one Dsyrk call: shapes, strides, scalars and its inputs.
type syrkCase struct {
	ul             blas.Uplo
	t              blas.Transpose
	n, k, lda, ldc int
	alpha, beta    float64
	a, c           []float64
}

func newSyrkCase(rng *rand.Rand, ul blas.Uplo, t blas.Transpose, n, k, padA, padC int, alpha, beta float64) syrkCase {
	rowsA, colsA := k, n
	if t == blas.NoTrans {
		rowsA, colsA = n, k
	}
	sc := syrkCase{ul: ul, t: t, n: n, k: k, lda: max(colsA+padA, 1), ldc: n + padC, alpha: alpha, beta: beta}
	sc.a = make([]float64, max(rowsA*sc.lda, 1))
	sc.c = make([]float64, n*sc.ldc)
	for i := range sc.a {
		sc.a[i] = rng.Float64()*2 - 1
	}
	for i := range sc.c {
		sc.c[i] = rng.Float64()*2 - 1
	}
	return sc
}

// check runs the case through got and through gonum's Dsyrk and compares
// every element of C, the other triangle and the padding included.
func (sc syrkCase) check(t *testing.T, name string, got func(c []float64)) {
	t.Helper()
	want := append([]float64(nil), sc.c...)
	gonum.Implementation{}.Dsyrk(sc.ul, sc.t, sc.n, sc.k, sc.alpha, sc.a, sc.lda, sc.beta, want, sc.ldc)
	c := append([]float64(nil), sc.c...)
	got(c)
	for i := range c {
		if math.Abs(c[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
			t.Fatalf("%s: n=%d k=%d lda=%d ldc=%d alpha=%g beta=%g: C[%d, %d] = %v, gonum's Dsyrk gives %v",
				name, sc.n, sc.k, sc.lda, sc.ldc, sc.alpha, sc.beta, i/sc.ldc, i%sc.ldc, c[i], want[i])
		}
	}
}

func TestSyrkUpperMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kernels := []bool{false}
	if haveFMA() {
		kernels = append(kernels, true)
	} else {
		t.Log("this CPU has no AVX2 and FMA: only the Go kernel is tested")
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 40, 41, 64} {
		for _, k := range []int{0, 1, 3, 4, 5, 8, 13, 48} {
			for _, pad := range []int{0, 3} {
				for _, scal := range [][2]float64{{1, 1}, {0.5, 0}, {-2, 0.25}, {0, 3}} {
					sc := newSyrkCase(rng, blas.Upper, blas.Trans, n, k, pad, pad, scal[0], scal[1])
					sc.check(t, "pureBLAS.Dsyrk", func(c []float64) {
						pureBLAS{}.Dsyrk(sc.ul, sc.t, sc.n, sc.k, sc.alpha, sc.a, sc.lda, sc.beta, c, sc.ldc)
					})
					if scal[1] != 1 {
						continue
					}
					for _, fma := range kernels {
						sc.check(t, fmt.Sprintf("syrkUpper(fma=%v)", fma), func(c []float64) {
							syrkUpper(sc.n, sc.k, sc.alpha, sc.a, sc.lda, c, sc.ldc, fma)
						})
					}
				}
			}
		}
	}
}

// TestSyrkUpperOtherCallsGoToGonum: the lower triangle, A·Aᵀ and orders
// above maxSyrkUpper are gonum's, and arguments gonum refuses get gonum's
// panic.
func TestSyrkUpperOtherCallsGoToGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sc := range []syrkCase{
		newSyrkCase(rng, blas.Lower, blas.Trans, 40, 9, 0, 0, 1, 1),
		newSyrkCase(rng, blas.Upper, blas.NoTrans, 40, 9, 2, 0, 1, 0.5),
		newSyrkCase(rng, blas.Upper, blas.Trans, maxSyrkUpper+1, 5, 0, 0, 1, 1),
	} {
		sc.check(t, "pureBLAS.Dsyrk", func(c []float64) {
			pureBLAS{}.Dsyrk(sc.ul, sc.t, sc.n, sc.k, sc.alpha, sc.a, sc.lda, sc.beta, c, sc.ldc)
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Dsyrk with lda < n did not panic")
		}
	}()
	pureBLAS{}.Dsyrk(blas.Upper, blas.Trans, 4, 2, 1, make([]float64, 8), 3, 1, make([]float64, 16), 4)
}

// BenchmarkSyrkUpper: the update of one row's normal equations in ALS
// (40 factors, 48 rated items), pureBLAS against gonum.
func BenchmarkSyrkUpper(b *testing.B) {
	const n, k = 40, 48
	rng := rand.New(rand.NewPCG(5, 6))
	sc := newSyrkCase(rng, blas.Upper, blas.Trans, n, k, 0, 0, 1, 1)
	for _, impl := range []struct {
		name string
		syrk func(c []float64)
	}{
		{"pureBLAS", func(c []float64) { pureBLAS{}.Dsyrk(blas.Upper, blas.Trans, n, k, 1, sc.a, n, 1, c, n) }},
		{"goKernel", func(c []float64) { syrkUpper(n, k, 1, sc.a, n, c, n, false) }},
		{"gonum", func(c []float64) { gonum.Implementation{}.Dsyrk(blas.Upper, blas.Trans, n, k, 1, sc.a, n, 1, c, n) }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			c := append([]float64(nil), sc.c...)
			for b.Loop() {
				impl.syrk(c)
			}
		})
	}
}
