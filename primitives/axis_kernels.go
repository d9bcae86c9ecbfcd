package primitives

import "math"

// The partial results of the reductions along an axis (axis_reduce.go).

// kernel is one reduction's partial result: width float64s per result
// element, made empty by init, grown by an element v at index i (along
// the reduced axis, or linear), merged with a later partial, and turned
// into the result's element.
type kernel interface {
	width() int
	init(s []float64)
	add(s []float64, v float64, i int)
	merge(s, o []float64)
	final(s []float64, n int) float64
}

type sumK struct{ mean bool }

func (sumK) width() int                        { return 1 }
func (sumK) init(s []float64)                  { s[0] = 0 }
func (sumK) add(s []float64, v float64, _ int) { s[0] += v }
func (sumK) merge(s, o []float64)              { s[0] += o[0] }
func (k sumK) final(s []float64, n int) float64 {
	if k.mean {
		return s[0] / float64(n)
	}
	return s[0]
}

type prodK struct{}

func (prodK) width() int                        { return 1 }
func (prodK) init(s []float64)                  { s[0] = 1 }
func (prodK) add(s []float64, v float64, _ int) { s[0] *= v }
func (prodK) merge(s, o []float64)              { s[0] *= o[0] }
func (prodK) final(s []float64, _ int) float64  { return s[0] }

// varK holds (count, mean, M2).
type varK struct{ std bool }

func (varK) width() int { return 3 }
func (varK) init(s []float64) {
	s[0], s[1], s[2] = 0, 0, 0
}
func (varK) add(s []float64, v float64, _ int) {
	s[0]++
	d := v - s[1]
	s[1] += d / s[0]
	s[2] += d * (v - s[1])
}
func (varK) merge(s, o []float64) {
	switch {
	case o[0] == 0:
		return
	case s[0] == 0:
		copy(s[:3], o[:3])
		return
	}
	n := s[0] + o[0]
	d := o[1] - s[1]
	s[1] += d * o[0] / n
	s[2] += o[2] + d*d*s[0]*o[0]/n
	s[0] = n
}
func (k varK) final(s []float64, _ int) float64 {
	v := s[2] / s[0]
	if k.std {
		return math.Sqrt(v)
	}
	return v
}

// extK is min (max false) or max; NaN wins.
type extK struct{ max bool }

func (extK) width() int { return 1 }
func (k extK) init(s []float64) {
	s[0] = math.Inf(1)
	if k.max {
		s[0] = math.Inf(-1)
	}
}
func (k extK) add(s []float64, v float64, _ int) {
	switch {
	case s[0] != s[0]:
	case v != v, k.max && v > s[0], !k.max && v < s[0]:
		s[0] = v
	}
}
func (k extK) merge(s, o []float64)           { k.add(s, o[0], 0) }
func (extK) final(s []float64, _ int) float64 { return s[0] }

// argK holds (value, index); index -1 is empty.
type argK struct{ max bool }

func (argK) width() int { return 2 }
func (argK) init(s []float64) {
	s[0], s[1] = 0, -1
}
func (k argK) add(s []float64, v float64, i int) {
	if k.better(v, float64(i), s[0], s[1]) {
		s[0], s[1] = v, float64(i)
	}
}
func (k argK) merge(s, o []float64) {
	if o[1] >= 0 && k.better(o[0], o[1], s[0], s[1]) {
		s[0], s[1] = o[0], o[1]
	}
}

// better reports whether (v, i) beats (w, j): anything beats empty, NaN
// beats numbers, then the larger (smaller) value, then the smaller index.
func (k argK) better(v, i, w, j float64) bool {
	vn, wn := v != v, w != w
	switch {
	case j < 0:
		return true
	case vn && wn, !vn && !wn && v == w:
		return i < j
	case vn != wn:
		return vn
	case k.max:
		return v > w
	}
	return v < w
}
func (argK) final(s []float64, _ int) float64 { return s[1] }

// boolK is any (all false) or all: whether some (every) element is not 0.
type boolK struct{ all bool }

func (boolK) width() int { return 1 }
func (k boolK) init(s []float64) {
	s[0] = boolf(k.all)
}
func (k boolK) add(s []float64, v float64, _ int) {
	if k.all {
		s[0] = math.Min(s[0], boolf(v != 0))
	} else {
		s[0] = math.Max(s[0], boolf(v != 0))
	}
}
func (k boolK) merge(s, o []float64)           { k.add(s, o[0], 0) }
func (boolK) final(s []float64, _ int) float64 { return s[0] }

// kernelOf returns the reduction's kernel.
func kernelOf(r Reduction) kernel {
	switch r {
	case SumOf:
		return sumK{}
	case MeanOf:
		return sumK{mean: true}
	case ProdOf:
		return prodK{}
	case VarOf:
		return varK{}
	case StdOf:
		return varK{std: true}
	case MinOf:
		return extK{}
	case MaxOf:
		return extK{max: true}
	case ArgMinOf:
		return argK{}
	case ArgMaxOf:
		return argK{max: true}
	case AnyOf:
		return boolK{}
	}
	return boolK{all: true}
}
