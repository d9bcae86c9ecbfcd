package primitives

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tessera-amt/tessera/internal/linalg"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
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

// TestSmallDsyrkMatchesGonum: pureBLAS's Dsyrk gives gonum's result on
// every element of C (the other triangle and the padding untouched) for
// orders, ranks, strides and scalars around the kernel's unrolling.
func TestSmallDsyrkMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 40, 41, 64} {
		for _, k := range []int{0, 1, 3, 4, 5, 8, 13, 48} {
			for _, pad := range []int{0, 3} {
				for _, scal := range [][2]float64{{1, 1}, {0.5, 0}, {-2, 0.25}, {0, 3}} {
					sc := newSyrkCase(rng, blas.Upper, blas.Trans, n, k, pad, pad, scal[0], scal[1])
					sc.check(t, "pureBLAS.Dsyrk", func(c []float64) {
						newPureBLAS(gonum.Implementation{}).Dsyrk(sc.ul, sc.t, sc.n, sc.k, sc.alpha, sc.a, sc.lda, sc.beta, c, sc.ldc)
					})
				}
			}
		}
	}
}

// TestSmallDsyrkOtherCallsGoToGonum: with gonum's BLAS beneath, the lower triangle, A·Aᵀ and orders
// above linalg.MaxOrder are gonum's, and arguments gonum refuses get gonum's
// panic.
func TestSmallDsyrkOtherCallsGoToGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sc := range []syrkCase{
		newSyrkCase(rng, blas.Lower, blas.Trans, 40, 9, 0, 0, 1, 1),
		newSyrkCase(rng, blas.Upper, blas.NoTrans, 40, 9, 2, 0, 1, 0.5),
		newSyrkCase(rng, blas.Upper, blas.Trans, linalg.MaxOrder+1, 5, 0, 0, 1, 1),
	} {
		sc.check(t, "pureBLAS.Dsyrk", func(c []float64) {
			newPureBLAS(gonum.Implementation{}).Dsyrk(sc.ul, sc.t, sc.n, sc.k, sc.alpha, sc.a, sc.lda, sc.beta, c, sc.ldc)
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Dsyrk with lda < n did not panic")
		}
	}()
	newPureBLAS(gonum.Implementation{}).Dsyrk(blas.Upper, blas.Trans, 4, 2, 1, make([]float64, 8), 3, 1, make([]float64, 16), 4)
}

// BenchmarkSyrkUpper: the update of one row's normal equations in ALS
// (40 factors, 48 rated items): pureBLAS and this build's
// BLAS (gonum's, or OpenBLAS with -tags openblas).
func BenchmarkSyrkUpper(b *testing.B) {
	const n, k = 40, 48
	rng := rand.New(rand.NewPCG(5, 6))
	sc := newSyrkCase(rng, blas.Upper, blas.Trans, n, k, 0, 0, 1, 1)
	small := newPureBLAS(baseBLAS())
	for _, impl := range []struct {
		name string
		syrk func(c []float64)
	}{
		{"pureBLAS", func(c []float64) { small.Dsyrk(blas.Upper, blas.Trans, n, k, 1, sc.a, n, 1, c, n) }},
		{"build", func(c []float64) { baseBLAS().Dsyrk(blas.Upper, blas.Trans, n, k, 1, sc.a, n, 1, c, n) }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			c := append([]float64(nil), sc.c...)
			for b.Loop() {
				impl.syrk(c)
			}
		})
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

// TestSmallDpotrfMatchesGonum: pureLAPACK's Dpotrf gives gonum's factor of
// the upper triangle (and leaves the lower triangle and the padding
// alone), refuses a matrix that is not positive definite, and hands the
// lower triangle to gonum.
func TestSmallDpotrfMatchesGonum(t *testing.T) {
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
				if !(smallLAPACK{gonumlapack.Implementation{}}).Dpotrf(ul, n, a, lda) {
					t.Fatalf("n=%d %c: smallLAPACK.Dpotrf finds the matrix not positive definite", n, ul)
				}
				for i := range a {
					if math.Abs(a[i]-want[i]) > 1e-10*(1+math.Abs(want[i])) {
						t.Fatalf("n=%d lda=%d %c: A[%d, %d] = %v, gonum's Dpotrf gives %v", n, lda, ul, i/lda, i%lda, a[i], want[i])
					}
				}
			}
		}
	}
	a := spd(rng, 6, 6)
	a[3*6+3] = -1
	if (smallLAPACK{gonumlapack.Implementation{}}).Dpotrf(blas.Upper, 6, a, 6) {
		t.Error("Dpotrf of a matrix with a negative diagonal element reported positive definite")
	}
	a = spd(rng, 6, 6)
	a[2*6+2] = math.NaN()
	if (smallLAPACK{gonumlapack.Implementation{}}).Dpotrf(blas.Upper, 6, a, 6) {
		t.Error("Dpotrf of a matrix with NaN on the diagonal reported positive definite")
	}
}

// BenchmarkSmallDpotrf: the factorisation of one row's normal equations in
// ALS (order 40), smallLAPACK against this build's LAPACK (gonum's, or
// LAPACKE's with -tags openblas).
func BenchmarkSmallDpotrf(b *testing.B) {
	const n = 40
	a := spd(rand.New(rand.NewPCG(9, 10)), n, n)
	for _, impl := range []struct {
		name  string
		potrf func(ul blas.Uplo, n int, a []float64, lda int) bool
	}{{"smallLAPACK", smallLAPACK{baseLAPACK()}.Dpotrf}, {"build", baseLAPACK().Dpotrf}} {
		b.Run(impl.name, func(b *testing.B) {
			w := make([]float64, len(a))
			for b.Loop() {
				copy(w, a)
				impl.potrf(blas.Upper, n, w, n)
			}
		})
	}
}

// TestSmallDgemmMatchesGonum: pureBLAS's Dgemm gives gonum's result,
// through linalg.Gemm (A not transposed, B transposed or not; A transposed
// and B not, with Aᵀ no larger than B or small) and through gonum (the
// others and the tiny products), for betas that keep, scale and
// overwrite C and an alpha of 0.
func TestSmallDgemmMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, cs := range []struct {
		tA, tB      blas.Transpose
		m, n, k     int
		alpha, beta float64
	}{
		{blas.NoTrans, blas.NoTrans, 37, 29, 70, 1.5, 1},
		{blas.NoTrans, blas.NoTrans, 256, 100, 30, 1, 0},
		{blas.NoTrans, blas.NoTrans, 70, 70, 70, -1, 0.5},
		{blas.NoTrans, blas.NoTrans, 20, 20, 20, 0, 2},
		{blas.NoTrans, blas.NoTrans, 3, 3, 3, 1, 1},
		{blas.Trans, blas.NoTrans, 20, 30, 40, 1, 1},
		{blas.Trans, blas.NoTrans, 30, 200, 700, 1, 0},
		{blas.Trans, blas.NoTrans, 90, 10, 50, -1, 0.5},
		{blas.Trans, blas.NoTrans, 600, 5, 500, 1, 1},
		{blas.Trans, blas.Trans, 20, 30, 40, 1, 1},
		{blas.NoTrans, blas.Trans, 20, 30, 40, 1, 0},
		{blas.NoTrans, blas.Trans, 70, 80, 90, -1, 1},
		{blas.NoTrans, blas.Trans, 3, 3, 3, 1, 1},
	} {
		ra, ca := cs.m, cs.k
		if cs.tA == blas.Trans {
			ra, ca = cs.k, cs.m
		}
		rb, cb := cs.k, cs.n
		if cs.tB == blas.Trans {
			rb, cb = cs.n, cs.k
		}
		a, bm := make([]float64, ra*ca), make([]float64, rb*cb)
		c := make([]float64, cs.m*cs.n)
		for _, v := range [][]float64{a, bm, c} {
			for i := range v {
				v[i] = rng.Float64()*2 - 1
			}
		}
		want := append([]float64(nil), c...)
		gonum.Implementation{}.Dgemm(cs.tA, cs.tB, cs.m, cs.n, cs.k, cs.alpha, a, ca, bm, cb, cs.beta, want, cs.n)
		newPureBLAS(gonum.Implementation{}).Dgemm(cs.tA, cs.tB, cs.m, cs.n, cs.k, cs.alpha, a, ca, bm, cb, cs.beta, c, cs.n)
		for i := range c {
			if math.Abs(c[i]-want[i]) > 1e-12*float64(cs.k)*(1+math.Abs(want[i])) {
				t.Fatalf("%+v: C[%d] = %v, gonum's Dgemm gives %v", cs, i, c[i], want[i])
			}
		}
	}
}

// BenchmarkSkinnyGemm times the truncated SVD's products on one
// locality's rows (rows x 2000, sketch of 30 columns): the projection QᵀA
// and A·Z.
func BenchmarkSkinnyGemm(b *testing.B) {
	const rows, n, l = 20000, 2000, 30
	impl := newPureBLAS(gonum.Implementation{})
	a, q, z := make([]float64, rows*n), make([]float64, rows*l), make([]float64, n*l)
	for i := range a {
		a[i] = float64(i%7) - 3
	}
	for _, cs := range []struct {
		name    string
		run     func()
		m, n, k int
	}{
		{"QtA", func() { impl.Dgemm(blas.Trans, blas.NoTrans, l, n, rows, 1, q, l, a, n, 0, z, n) }, l, n, rows},
		{"AZ", func() { impl.Dgemm(blas.NoTrans, blas.NoTrans, rows, l, n, 1, a, n, z, l, 0, q, l) }, rows, l, n},
	} {
		b.Run(cs.name, func(b *testing.B) {
			for b.Loop() {
				cs.run()
			}
			b.ReportMetric(2*float64(cs.m*cs.n*cs.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
