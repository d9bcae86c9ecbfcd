package main

import (
	"unsafe"

	"github.com/tessera-amt/tessera/internal/hugepage"
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
// into C for a few dozen multiplications. The passes over a row's ratings
// are this package's own (pass.go).

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

// passBlock is how many ratings a pass sums in float32 before it adds
// the sum into the row's float64 vector: it bounds the rounding of the
// float32 sums whatever a row's length.
const passBlock = 64

// cgBlock solves rows [r0, r1) of s into out with p.cgSteps conjugate-
// gradient steps each, starting from the rows of start (this block's rows
// of the previous factors, local row r at r*f; nil: from zero). a32 is
// OᵀO + reg I (fullGram) and o32 the other factors, both in float32.
//
// Each row first gathers its rated rows of o32 into one contiguous block
// (random reads, prefetched ahead); the residual and every step then make
// one pass over the block (pass: a dot product and an update per rating,
// the rating's row read once and used twice while in cache), and one
// f x f product with a32 (axpyRows). The products are float32: half the
// bytes to gather and twice the numbers per instruction, each pass block's
// sum added into float64; the factors, the residual and the step lengths
// stay float64.
func cgBlock(s *sparseRows, o32, a32 []float32, start []float64, p params, r0, r1 int, out []float64) {
	f := p.factors
	res := make([]float64, f) // residual b - A x
	dir := make([]float64, f) // search direction
	ad := make([]float64, f)  // A dir
	v32 := make([]float32, f) // x, then dir, in float32
	acc := make([]float32, f) // one pass block's sum
	var g, conf, wa, wb []float32
	alpha := float32(p.alpha)
	for r := r0; r < r1; r++ {
		cols, vals := s.row(r)
		x := out[r*f : (r+1)*f]
		if len(cols) == 0 {
			continue // zero factors: the exact solution of A x = 0
		}
		if start != nil {
			copy(x, start[r*f:(r+1)*f])
		}
		n := len(cols)
		g, conf, wa, wb = grow(g, n*f), grow(conf, n), grow(wa, n), grow(wb, n)
		gatherRows(g, o32, cols, f)
		for j, v := range vals {
			c := alpha * v
			conf[j], wa[j], wb[j] = c, 1+c, -c
		}
		// res = b - A x = Σ_j (1 + c_j - c_j o_j·x) o_j - (OᵀO + reg I) x,
		// with c_j = alpha r_j.
		toFloat32(v32, x)
		gramTimes(a32, v32, acc, f, -1, res)
		sumPasses(g, v32, acc, wa, wb, f, res)
		copy(dir, res)
		rr := floats.Dot(res, res)
		clear(wa)
		for range p.cgSteps {
			if rr < 1e-20 {
				break
			}
			// ad = A dir = (OᵀO + reg I) dir + Σ_j c_j (o_j·dir) o_j.
			toFloat32(v32, dir)
			gramTimes(a32, v32, acc, f, 1, ad)
			sumPasses(g, v32, acc, wa, conf, f, ad)
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

// gramTimes sets out to sign a32 v, a32 being the symmetric f x f matrix
// OᵀO + reg I in float32: the rows of a32 weighted by v (axpyRows), in
// acc.
func gramTimes(a32, v, acc []float32, f int, sign float64, out []float64) {
	clear(acc)
	axpyRows(a32, acc, v, f)
	for k, x := range acc {
		out[k] = sign * float64(x)
	}
}

// sumPasses adds to out the pass of d over the block g (see pass), summed
// in float32 passBlock ratings at a time.
func sumPasses(g, d, acc, wa, wb []float32, f int, out []float64) {
	for j0 := 0; j0 < len(wa); j0 += passBlock {
		j1 := min(j0+passBlock, len(wa))
		clear(acc)
		pass(g[j0*f:j1*f], d, acc, wa[j0:j1], wb[j0:j1], f)
		for k, v := range acc {
			out[k] += float64(v)
		}
	}
}

// grow returns s with length n, reallocated only when its capacity is
// short.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// toFloat32 sets dst to src rounded to float32.
func toFloat32(dst []float32, src []float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float32(v)
	}
}

// mirror32 returns src in float32, in *buf's memory when it is large
// enough (the buffer is kept from one half-step to the next). New memory
// comes from hugepage, advised onto huge pages when large: the gathers
// read it at random, and with 4 KiB pages nearly every row read would
// miss the TLB.
func mirror32(buf *[]float32, src []float64) []float32 {
	if cap(*buf) < len(src) {
		wide := hugepage.Float64s((len(src) + 1) / 2)
		*buf = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(wide))), 2*len(wide))
	}
	*buf = (*buf)[:len(src)]
	toFloat32(*buf, src)
	return *buf
}
