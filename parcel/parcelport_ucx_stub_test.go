//go:build !ucx

package parcel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/parcel"
)

// Without the tag, a UCX port says how to get one.
func TestUCXNotBuilt(t *testing.T) {
	_, err := parcel.NewUCX(parcel.UCXConfig{PortConfig: parcel.PortConfig{Locality: 3}})
	if !errors.Is(err, parcel.ErrNoUCX) || !strings.Contains(err.Error(), "rebuild with -tags ucx (needs libucx-dev: pkg-config ucx)") ||
		!strings.Contains(err.Error(), "locality 3") {
		t.Fatalf("NewUCX without the tag: %v", err)
	}
	if parcel.UCXBuiltIn || parcel.UCXVersion() != "" {
		t.Fatal("a build without the tag claims UCX")
	}
}
