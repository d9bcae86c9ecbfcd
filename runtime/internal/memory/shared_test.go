package memory

import (
	"testing"

	"github.com/tessera-amt/tessera/internal/shm"
)

// lendFloats is a tile large enough to be lent (4 MiB).
const lendFloats = 1 << 19

// TestSharingNeedsAnotherLocalityOnTheMachine: a locality maps the
// probes of the localities on its machine only, and lends to none when
// none mapped its own: a lendable tile is then ordinary memory.
func TestSharingNeedsAnotherLocalityOnTheMachine(t *testing.T) {
	var s Shared
	tried := 0
	try := func(uint32, shm.Desc) error { tried++; return nil }
	probe := shm.Desc{PID: 1, FD: 3, Ino: 7, N: 1}
	if m := s.MapProbes(0, []string{"host-a", "host-b"}, []shm.Desc{probe, probe}, try); m[1] != 0 || tried != 0 {
		t.Fatalf("a probe on another machine was tried (%d) or counted (%v)", tried, m)
	}
	if m := s.MapProbes(0, []string{"", ""}, []shm.Desc{probe, probe}, try); m[1] != 0 || tried != 0 {
		t.Fatalf("a probe of an unknown machine was tried (%d) or counted (%v)", tried, m)
	}
	if m := s.MapProbes(0, []string{"host-a", "host-a"}, []shm.Desc{probe, {}}, try); m[1] != 0 || tried != 0 {
		t.Fatalf("a locality without a probe was tried (%d) or counted (%v)", tried, m)
	}
	if m := s.MapProbes(0, []string{"host-a", "host-a", "host-a"}, []shm.Desc{probe, probe, probe}, try); m[0] != 0 || m[1] != 1 || m[2] != 1 || tried != 2 {
		t.Fatalf("two probes on the machine: tried %d, mapped %v; want 2, [0 1 1]", tried, m)
	}
	s.Enable(0, []byte{1, 0})
	if s.on || s.LendsTo(1) {
		t.Fatal("lending is on though no other locality mapped the probe")
	}
	if b := s.Alloc(lendFloats, true); b != nil {
		t.Fatal("a segment was allocated with lending off")
	}
	if _, ok := s.Lend(make([]float64, lendFloats)); ok {
		t.Fatal("ordinary memory was lent")
	}
	s.Enable(0, []byte{0, 1, 0})
	if !s.on || !s.LendsTo(1) || s.LendsTo(2) || s.LendsTo(3) {
		t.Fatal("lending is not on towards exactly locality 1, which mapped the probe")
	}
}
