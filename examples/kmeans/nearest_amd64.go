package main

import "golang.org/x/sys/cpu"

// nearestAVX2 is nearestGo in AVX2 and FMA instructions (nearest_amd64.s)
// for len(norms) = kernelWidth and 1 <= k <= kernelWidth; the caller
// gives slices of the lengths nearestGo reads.
//
//go:noescape
func nearestAVX2(x, ct, norms, labels, sums, counts []float64, d, k int) (changed int)

// haveAVX2 reports whether this CPU runs nearestAVX2.
func haveAVX2() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }
