package primitives

import (
	goruntime "runtime"
	"sync"
)

// The loops of the element-wise arithmetic (Add, Sub, Mul, Div, their
// broadcasting forms) written out per operation, so the compiler sees
// the operator rather than a call per element, and the split of a
// tile's work over this process's cores.

// arith is an element-wise operation with a written-out loop; noArith
// means the primitive's function is called per element.
type arith uint8

const (
	noArith arith = iota
	addArith
	subArith
	mulArith
	divArith
)

// vv sets dst[i] = x[i] op y[i].
func (k arith) vv(dst, x, y []float64) {
	x, y = x[:len(dst)], y[:len(dst)]
	switch k {
	case addArith:
		for i := range dst {
			dst[i] = x[i] + y[i]
		}
	case subArith:
		for i := range dst {
			dst[i] = x[i] - y[i]
		}
	case mulArith:
		for i := range dst {
			dst[i] = x[i] * y[i]
		}
	case divArith:
		for i := range dst {
			dst[i] = x[i] / y[i]
		}
	}
}

// vs sets dst[i] = x[i] op y.
func (k arith) vs(dst, x []float64, y float64) {
	x = x[:len(dst)]
	switch k {
	case addArith:
		for i := range dst {
			dst[i] = x[i] + y
		}
	case subArith:
		for i := range dst {
			dst[i] = x[i] - y
		}
	case mulArith:
		for i := range dst {
			dst[i] = x[i] * y
		}
	case divArith:
		for i := range dst {
			dst[i] = x[i] / y
		}
	}
}

// sv sets dst[i] = x op y[i].
func (k arith) sv(dst []float64, x float64, y []float64) {
	y = y[:len(dst)]
	switch k {
	case addArith:
		for i := range dst {
			dst[i] = x + y[i]
		}
	case subArith:
		for i := range dst {
			dst[i] = x - y[i]
		}
	case mulArith:
		for i := range dst {
			dst[i] = x * y[i]
		}
	case divArith:
		for i := range dst {
			dst[i] = x / y[i]
		}
	}
}

// parallelGrain is the least work, in elements, worth a goroutine of its
// own.
const parallelGrain = 1 << 16

// split runs fn over [0, n) cut into at most GOMAXPROCS ranges of at
// least grain indices each, concurrently, and returns when all are done.
// fn must not wait on futures (the ranges run on plain goroutines).
func split(n, grain int, fn func(lo, hi int)) {
	parts := min(maxProcs(), max(1, n/max(1, grain)))
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := n*p/parts, n*(p+1)/parts
		if p == parts-1 {
			fn(lo, hi) // the caller's goroutine takes the last range
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// maxProcs is how many goroutines this process runs at once.
func maxProcs() int { return goruntime.GOMAXPROCS(0) }
