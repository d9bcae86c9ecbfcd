package main

// passGo is pass in Go: for each row j of the n x f row-major block g
// (n = len(wa)), t = g_j·d, then acc += (wa[j] + wb[j] t) g_j. This is one
// pass of the CG solver over a row's gathered ratings: with wa = 1 + c and
// wb = -c it sums b - (A - OᵀO - reg I) x, with wa = 0 and wb = c the
// ratings' part of A d.
func passGo(g, d, acc, wa, wb []float32, f int) {
	d, acc = d[:f], acc[:f]
	wb = wb[:len(wa)]
	for j := range wa {
		row := g[j*f : (j+1)*f]
		var t float32
		for k, v := range row {
			t += v * d[k]
		}
		w := wa[j] + wb[j]*t
		for k, v := range row {
			acc[k] += w * v
		}
	}
}

// axpyRowsGo is axpyRows in Go.
func axpyRowsGo(g, acc, w []float32, f int) {
	acc = acc[:f]
	for j, wj := range w {
		for k, v := range g[j*f : (j+1)*f] {
			acc[k] += wj * v
		}
	}
}

// gatherRows copies the rows cols of the row-major float32 matrix src
// (f columns) into dst, one after the other, asking the memory for the
// rows prefetchAhead places further on while it copies: the reads are
// random, and waiting for each in turn would cost most of the copy.
func gatherRows(dst, src []float32, cols []int32, f int) {
	for j, c := range cols {
		if k := j + prefetchAhead; k < len(cols) {
			prefetchRow32(src[int(cols[k])*f:], f)
		}
		copy(dst[j*f:(j+1)*f], src[int(c)*f:(int(c)+1)*f])
	}
}

// prefetchAhead is how many rows ahead gatherRows and the exact solver ask
// for: enough to cover a memory latency with the copying of rows between.
const prefetchAhead = 8
