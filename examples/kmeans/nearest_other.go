//go:build !amd64

package main

// haveAVX2 is false off amd64.
func haveAVX2() bool { return false }

// nearestAVX2 does not exist off amd64, where haveAVX2 is false; the
// kernels' test calls it only when haveAVX2 is true.
func nearestAVX2(x, ct, norms, labels, sums, counts []float64, d, k int) int {
	panic("kmeans: no AVX2 kernel off amd64")
}
