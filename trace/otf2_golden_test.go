package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The golden archives in testdata/otf2 were written by libotf2 3.0.2; the
// .otf2-print.txt beside each is what `otf2-print ARCHIVE` prints for it.

func goldenAnchor(name string) string {
	return filepath.Join("testdata", "otf2", name, "traces.otf2")
}

// TestOTF2GoldenRead reads each golden archive and prints its events in
// otf2-print's format. The whole text is compared, header included: no line
// is skipped.
func TestOTF2GoldenRead(t *testing.T) {
	for _, name := range []string{"tiny", "two-localities"} {
		t.Run(name, func(t *testing.T) {
			a, err := ReadOTF2(goldenAnchor(name))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Skipped) != 0 {
				t.Errorf("skipped records: %v", a.Skipped)
			}
			var got bytes.Buffer
			if err := a.PrintEvents(&got); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "otf2", name+".otf2-print.txt"))
			if err != nil {
				t.Fatal(err)
			}
			gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
			for i := 0; i < max(len(gl), len(wl)); i++ {
				var g, w string
				if i < len(gl) {
					g = gl[i]
				}
				if i < len(wl) {
					w = wl[i]
				}
				if g != w {
					t.Errorf("line %d:\n got %q\nwant %q", i+1, g, w)
				}
			}
			for _, l := range a.Locations {
				if uint64(len(a.Events[l.ID])) != l.NumberOfEvents {
					t.Errorf("location %d: %d events, definition says %d", l.ID, len(a.Events[l.ID]), l.NumberOfEvents)
				}
			}
		})
	}
}

// compareArchives compares every file of two archives byte for byte.
func compareArchives(t *testing.T, gotDir, wantDir string) {
	t.Helper()
	var wantFiles []string
	err := filepath.WalkDir(wantDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(wantDir, p)
			wantFiles = append(wantFiles, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var gotFiles []string
	_ = filepath.WalkDir(gotDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(gotDir, p)
			gotFiles = append(gotFiles, rel)
		}
		return err
	})
	if strings.Join(gotFiles, " ") != strings.Join(wantFiles, " ") {
		t.Errorf("files: got %v, want %v", gotFiles, wantFiles)
	}
	for _, f := range wantFiles {
		want, _ := os.ReadFile(filepath.Join(wantDir, f))
		got, err := os.ReadFile(filepath.Join(gotDir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: differs from offset %d (got %d bytes, want %d)\n got % x\nwant % x", f, i, len(got), len(want),
				got[max(0, i-8):min(len(got), i+16)], want[max(0, i-8):min(len(want), i+16)])
		}
	}
}

// goldenTraceID is the trace id of a golden anchor file: the one field a
// writer may choose freely (libotf2 picks a random one).
func goldenTraceID(t *testing.T, name string) uint64 {
	a, err := ReadOTF2(goldenAnchor(name))
	if err != nil {
		t.Fatal(err)
	}
	return a.Anchor.TraceID
}

func TestOTF2GoldenWriteTiny(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateOTF2(OTF2Config{Dir: dir, TraceID: goldenTraceID(t, "tiny"), RealtimeTimestamp: 0x18ea4078d475ef00})
	if err != nil {
		t.Fatal(err)
	}
	w.String("")
	guid := w.Attribute("GUID", "task guid", OTF2TypeUint64)
	parent := w.Attribute("Parent GUID", "parent task guid", OTF2TypeUint64)
	node := w.SystemTreeNode("node", "", OTF2UndefinedU32)
	group := w.LocationGroup("locality 0", node)
	loc, err := w.Location(0, "worker-thread 0", group)
	if err != nil {
		t.Fatal(err)
	}
	region := w.Region(OTF2RegionDef{Name: "task_a", Role: OTF2RoleFunction, Paradigm: OTF2ParadigmNone})
	member := w.MetricMember(OTF2MetricMemberDef{Name: "cpu_util", Mode: OTF2MetricModeAbsolutePoint,
		ValueType: OTF2TypeDouble, Base: OTF2BaseDecimal, Unit: "%"})
	metric := w.MetricClass([]uint32{member}, OTF2OccurrenceAsynchronous, OTF2RecorderKindUnknown)
	must(t, loc.Enter(1000, region, U64Attr(guid, 42), U64Attr(parent, 7)))
	must(t, loc.Metric(1500, metric, DoubleMetric(55)))
	must(t, loc.Leave(2000, region))
	must(t, w.Close())
	compareArchives(t, dir, filepath.Join("testdata", "otf2", "tiny"))
}

// TestOTF2GoldenWriteTwoLocalities writes the definitions of the
// two-localities archive by hand and replays the events read back from it.
func TestOTF2GoldenWriteTwoLocalities(t *testing.T) {
	golden, err := ReadOTF2(goldenAnchor("two-localities"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := CreateOTF2(OTF2Config{Dir: dir, TraceID: golden.Anchor.TraceID, EvtChunkSize: OTF2MinChunkSize, Creator: "go-otf2 prototype"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("y", 300)
	for _, s := range []string{"", "GUID", "Globally unique identifier", "Parent GUID",
		"Globally unique identifier of the parent task", "myhost", "node", "hpx_main", "fib_action", long,
		"CPU Utilization", "count", "locality 0", "locality 1", "worker-thread#0", "worker-thread#1"} {
		w.String(s)
	}
	w.Attribute("GUID", "Globally unique identifier", OTF2TypeUint64)
	w.Attribute("Parent GUID", "Globally unique identifier of the parent task", OTF2TypeUint64)
	node := w.SystemTreeNode("myhost", "node", OTF2UndefinedU32)
	g0, g1 := w.LocationGroup("locality 0", node), w.LocationGroup("locality 1", node)
	locs := map[uint64]*OTF2EventWriter{}
	for _, l := range []struct {
		id    uint64
		group uint32
	}{{0, g0}, {1, g0}, {1 << 32, g1}, {1<<32 + 1, g1}} {
		ew, err := w.Location(l.id, "worker-thread#"+string(rune('0'+l.id&1)), l.group)
		if err != nil {
			t.Fatal(err)
		}
		locs[l.id] = ew
	}
	for _, name := range []string{"hpx_main", "fib_action", long} {
		w.Region(OTF2RegionDef{Name: name, Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser})
	}
	m := w.MetricMember(OTF2MetricMemberDef{Name: "CPU Utilization", Description: "CPU Utilization", Mode: OTF2MetricModeAbsolutePoint,
		ValueType: OTF2TypeDouble, Base: OTF2BaseDecimal, Unit: "count"})
	w.MetricClass([]uint32{m}, OTF2OccurrenceAsynchronous, OTF2RecorderKindUnknown)
	for id, ew := range locs {
		for _, ev := range golden.Events[id] {
			switch ev.Kind {
			case OTF2Enter:
				must(t, ew.Enter(ev.Time, ev.Region, ev.Attrs...))
			case OTF2Leave:
				must(t, ew.Leave(ev.Time, ev.Region, ev.Attrs...))
			case OTF2Metric:
				must(t, ew.Metric(ev.Time, ev.Metric, ev.Values...))
			}
		}
	}
	must(t, w.Close())
	compareArchives(t, dir, filepath.Join("testdata", "otf2", "two-localities"))
}

// TestOTF2TraceIDOnly checks that a writer left to pick its trace id
// differs from the golden anchor in those 8 bytes only.
func TestOTF2TraceIDOnly(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateOTF2(OTF2Config{Dir: dir, RealtimeTimestamp: 0x18ea4078d475ef00})
	if err != nil {
		t.Fatal(err)
	}
	w.String("")
	must(t, w.Close())
	got, _ := os.ReadFile(w.AnchorPath())
	want, _ := os.ReadFile(goldenAnchor("tiny"))
	if len(got) != len(want) {
		t.Fatalf("anchor: %d bytes, want %d", len(got), len(want))
	}
	const idOff = 0x35 // after the three empty strings and the property count
	for i := range got {
		if i >= idOff && i < idOff+8 {
			continue
		}
		// Location and definition counts differ: this archive is empty.
		if i >= 0x1e && i < 0x2e {
			continue
		}
		if got[i] != want[i] {
			t.Errorf("anchor byte %#x: got %#02x want %#02x", i, got[i], want[i])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
