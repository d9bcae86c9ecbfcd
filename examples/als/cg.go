package main

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/floats"
)

// The conjugate-gradient solver (Takács, Pilászy and Tikk, "Applications
// of the conjugate gradient method for implicit feedback collaborative
// filtering", RecSys 2011). A row's matrix
//
//	A = OᵀO + reg I + Σ_j alpha r_j o_j o_jᵀ
//
// is never formed: A p is (OᵀO + reg I) p, an f x f product shared by every
// row, plus Σ_j alpha r_j (o_j·p) o_j over the row's n ratings, so a step
// costs O(f² + n f) where forming and factorising A costs O(n f² + f³).
// A few steps from the row's factors of the previous iteration (which
// change little from one iteration to the next) come close to the exact
// solution; each step lowers the row's part of the loss, so the loss still
// falls every iteration.
//
// The vector operations of length f use gonum's pure-Go kernels, not the
// blas64 engine: under the openblas build each of those calls would cross
// into C for a few dozen multiplications.

// fullGram returns OᵀO + reg I with both triangles filled, from the
// upper triangle oto.
func fullGram(oto []float64, f int, reg float64) []float64 {
	a := make([]float64, f*f)
	for i := range f {
		for j := i; j < f; j++ {
			a[i*f+j], a[j*f+i] = oto[i*f+j], oto[i*f+j]
		}
		a[i*f+i] += reg
	}
	return a
}

// gatherLimit bounds the copy of a row's rated rows of O (float64s).
const gatherLimit = 1 << 20

// cgBlock solves rows [r0, r1) of s into out with p.cgSteps conjugate-
// gradient steps each, starting from the rows of start (this block's rows
// of the previous factors, local row r at r*f; nil: from zero). a is
// OᵀO + reg I (fullGram). Each rating costs one dotAxpy per pass: its row
// of O is read once and used twice while in cache.
func cgBlock(s *sparseRows, o, a, start []float64, p params, r0, r1 int, out []float64) {
	f := p.factors
	var impl gonum.Implementation
	res := make([]float64, f) // residual b - A x
	dir := make([]float64, f) // search direction
	ad := make([]float64, f)  // A dir
	var gathered []float64
	for r := r0; r < r1; r++ {
		cols, vals := s.row(r)
		x := out[r*f : (r+1)*f]
		if len(cols) == 0 {
			continue // zero factors: the exact solution of A x = 0
		}
		if start != nil {
			copy(x, start[r*f:(r+1)*f])
		}
		// The row's rated rows of O, copied together: one pass of random
		// reads, then four of sequential ones. (A row longer than
		// gatherLimit reads O where it is.)
		rowsOf, stride := o, cols
		if n := len(cols) * f; n <= gatherLimit {
			if cap(gathered) < n {
				gathered = make([]float64, n)
			}
			gathered = gathered[:n]
			for j, c := range cols {
				copy(gathered[j*f:(j+1)*f], o[int(c)*f:(int(c)+1)*f])
			}
			rowsOf, stride = gathered, nil
		}
		oj := func(j int) []float64 {
			if stride == nil {
				return rowsOf[j*f : (j+1)*f]
			}
			c := int(stride[j])
			return rowsOf[c*f : (c+1)*f]
		}
		// res = b - A x = Σ_j (1 + c_j - c_j o_j·x) o_j - (OᵀO + reg I) x,
		// with c_j = alpha r_j.
		impl.Dgemv(blas.NoTrans, f, f, -1, a, f, x, 1, 0, res, 1)
		for j := range cols {
			conf := p.alpha * float64(vals[j])
			dotAxpy(oj(j), x, res, 1+conf, -conf)
		}
		copy(dir, res)
		rr := floats.Dot(res, res)
		for range p.cgSteps {
			if rr < 1e-20 {
				break
			}
			// ad = A dir = (OᵀO + reg I) dir + Σ_j c_j (o_j·dir) o_j.
			impl.Dgemv(blas.NoTrans, f, f, 1, a, f, dir, 1, 0, ad, 1)
			for j := range cols {
				dotAxpy(oj(j), dir, ad, 0, p.alpha*float64(vals[j]))
			}
			step := rr / floats.Dot(dir, ad)
			floats.AddScaled(x, step, dir)
			floats.AddScaled(res, -step, ad)
			next := floats.Dot(res, res)
			// dir = res + (next/rr) dir
			floats.Scale(next/rr, dir)
			floats.Add(dir, res)
			rr = next
		}
	}
}
