package main

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// passAVX2 is pass in AVX2 and FMA instructions (pass_amd64.s) for f a
// multiple of 8; the caller checks the lengths.
//
//go:noescape
func passAVX2(g, d, acc, wa, wb []float32, f int)

// axpyRowsAVX2 is axpyRows in AVX2 and FMA instructions for f a multiple
// of 8; the caller checks the lengths.
//
//go:noescape
func axpyRowsAVX2(g, acc, w []float32, f int)

// prefetchLines asks for the cache lines of the n bytes at p (PREFETCHT0).
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)

// haveFMA reports whether this CPU runs passAVX2.
func haveFMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// pass sets, for each row j of the n x f block g (n = len(wa)),
// t = g_j·d and adds (wa[j] + wb[j] t) g_j to acc (see passGo).
func pass(g, d, acc, wa, wb []float32, f int) {
	if haveFMA() && f%8 == 0 && len(g) >= len(wa)*f && len(d) >= f && len(acc) >= f && len(wb) >= len(wa) {
		passAVX2(g, d, acc, wa, wb, f)
		return
	}
	passGo(g, d, acc, wa, wb, f)
}

// axpyRows adds Σ_j w[j] g_j to acc over the rows of the n x f block g
// (n = len(w)); for a symmetric g that is g w.
func axpyRows(g, acc, w []float32, f int) {
	if haveFMA() && f%8 == 0 && len(g) >= len(w)*f && len(acc) >= f {
		axpyRowsAVX2(g, acc, w, f)
		return
	}
	axpyRowsGo(g, acc, w, f)
}

// prefetchRow32 asks for the first f values of s.
func prefetchRow32(s []float32, f int) {
	if len(s) >= f && f > 0 {
		prefetchLines(unsafe.Pointer(&s[0]), 4*f)
	}
}

// prefetchRow64 asks for the first f values of s.
func prefetchRow64(s []float64, f int) {
	if len(s) >= f && f > 0 {
		prefetchLines(unsafe.Pointer(&s[0]), 8*f)
	}
}
