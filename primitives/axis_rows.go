package primitives

import (
	"sync"

	"github.com/tessera-amt/tessera/annotate"
)

// The reductions of sum, mean, var and std over whole rows: when the
// innermost axis is not reduced and every row of the block reduces into
// the same partials (x.sum(0) of a row-tiled matrix, the columns' mean
// and std), the rows are added as vectors rather than element by element
// through the kernel, the block's rows are cut into rowSegments
// consecutive segments reduced concurrently and merged in order (so the
// result does not depend on the cores), and var runs two passes over
// pieces of rows small enough to stay in the cache (the piece's mean,
// then its squared deviations from it), merged by Chan's formula: as
// accurate as numpy's two passes over the whole array, in one pass over
// memory.

// rowSegments is how many segments the rows of a block are cut into.
const rowSegments = 16

// pieceElems bounds a var piece: rows of this many elements at most (at
// least one row).
const pieceElems = 1 << 15

// rowsPartials is partials for sumK and varK over whole rows, or false
// when the plan or the kernel does not allow it.
func rowsPartials(k kernel, x *Array, p axisPlan, b, o annotate.Block) ([]float64, bool) {
	var isVar bool
	switch k.(type) {
	case sumK:
	case varK:
		isVar = true
	default:
		return nil, false
	}
	if p.all || p.red3[2] {
		return nil, false
	}
	_, h3 := pad3(x.ann.Tiling.Shape, x.ann.Local().Halo)
	_, b3 := pad3(x.ann.Tiling.Shape, b)
	_, o3 := pad3(p.keep, o)
	for d := range 2 {
		if !p.red3[d] && b3[d].Len() != 1 {
			return nil, false // rows reduce into different partials
		}
	}
	w := k.width()
	st := make([]float64, o.Size()*w)
	for i := 0; i < len(st); i += w {
		k.init(st[i : i+w])
	}
	if b.Empty() {
		return st, true
	}
	hst := [3]int{h3[1].Len() * h3[2].Len(), h3[2].Len(), 1}
	ost := [3]int{o3[1].Len() * o3[2].Len(), o3[2].Len(), 1}
	so := 0 // the partials of the row's first element
	for d := range 2 {
		if !p.red3[d] {
			so += (b3[d].Start - o3[d].Start) * ost[d]
		}
	}
	so = (so + b3[2].Start - o3[2].Start) * w
	nr, n1, l := b3[0].Len()*b3[1].Len(), b3[1].Len(), b3[2].Len()
	row := func(q int) []float64 {
		i, j := b3[0].Start+q/n1, b3[1].Start+q%n1
		off := (i-h3[0].Start)*hst[0] + (j-h3[1].Start)*hst[1] + b3[2].Start - h3[2].Start
		return x.data[off : off+l]
	}
	segs := min(rowSegments, nr)
	acc := make([][]float64, segs)
	var wg sync.WaitGroup
	next := make(chan int, segs)
	for s := range segs {
		next <- s
	}
	close(next)
	for range min(segs, maxProcs()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				lo, hi := nr*s/segs, nr*(s+1)/segs
				if isVar {
					acc[s] = varRows(row, lo, hi, l)
				} else {
					acc[s] = sumRows(row, lo, hi, l)
				}
			}
		}()
	}
	wg.Wait()
	dst := st[so : so+l*w]
	for _, a := range acc {
		if isVar {
			for c := range l {
				varK{}.merge(dst[c*3:c*3+3], a[c*3:c*3+3])
			}
			continue
		}
		for c := range l {
			dst[c] += a[c]
		}
	}
	return st, true
}

// sumRows adds rows [lo, hi) (of l elements) up.
func sumRows(row func(q int) []float64, lo, hi, l int) []float64 {
	s := make([]float64, l)
	for q := lo; q < hi; q++ {
		r := row(q)[:l]
		for c := range s {
			s[c] += r[c]
		}
	}
	return s
}

// varRows returns (count, mean, M2) of every column of rows [lo, hi),
// piece by piece: each piece's mean, its squared deviations from it, and
// the piece merged into the result by Chan's formula.
func varRows(row func(q int) []float64, lo, hi, l int) []float64 {
	acc := make([]float64, 3*l)
	mean, m2 := make([]float64, l), make([]float64, l)
	step := max(1, pieceElems/max(1, l))
	for p := lo; p < hi; p += step {
		end := min(p+step, hi)
		clear(mean)
		clear(m2)
		for q := p; q < end; q++ {
			r := row(q)[:l]
			for c := range mean {
				mean[c] += r[c]
			}
		}
		n := float64(end - p)
		for c := range mean {
			mean[c] /= n
		}
		for q := p; q < end; q++ {
			r := row(q)[:l]
			for c := range m2 {
				d := r[c] - mean[c]
				m2[c] += d * d
			}
		}
		for c := range l {
			a := acc[c*3 : c*3+3]
			if a[0] == 0 {
				a[0], a[1], a[2] = n, mean[c], m2[c]
				continue
			}
			t := a[0] + n
			d := mean[c] - a[1]
			a[1] += d * n / t
			a[2] += m2[c] + d*d*a[0]*n/t
			a[0] = t
		}
	}
	return acc
}
