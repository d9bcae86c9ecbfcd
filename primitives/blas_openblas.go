//go:build openblas

package primitives

/*
#cgo pkg-config: openblas lapacke
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);
*/
import "C"

import (
	"os"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/netlib/blas/netlib"
	lapacknetlib "gonum.org/v1/netlib/lapack/netlib"
)

// BLAS names the BLAS and LAPACK behind the primitives' local numerics
// (gonum's blas64 and lapack64): in this build (-tags openblas) OpenBLAS
// and LAPACKE through gonum.org/v1/netlib (cgo), one OpenBLAS thread per
// locality unless OPENBLAS_NUM_THREADS says otherwise.
func BLAS() string {
	return "OpenBLAS (" + C.GoString(C.openblas_get_config()) + ") through gonum.org/v1/netlib"
}

// useBLAS makes gonum's blas64 and lapack64 use OpenBLAS and LAPACKE, the
// latter with the primitives' Dpotrf for small upper triangles
// (smallLAPACK); Register calls it, once per program before the runtime
// starts, so it is set before any task multiplies. It also makes OpenBLAS single-threaded unless the
// environment sets OPENBLAS_NUM_THREADS: a locality already runs its tasks
// on every core (runtime.Config.Lanes), and several localities may share a
// host, so threads of OpenBLAS's own would oversubscribe the cores.
func useBLAS() {
	if _, ok := blas64.Implementation().(netlib.Implementation); ok {
		return // an earlier Register in this process set both
	}
	blas64.Use(netlib.Implementation{})
	lapack64.Use(smallLAPACK{lapacknetlib.Implementation{}})
	if os.Getenv("OPENBLAS_NUM_THREADS") == "" {
		C.openblas_set_num_threads(1)
	}
}
