package trace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSmallArchive writes 2 localities x 2 lanes: on each lane a few tasks
// with GUID and Parent GUID attributes, each task entering a nested region,
// and CPU samples as metrics. It returns the anchor path and the number of
// events per location.
func writeSmallArchive(t *testing.T, dir string) (string, map[uint64]int) {
	t.Helper()
	w, err := CreateOTF2(OTF2Config{Dir: dir, Name: "APEX", Creator: "tessera trace test"})
	if err != nil {
		t.Fatal(err)
	}
	guid := w.Attribute("GUID", "Globally unique identifier", OTF2TypeUint64)
	parent := w.Attribute("Parent GUID", "Globally unique identifier of the parent task", OTF2TypeUint64)
	node := w.SystemTreeNode("localhost", "node", OTF2UndefinedU32)
	regions := []uint32{
		w.Region(OTF2RegionDef{Name: "fib_action", Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser}),
		w.Region(OTF2RegionDef{Name: "hpx_main", Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser}),
	}
	inner := w.Region(OTF2RegionDef{Name: "inner_loop", Role: OTF2RoleFunction, Paradigm: OTF2ParadigmUser})
	cpu := w.MetricMember(OTF2MetricMemberDef{Name: "CPU Utilization", Description: "CPU Utilization",
		Mode: OTF2MetricModeAbsolutePoint, ValueType: OTF2TypeDouble, Base: OTF2BaseDecimal, Unit: "%"})
	metric := w.MetricClass([]uint32{cpu}, OTF2OccurrenceAsynchronous, OTF2RecorderKindUnknown)
	counts := map[uint64]int{}
	g := uint64(1)
	for loc := uint64(0); loc < 2; loc++ {
		group := w.LocationGroup(fmt.Sprintf("locality %d", loc), node)
		for lane := uint64(0); lane < 2; lane++ {
			id := loc<<32 + lane
			ew, err := w.Location(id, fmt.Sprintf("worker-thread#%d", lane), group)
			if err != nil {
				t.Fatal(err)
			}
			ts := uint64(1000 + lane)
			for task := 0; task < 3; task++ {
				r := regions[task%2]
				must(t, ew.Enter(ts, r, U64Attr(guid, g), U64Attr(parent, g/2)))
				must(t, ew.Metric(ts, metric, DoubleMetric(float64(10*task)+0.5)))
				must(t, ew.Enter(ts+2, inner))
				must(t, ew.Leave(ts+5, inner))
				must(t, ew.Leave(ts+7, r))
				counts[id] += 5
				ts += 10
				g++
			}
		}
	}
	must(t, w.Close())
	return w.AnchorPath(), counts
}

func TestOTF2RoundTrip(t *testing.T) {
	anchor, counts := writeSmallArchive(t, t.TempDir())
	a, err := ReadOTF2(anchor)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Locations) != 4 {
		t.Fatalf("%d locations", len(a.Locations))
	}
	for id, n := range counts {
		if len(a.Events[id]) != n {
			t.Errorf("location %d: %d events, want %d", id, len(a.Events[id]), n)
		}
	}
	first := a.Events[1<<32+1][0]
	if first.Kind != OTF2Enter || first.Time != 1001 || a.Strings[a.Regions[first.Region].Name] != "fib_action" ||
		len(first.Attrs) != 2 || first.Attrs[0].Value != 10 || first.Attrs[1].Value != 5 {
		t.Errorf("first event of 4294967297: %+v", first)
	}
	if a.Clock.GlobalOffset != 1000 || a.Clock.TraceLength != 28 {
		t.Errorf("clock: %+v", a.Clock)
	}
}

// TestOTF2MultiChunk writes more events than one event chunk holds (at the
// smallest chunk size libotf2 allows) and more definitions than one
// definition chunk holds, and reads them all back.
func TestOTF2MultiChunk(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateOTF2(OTF2Config{Dir: dir, EvtChunkSize: OTF2MinChunkSize, DefChunkSize: OTF2MinChunkSize})
	if err != nil {
		t.Fatal(err)
	}
	guid := w.Attribute("GUID", "", OTF2TypeUint64)
	parent := w.Attribute("Parent GUID", "", OTF2TypeUint64)
	node := w.SystemTreeNode("host", "node", OTF2UndefinedU32)
	group := w.LocationGroup("locality 0", node)
	const nRegions = 3000 // ~100 bytes each: two definition chunks
	regions := make([]uint32, nRegions)
	for i := range regions {
		regions[i] = w.Region(OTF2RegionDef{Name: fmt.Sprintf("region_%04d_%s", i, strings.Repeat("r", 80)), Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser})
	}
	ew, err := w.Location(7, "lane 0", group)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := w.Location(8, "lane 1", group)
	if err != nil {
		t.Fatal(err)
	}
	_ = empty
	const nTasks = 12000 // ~40 bytes per task: two event chunks
	ts := uint64(1)
	for i := 0; i < nTasks; i++ {
		r := regions[i%nRegions]
		must(t, ew.Enter(ts, r, U64Attr(guid, uint64(i)+1<<40), U64Attr(parent, uint64(i))))
		ts += uint64(i % 3) // equal times share a timestamp
		must(t, ew.Leave(ts, r))
		ts++
	}
	must(t, w.Close())

	evt, _ := os.ReadFile(filepath.Join(dir, "traces", "7.evt"))
	if len(evt) <= OTF2MinChunkSize {
		t.Fatalf("event file of %d bytes: want more than one chunk", len(evt))
	}
	def, _ := os.ReadFile(filepath.Join(dir, "traces.def"))
	if len(def) <= OTF2MinChunkSize {
		t.Fatalf("definition file of %d bytes: want more than one chunk", len(def))
	}
	a, err := ReadOTF2(w.AnchorPath())
	if err != nil {
		t.Fatal(err)
	}
	evs := a.Events[7]
	if len(evs) != 2*nTasks {
		t.Fatalf("read %d events, wrote %d", len(evs), 2*nTasks)
	}
	if len(a.Regions) != nRegions || len(a.Events[8]) != 0 {
		t.Fatalf("%d regions, %d events on the empty location", len(a.Regions), len(a.Events[8]))
	}
	ts = 1
	for i := 0; i < nTasks; i++ {
		e, l := evs[2*i], evs[2*i+1]
		if e.Kind != OTF2Enter || e.Time != ts || e.Region != regions[i%nRegions] || len(e.Attrs) != 2 ||
			e.Attrs[0].Value != uint64(i)+1<<40 || e.Attrs[1].Value != uint64(i) {
			t.Fatalf("event %d: %+v", 2*i, e)
		}
		ts += uint64(i % 3)
		if l.Kind != OTF2Leave || l.Time != ts || l.Region != e.Region || l.Attrs != nil {
			t.Fatalf("event %d: %+v", 2*i+1, l)
		}
		ts++
	}
	t.Logf("event file %d bytes (%d chunks), definition file %d bytes", len(evt), (len(evt)+OTF2MinChunkSize-1)/OTF2MinChunkSize, len(def))
	t.Run("otf2-print", func(t *testing.T) {
		checkOTF2Print(t, w.AnchorPath(), map[uint64]int{7: 2 * nTasks, 8: 0})
	})
}

func TestOTF2WriterErrors(t *testing.T) {
	if _, err := CreateOTF2(OTF2Config{Dir: t.TempDir(), EvtChunkSize: 1000}); err == nil {
		t.Error("chunk size 1000 accepted")
	}
	w, err := CreateOTF2(OTF2Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ew, err := w.Location(1, "l", w.LocationGroup("g", w.SystemTreeNode("n", "", OTF2UndefinedU32)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Location(1, "again", 0); err == nil {
		t.Error("location defined twice")
	}
	must(t, ew.Enter(10, 0))
	if err := ew.Leave(9, 0); err == nil {
		t.Error("time going backwards accepted")
	}
	must(t, w.Close())
	if err := ew.Enter(20, 0); err == nil {
		t.Error("event after Close accepted")
	}
}

// TestOTF2ConcurrentLocations defines regions from many goroutines while
// each writes the events of its own location (run it with -race).
func TestOTF2ConcurrentLocations(t *testing.T) {
	w, err := CreateOTF2(OTF2Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	guid := w.Attribute("GUID", "", OTF2TypeUint64)
	group := w.LocationGroup("locality 0", w.SystemTreeNode("host", "node", OTF2UndefinedU32))
	const lanes, tasks = 4, 200
	errs := make(chan error, lanes)
	for lane := uint64(0); lane < lanes; lane++ {
		ew, err := w.Location(lane, fmt.Sprintf("lane %d", lane), group)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for i := uint64(0); i < tasks; i++ {
				r := w.Region(OTF2RegionDef{Name: fmt.Sprintf("task_%d", i%7), Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser})
				if err := ew.Enter(10*i+1, r, U64Attr(guid, lane<<32+i)); err != nil {
					errs <- err
					return
				}
				if err := ew.Leave(10*i+5, r); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range lanes {
		must(t, <-errs)
	}
	must(t, w.Close())
	a, err := ReadOTF2(w.AnchorPath())
	if err != nil {
		t.Fatal(err)
	}
	for lane := uint64(0); lane < lanes; lane++ {
		if n := len(a.Events[lane]); n != 2*tasks {
			t.Errorf("lane %d: %d events", lane, n)
		}
	}
}

func TestOTF2RegionDedup(t *testing.T) {
	w, err := CreateOTF2(OTF2Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a := w.Region(OTF2RegionDef{Name: "a", Role: OTF2RoleTask})
	b := w.Region(OTF2RegionDef{Name: "b", Role: OTF2RoleTask})
	if w.Region(OTF2RegionDef{Name: "a", Role: OTF2RoleTask}) != a || a == b {
		t.Error("regions not deduplicated")
	}
	must(t, w.Close())
}
