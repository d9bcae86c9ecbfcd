package main

// dotAxpyGo is dotAxpy in Go: the CG solver's step for one rating, a dot
// product and an update with the same row of the other factors.
func dotAxpyGo(s, d, acc []float64, a, b float64) {
	d, acc = d[:len(s)], acc[:len(s)]
	t := 0.0
	for k, v := range s {
		t += v * d[k]
	}
	w := a + b*t
	for k, v := range s {
		acc[k] += w * v
	}
}
