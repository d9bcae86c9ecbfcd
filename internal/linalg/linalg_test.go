package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
)

// kernels are the kernels this CPU runs: Go's always, AVX2 and FMA where
// HaveFMA says so.
func kernels(t testing.TB) []bool {
	if !HaveFMA() {
		t.Log("this CPU has no AVX2 and FMA: only the Go kernel is tested")
		return []bool{false}
	}
	return []bool{false, true}
}

// random returns n uniform values in [-1, 1).
func random(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.Float64()*2 - 1
	}
	return v
}

// TestSyrkUpperMatchesGonum: both kernels give gonum's Dsyrk on every
// element of C (the lower triangle and the padding untouched), for orders,
// ranks and strides around the unrolling by four rows and four columns.
func TestSyrkUpperMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, fma := range kernels(t) {
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 40, 41, 64, MaxOrder} {
			for _, k := range []int{1, 3, 4, 5, 8, 13, 48} {
				for _, pad := range []int{0, 3} {
					lda, ldc, alpha := n+pad, n+pad, -0.75
					a, c := random(rng, k*lda), random(rng, n*ldc)
					want := append([]float64(nil), c...)
					gonum.Implementation{}.Dsyrk(blas.Upper, blas.Trans, n, k, alpha, a, lda, 1, want, ldc)
					SyrkUpper(n, k, alpha, a, lda, c, ldc, fma)
					for i := range c {
						if math.Abs(c[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
							t.Fatalf("fma=%v n=%d k=%d lda=%d: C[%d, %d] = %v, gonum's Dsyrk gives %v", fma, n, k, lda, i/ldc, i%ldc, c[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestPotrfUpperMatchesGonum: both kernels' factorisations are gonum's
// Dpotrf's, and a matrix that is not positive definite is refused.
func TestPotrfUpperMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, fma := range kernels(t) {
		for _, n := range []int{1, 2, 3, 4, 5, 8, 13, 40, 41, 64} {
			lda := n + 2
			// G Gᵀ + 0.1 I, positive definite.
			g := random(rng, n*n)
			a := make([]float64, n*lda)
			for i := range n {
				for j := range n {
					for k := range n {
						a[i*lda+j] += g[i*n+k] * g[j*n+k]
					}
				}
				a[i*lda+i] += 0.1
			}
			want := append([]float64(nil), a...)
			if !(gonumlapack.Implementation{}).Dpotrf(blas.Upper, n, want, lda) {
				t.Fatalf("n=%d: gonum finds the test matrix not positive definite", n)
			}
			notPD := append([]float64(nil), a...)
			if !PotrfUpper(n, a, lda, fma) {
				t.Fatalf("fma=%v n=%d: PotrfUpper finds the matrix not positive definite", fma, n)
			}
			for i := range a {
				if math.Abs(a[i]-want[i]) > 1e-10*(1+math.Abs(want[i])) {
					t.Fatalf("fma=%v n=%d: A[%d, %d] = %v, gonum's Dpotrf gives %v", fma, n, i/lda, i%lda, a[i], want[i])
				}
			}
			notPD[(n-1)*lda+n-1] = -1
			if PotrfUpper(n, notPD, lda, fma) {
				t.Errorf("fma=%v n=%d: a negative last diagonal element was taken for positive definite", fma, n)
			}
		}
	}
}

// BenchmarkSyrkUpper: the update of one row's normal equations in ALS (40
// factors, 48 rated items) by each kernel and by gonum's Dsyrk.
func BenchmarkSyrkUpper(b *testing.B) {
	const n, k = 40, 48
	rng := rand.New(rand.NewPCG(5, 6))
	a, c := random(rng, k*n), random(rng, n*n)
	for _, fma := range kernels(b) {
		b.Run(fmt.Sprintf("fma=%v", fma), func(b *testing.B) {
			for b.Loop() {
				SyrkUpper(n, k, 1, a, n, c, n, fma)
			}
		})
	}
	b.Run("gonum", func(b *testing.B) {
		for b.Loop() {
			gonum.Implementation{}.Dsyrk(blas.Upper, blas.Trans, n, k, 1, a, n, 1, c, n)
		}
	})
}

// TestGemmMatchesGonum: every micro-kernel this CPU runs (gemmKernels:
// AVX-512, AVX2 and FMA) sets C = alpha·A·B + beta·C as gonum's Dgemm
// does, on every element of C with its padding, for shapes on either side
// of the kernel's tile (mr x nr) and blocking (kc, mc, nc), with and
// without padded strides, on 1 and 3 goroutines, for beta 1, 0 (C full of
// NaNs, which must not show) and another.
func TestGemmMatchesGonum(t *testing.T) {
	if len(gemmKernels()) == 0 {
		t.Skip("this CPU runs none of Gemm's kernels (AVX-512, AVX2 and FMA): NewGemmer returns nil, and Gemm is not used")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, ker := range gemmKernels() {
		g := &Gemmer{ker: ker}
		mr, nr, kc, mc, nc := ker.mr, ker.nr, ker.kc, ker.mc, ker.nc
		shapes := [][3]int{
			// Tiny shapes and the tile's edges.
			{1, 1, 1}, {mr, nr, 1}, {mr - 1, nr - 1, 2}, {mr + 1, nr + 1, 3}, {2*mr + 1, 2*nr - 1, 5}, {3, 5, 7},
			// kc's.
			{mr + 1, nr + 1, kc - 1}, {mr, nr, kc}, {mr - 1, nr + 3, kc + 1}, {2*mr + 3, 3*nr - 1, 2*kc + 7},
			// mc's.
			{mc - 1, nr + 3, 7}, {mc, 2 * nr, kc + 1}, {mc + 1, 17, 9}, {2*mc + mr + 1, 2*nr + 5, 33},
			{3*mc + 2*mr + 1, nr + 1, kc + 3},
			// nc's.
			{mr + 1, nc - 1, 3}, {mr, nc, 2}, {mr + 1, nc + 1, 5}, {3, 2*nc + nr + 1, 2}, {mr + 1, nc + 1, kc + 1},
		}
		for _, sh := range shapes {
			for _, pad := range []int{0, 3} {
				for _, threads := range []int{1, 3} {
					for _, beta := range []float64{1, 0, -0.5} {
						m, n, k := sh[0], sh[1], sh[2]
						lda, ldb, ldc := k+pad, n+2*pad, n+pad
						a, b, c := random(rng, m*lda), random(rng, k*ldb), random(rng, m*ldc)
						alpha := 1.5 - float64(pad)
						want := append([]float64(nil), c...)
						gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
						if beta == 0 {
							// C's old values do not count with beta 0: NaNs
							// in C (not in its padding) must not show.
							for i := range m {
								for j := range n {
									c[i*ldc+j] = math.NaN()
								}
							}
						}
						g.Gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
						for i := range c {
							if !(math.Abs(c[i]-want[i]) <= 1e-12*(1+math.Abs(want[i]))*float64(k)) {
								t.Fatalf("%s, %dx%dx%d, beta %v, pad %d, on %d goroutines: C[%d, %d] = %v, gonum's Dgemm gives %v", ker.name, m, n, k, beta, pad, threads, i/ldc, i%ldc, c[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmKernelChoice: NewGemmer takes the AVX-512 kernel where the CPU
// has AVX-512F, else the AVX2 and FMA one where HaveFMA, else none (nil).
func TestGemmKernelChoice(t *testing.T) {
	want := ""
	switch {
	case cpu.X86.HasAVX512F:
		want = "AVX-512"
	case HaveFMA():
		want = "AVX2"
	}
	got := ""
	if g := NewGemmer(); g != nil {
		got = g.Kernel()
	}
	if got != want {
		t.Errorf("NewGemmer's kernel is %q, want %q (\"\": no Gemmer)", got, want)
	}
}

// BenchmarkGemm: square products on 1 and 2 goroutines with each kernel
// this CPU runs, and gonum's Dgemm (which uses every core).
func BenchmarkGemm(b *testing.B) {
	for _, n := range []int{256, 1024} {
		rng := rand.New(rand.NewPCG(9, 10))
		x, y, z := random(rng, n*n), random(rng, n*n), make([]float64, n*n)
		for _, ker := range gemmKernels() {
			g := &Gemmer{ker: ker}
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("n=%d/%s/goroutines=%d", n, ker.name, threads), func(b *testing.B) {
					for b.Loop() {
						g.Gemm(n, n, n, 1, x, n, y, n, 1, z, n, threads)
					}
					b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
		b.Run(fmt.Sprintf("n=%d/gonum", n), func(b *testing.B) {
			for b.Loop() {
				gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, y, n, 1, z, n)
			}
			b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
