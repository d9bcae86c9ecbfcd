//go:build !amd64

package main

// dotAxpy sets t = s·d and adds (a + b t) s to acc; len(d) and len(acc)
// are at least len(s).
func dotAxpy(s, d, acc []float64, a, b float64) { dotAxpyGo(s, d, acc, a, b) }
