package trace

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"
)

// tev is one event of a test archive: Enter (with GUID and Parent GUID
// attributes when guid is not 0), Leave, or a Metric sample of "CPU
// Utilization".
type tev struct {
	loc          uint64
	t            uint64
	kind         OTF2EventKind
	region       string
	guid, parent uint64
	value        float64
}

func enter(loc, t uint64, region string, guid, parent uint64) tev {
	return tev{loc: loc, t: t, kind: OTF2Enter, region: region, guid: guid, parent: parent}
}
func leave(loc, t uint64, region string) tev {
	return tev{loc: loc, t: t, kind: OTF2Leave, region: region}
}
func sample(loc, t uint64, v float64) tev { return tev{loc: loc, t: t, kind: OTF2Metric, value: v} }

// writeTaskArchive writes an archive the way the tracer lays one out: a
// location group per locality (location id >> 32), a location per lane,
// task regions, "GUID" and "Parent GUID" attributes on Enter events, a CPU
// metric. Locations are defined in the order they first appear. It returns
// the anchor path.
func writeTaskArchive(t testing.TB, dir string, evs []tev) string {
	t.Helper()
	w, err := CreateOTF2(OTF2Config{Dir: dir, Creator: "tessera trace test"})
	if err != nil {
		t.Fatal(err)
	}
	guid := w.Attribute("GUID", "Globally unique identifier", OTF2TypeUint64)
	parent := w.Attribute("Parent GUID", "Globally unique identifier of the parent task", OTF2TypeUint64)
	node := w.SystemTreeNode("localhost", "node", OTF2UndefinedU32)
	cpu := w.MetricMember(OTF2MetricMemberDef{Name: "CPU Utilization", Description: "CPU Utilization",
		Mode: OTF2MetricModeAbsolutePoint, ValueType: OTF2TypeDouble, Base: OTF2BaseDecimal, Unit: "%"})
	metric := w.MetricClass([]uint32{cpu}, OTF2OccurrenceAsynchronous, OTF2RecorderKindUnknown)
	groups := map[uint32]uint32{}
	lanes := map[uint64]*OTF2EventWriter{}
	for _, e := range evs {
		ew := lanes[e.loc]
		if ew == nil {
			loc := uint32(e.loc >> 32)
			g, ok := groups[loc]
			if !ok {
				g = w.LocationGroup(fmt.Sprintf("locality %d", loc), node)
				groups[loc] = g
			}
			if ew, err = w.Location(e.loc, fmt.Sprintf("lane %d", uint32(e.loc)), g); err != nil {
				t.Fatal(err)
			}
			lanes[e.loc] = ew
		}
		switch e.kind {
		case OTF2Enter:
			r := w.Region(OTF2RegionDef{Name: e.region, Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser})
			var attrs []OTF2Attr
			if e.guid != 0 {
				attrs = []OTF2Attr{U64Attr(guid, e.guid), U64Attr(parent, e.parent)}
			}
			err = ew.Enter(e.t, r, attrs...)
		case OTF2Leave:
			err = ew.Leave(e.t, w.Region(OTF2RegionDef{Name: e.region, Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser}))
		case OTF2Metric:
			err = ew.Metric(e.t, metric, DoubleMetric(e.value))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.AnchorPath()
}

// readTaskArchive writes evs and reads the archive back.
func readTaskArchive(t *testing.T, evs []tev) *OTF2Archive {
	t.Helper()
	a, err := ReadOTF2(writeTaskArchive(t, t.TempDir(), evs))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A run of two localities: locality 0 has two lanes, locality 1 one.
// "main" (GUID 1) spawns "work" tasks 2 and 3 on locality 0 and 4 on
// locality 1; task 2 yields at 30 and resumes on the other lane at 50;
// task 3 enters a nested region "kernel" (no GUID).
var twoLocalityRun = []tev{
	enter(0, 0, "main", 1, 0),
	sample(0, 0, 50),
	enter(1, 10, "work", 2, 1),
	leave(0, 20, "main"),
	leave(1, 30, "work"),             // task 2 yields (20 so far)
	enter(0, 40, "work", 3, 1),       //
	enter(0, 45, "kernel", 0, 0),     // nested, no GUID
	enter(1, 50, "work", 2, 1),       // task 2 resumes on lane 1
	leave(1, 60, "work"),             // task 2 ends: 30 in all
	leave(0, 65, "kernel"),           // 20
	leave(0, 80, "work"),             // task 3: 40
	sample(0, 100, 75),               //
	enter(1<<32, 5, "work", 4, 1),    // task 4 on locality 1
	sample(1<<32, 5, 10),             //
	leave(1<<32, 55, "work"),         // 50
	enter(1<<32, 60, "finish", 5, 4), //
	leave(1<<32, 70, "finish"),       // 10
	sample(1<<32, 100, 20),           //
}

func TestProfileAdd(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		adds                  []time.Duration
		count                 uint64
		total, mean, min, max time.Duration
	}{
		{"one", []time.Duration{5}, 1, 5, 5, 5, 5},
		{"several", []time.Duration{30, 10, 20}, 3, 60, 20, 10, 30},
		{"zero length", []time.Duration{0, 4}, 2, 4, 2, 0, 4},
		{"rounding mean down", []time.Duration{1, 2}, 2, 3, 1, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewProfile()
			for _, d := range tc.adds {
				p.Add("r", d)
			}
			s := p.Regions["r"]
			got := []any{s.Count, s.Total, s.Mean(), s.Min, s.Max}
			want := []any{tc.count, tc.total, tc.mean, tc.min, tc.max}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("count, total, mean, min, max = %v, want %v", got, want)
			}
		})
	}
}

func TestProfileMerge(t *testing.T) {
	mk := func(wall time.Duration, lanes int, busy time.Duration, adds map[string][]time.Duration) *Profile {
		p := NewProfile()
		p.Wall, p.Lanes, p.Busy = wall, lanes, busy
		for r, ds := range adds {
			for _, d := range ds {
				p.Add(r, d)
			}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		p, q *Profile
		want *Profile
	}{
		{"disjoint regions",
			mk(100, 2, 50, map[string][]time.Duration{"a": {10}}),
			mk(80, 1, 20, map[string][]time.Duration{"b": {20}}),
			mk(100, 3, 70, map[string][]time.Duration{"a": {10}, "b": {20}})},
		{"same region",
			mk(100, 2, 0, map[string][]time.Duration{"a": {10, 30}}),
			mk(120, 2, 0, map[string][]time.Duration{"a": {5, 20}}),
			mk(120, 4, 0, map[string][]time.Duration{"a": {10, 30, 5, 20}})},
		{"into empty",
			&Profile{},
			mk(10, 1, 5, map[string][]time.Duration{"a": {7}}),
			mk(10, 1, 5, map[string][]time.Duration{"a": {7}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Merge(tc.q)
			if got, want := profileString(tc.p), profileString(tc.want); got != want {
				t.Errorf("merged:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// profileString is every field of p, regions sorted.
func profileString(p *Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wall %v lanes %d busy %v\n", p.Wall, p.Lanes, p.Busy)
	for _, n := range p.sorted() {
		s := p.Regions[n]
		fmt.Fprintf(&b, "%s %d %v %v %v\n", n, s.Count, s.Total, s.Min, s.Max)
	}
	return b.String()
}

func TestProfileWriteText(t *testing.T) {
	p := NewProfile()
	p.Wall, p.Lanes, p.Busy = 100*time.Millisecond, 2, 50*time.Millisecond
	p.Add("small", 10*time.Millisecond)
	p.Add("big", 30*time.Millisecond)
	p.Add("big", 10*time.Millisecond)
	var b bytes.Buffer
	must(t, p.WriteText(&b, "locality 0"))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 5:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"locality 0"},
		{"wall time 100ms", "2 lane(s)", "available time 200ms", "busy 50ms (25.0% utilisation)"},
		{"region", "count", "total", "mean", "min", "max", "% avail"},
		{"big", " 2 ", "40ms", "20ms", "10ms", "30ms", "20.00"},
		{"small", " 1 ", "10ms", "5.00"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q: want %q", i, lines[i], w)
			}
		}
	}
}

func TestProfileWriteCSV(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lanes    int
		locality string
		want     [][]string
	}{
		{"combined", 4, "all", [][]string{
			profileCSVHeader,
			{"all", "b,with comma", "2", "300", "150", "100", "200", "0.75"},
			{"all", "a", "1", "50", "50", "50", "50", "0.125"},
		}},
		{"no lanes counts as one", 0, "3", [][]string{
			profileCSVHeader,
			{"3", "b,with comma", "2", "300", "150", "100", "200", "3"},
			{"3", "a", "1", "50", "50", "50", "50", "0.5"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewProfile()
			p.Wall, p.Lanes = 100, tc.lanes
			p.Add("a", 50)
			p.Add("b,with comma", 100)
			p.Add("b,with comma", 200)
			var b bytes.Buffer
			must(t, p.WriteCSV(&b, tc.locality))
			rows, err := csv.NewReader(&b).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rows) != fmt.Sprint(tc.want) {
				t.Errorf("rows %q, want %q", rows, tc.want)
			}
		})
	}
}

func TestProfileFromOTF2(t *testing.T) {
	a := readTaskArchive(t, twoLocalityRun)
	per, all, err := ProfileFromOTF2(a)
	if err != nil {
		t.Fatal(err)
	}
	// The trace runs from 0 to 100 ns.
	want := map[string]string{
		"0": "wall 100ns lanes 2 busy 90ns\n" +
			"work 2 70ns 30ns 40ns\n" + // task 2 (20+10 over two lanes), task 3 (40, including kernel)
			"kernel 1 20ns 20ns 20ns\n" +
			"main 1 20ns 20ns 20ns\n",
		"1": "wall 100ns lanes 1 busy 60ns\n" +
			"work 1 50ns 50ns 50ns\n" +
			"finish 1 10ns 10ns 10ns\n",
		"all": "wall 100ns lanes 3 busy 150ns\n" +
			"work 3 120ns 30ns 50ns\n" +
			"kernel 1 20ns 20ns 20ns\n" +
			"main 1 20ns 20ns 20ns\n" +
			"finish 1 10ns 10ns 10ns\n",
	}
	got := map[string]string{"all": profileString(all)}
	for loc, p := range per {
		got[fmt.Sprint(loc)] = profileString(p)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("profile %s:\n%s\nwant:\n%s", k, got[k], want[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("profiles of %d localities, want 2", len(per))
	}
}

func TestProfileFromOTF2Golden(t *testing.T) {
	for _, name := range []string{"tiny", "two-localities"} {
		a, err := ReadOTF2(goldenAnchor(name))
		if err != nil {
			t.Fatal(err)
		}
		per, all, err := ProfileFromOTF2(a)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var n uint64
		for _, evs := range a.Events {
			for _, ev := range evs {
				if ev.Kind == OTF2Enter {
					n++
				}
			}
		}
		var tasks uint64
		for _, s := range all.Regions {
			tasks += s.Count
		}
		// The golden archives' tasks do not yield: one task per Enter.
		if tasks != n {
			t.Errorf("%s: %d tasks, %d Enter events", name, tasks, n)
		}
		if all.Lanes != len(a.Locations) || len(per) == 0 {
			t.Errorf("%s: %d lanes in %d localities, archive has %d locations", name, all.Lanes, len(per), len(a.Locations))
		}
	}
}

func TestProfileFromOTF2Unmatched(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []tev
		want string
	}{
		{"leave without enter", []tev{leave(1, 5, "a")}, `location 1 event 0: Leave of region "a" with no region entered`},
		{"wrong region", []tev{enter(0, 1, "a", 1, 0), enter(0, 2, "b", 2, 1), leave(0, 3, "a")},
			`location 0 event 2: Leave of region "a", but "b" was entered last`},
		{"never left", []tev{enter(1<<32, 7, "a", 1, 0)}, `location 4294967296: region "a" entered at 7 and never left`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ProfileFromOTF2(readTaskArchive(t, tc.evs))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestTicksDuration(t *testing.T) {
	for _, tc := range []struct {
		res  ticks
		t    uint64
		want time.Duration
	}{
		{1e9, 12345, 12345},
		{0, 7, 7},
		{1e6, 3, 3000},
		{3, 1, 333333333},
		{1, 1 << 62, 1<<63 - 1},
	} {
		if got := tc.res.duration(tc.t); got != tc.want {
			t.Errorf("%d ticks at %d/s = %v, want %v", tc.t, tc.res, got, tc.want)
		}
	}
}

// A location with Metric events and no Enter is a sampler's: the profile
// does not count it as a lane. An idle lane (no events) still counts.
func TestProfileLanesLeaveSamplersOut(t *testing.T) {
	a := readTaskArchive(t, twoLocalityRun)
	sampler := uint64(1)<<32 | 7
	idle := uint64(1)<<32 | 8
	a.Locations = append(a.Locations, OTF2LocationDef{ID: sampler}, OTF2LocationDef{ID: idle})
	a.Events[sampler] = []OTF2Event{{Kind: OTF2Metric, Time: 5}}
	per, all, err := ProfileFromOTF2(a)
	if err != nil {
		t.Fatal(err)
	}
	if per[1].Lanes != 2 || all.Lanes != 4 {
		t.Errorf("lanes: locality 1 %d, all %d; want 2 and 4 (the idle lane counts, the sampler not)", per[1].Lanes, all.Lanes)
	}
}
