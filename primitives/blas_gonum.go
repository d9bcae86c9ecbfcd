//go:build !openblas

package primitives

// BLAS names the BLAS and LAPACK behind the primitives' local numerics
// (gonum's blas64 and lapack64): in this build gonum's own pure-Go
// implementations, which use every core for a large Dgemm. A build with
// -tags openblas uses OpenBLAS instead.
func BLAS() string { return "gonum (pure Go)" }

// useBLAS sets the BLAS of the build for gonum's blas64 and lapack64;
// Register calls it. Here there is nothing to set: gonum's pure-Go
// implementations are its defaults.
func useBLAS() {}
