//go:build !openblas

package primitives

import (
	"testing"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// TestRegisterKeepsGonum: without the openblas tag, Register leaves gonum's
// pure-Go BLAS in place and BLAS says so.
func TestRegisterKeepsGonum(t *testing.T) {
	reg := runtime.NewRegistry()
	Register(reg, agas.New(reg))
	if _, ok := blas64.Implementation().(gonum.Implementation); !ok {
		t.Fatalf("blas64 implementation after Register is %T, want gonum.Implementation", blas64.Implementation())
	}
	if b := BLAS(); b != "gonum (pure Go)" {
		t.Errorf("BLAS() = %q, want %q", b, "gonum (pure Go)")
	}
}
