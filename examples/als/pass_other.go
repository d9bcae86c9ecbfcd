//go:build !amd64

package main

// pass sets, for each row j of the n x f block g (n = len(wa)),
// t = g_j·d and adds (wa[j] + wb[j] t) g_j to acc (see passGo).
func pass(g, d, acc, wa, wb []float32, f int) { passGo(g, d, acc, wa, wb, f) }

// prefetchRow32 does nothing here.
func prefetchRow32([]float32, int) {}

// prefetchRow64 does nothing here.
func prefetchRow64([]float64, int) {}

// axpyRows adds Σ_j w[j] g_j to acc over the rows of the n x f block g
// (n = len(w)); for a symmetric g that is g w.
func axpyRows(g, acc, w []float32, f int) { axpyRowsGo(g, acc, w, f) }
