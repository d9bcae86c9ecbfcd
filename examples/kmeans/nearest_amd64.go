package main

import "golang.org/x/sys/cpu"

// nearestAVX2 is nearestGo in AVX2 and FMA instructions (nearest_amd64.s)
// for len(norms) = kernelWidth; the caller checks the lengths.
//
//go:noescape
func nearestAVX2(x, ct, norms, labels, sums, counts []float64, d, k int) (changed int)

// haveAVX2 reports whether this CPU runs nearestAVX2.
func haveAVX2() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// nearest is nearestGo, in AVX2 where the CPU has it.
func nearest(x, ct, norms, labels, sums, counts []float64, d, k int) int {
	n := len(labels)
	if haveAVX2() && len(norms) == kernelWidth && len(ct) >= d*kernelWidth && len(x) >= n*d &&
		k >= 1 && k <= kernelWidth && len(sums) >= k*d && len(counts) >= k {
		return nearestAVX2(x, ct, norms, labels, sums, counts, d, k)
	}
	return nearestGo(x, ct, norms, labels, sums, counts, d, k)
}
