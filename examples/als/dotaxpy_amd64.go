package main

import "golang.org/x/sys/cpu"

// dotAxpyAVX2 is dotAxpy in AVX2 and FMA instructions (dotaxpy_amd64.s).
// The caller checks haveFMA and that d and acc are as long as s.
//
//go:noescape
func dotAxpyAVX2(s, d, acc []float64, a, b float64)

// haveFMA reports whether this CPU runs dotAxpyAVX2.
func haveFMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// dotAxpy sets t = s·d and adds (a + b t) s to acc; len(d) and len(acc)
// are at least len(s).
func dotAxpy(s, d, acc []float64, a, b float64) {
	if haveFMA() {
		dotAxpyAVX2(s, d[:len(s)], acc[:len(s)], a, b)
		return
	}
	dotAxpyGo(s, d, acc, a, b)
}
