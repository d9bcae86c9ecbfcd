package agas

import (
	"testing"

	"github.com/tessera-amt/tessera/runtime"
)

// Calling New twice on one registry shares one service instead of
// registering AGAS's actions twice (which panicked on every locality).
func TestNewTwiceSharesTheService(t *testing.T) {
	reg := runtime.NewRegistry()
	a, b := New(reg), New(reg)
	if a != b {
		t.Fatalf("New twice on one registry gave two services")
	}
	if New(runtime.NewRegistry()) == a {
		t.Fatalf("two registries share a service")
	}
}
