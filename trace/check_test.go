package trace

import (
	"strings"
	"testing"
)

func TestCheckSound(t *testing.T) {
	archives := map[string]*OTF2Archive{"two localities": readTaskArchive(t, twoLocalityRun)}
	for _, name := range []string{"two-localities"} {
		a, err := ReadOTF2(goldenAnchor(name))
		if err != nil {
			t.Fatal(err)
		}
		archives["golden "+name] = a
	}
	small, _ := writeSmallArchive(t, t.TempDir())
	a, err := ReadOTF2(small)
	if err != nil {
		t.Fatal(err)
	}
	archives["small"] = a
	for name, a := range archives {
		if ps := CheckOTF2(a); len(ps) > 0 {
			t.Errorf("%s: problems in a sound archive:\n%s", name, strings.Join(ps, "\n"))
		}
	}
}

// The golden archive "tiny" holds one task, whose parent is not in it.
func TestCheckGoldenTiny(t *testing.T) {
	a, err := ReadOTF2(goldenAnchor("tiny"))
	if err != nil {
		t.Fatal(err)
	}
	got := CheckOTF2(a)
	want := []string{"task 42 (location 0 event 0): parent GUID 7 is no task of the archive"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems %q, want %q", got, want)
	}
}

// TestCheckBroken checks archives broken in one way each: written so by
// the OTF2 writer (which does not judge what it is told), or changed after
// reading (what the writer cannot write).
func TestCheckBroken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		evs    []tev
		change func(a *OTF2Archive)
		want   []string
	}{
		{name: "leave of another region",
			evs:  []tev{enter(0, 1, "a", 1, 0), enter(0, 2, "b", 2, 1), leave(0, 3, "a"), leave(0, 4, "b")},
			want: []string{`location 0 event 2: Leave of region "a", but "b" was entered last`, `location 0 event 3: Leave of region "b", but "a" was entered last`}},
		{name: "leave without enter",
			evs:  []tev{leave(1<<32+1, 3, "a")},
			want: []string{`location 4294967297 event 0: Leave of region "a" with no region entered`}},
		{name: "never left",
			evs:  []tev{enter(0, 1, "a", 1, 0), enter(0, 2, "b", 2, 1)},
			want: []string{`location 0: region "b" entered and never left`, `location 0: region "a" entered and never left`}},
		{name: "unknown parent",
			evs:  []tev{enter(0, 1, "a", 1, 0), leave(0, 2, "a"), enter(0, 3, "b", 2, 77), leave(0, 4, "b")},
			want: []string{`task 2 (location 0 event 2): parent GUID 77 is no task of the archive`}},
		{name: "one GUID, two regions",
			evs:  []tev{enter(0, 1, "a", 1, 0), leave(0, 2, "a"), enter(1, 3, "b", 1, 0), leave(1, 4, "b")},
			want: []string{`task 1: location 1 event 0 enters region "b", location 0 event 0 entered region "a"`}},
		{name: "task on two lanes at once",
			evs:  []tev{enter(0, 1, "a", 1, 0), enter(1, 2, "a", 1, 0), leave(0, 3, "a"), leave(1, 4, "a")},
			want: []string{`task 1: location 1 event 0 enters it while it runs on location 0 since event 0`}},
		{name: "time backwards",
			evs:    []tev{enter(0, 1, "a", 1, 0), leave(0, 5, "a"), sample(0, 6, 1)},
			change: func(a *OTF2Archive) { a.Events[0][2].Time = 4 },
			want:   []string{`location 0 event 2: time 4 is before the previous event's 5`}},
		{name: "undefined region",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { a.Events[0][0].Region = 42 },
			want:   []string{`location 0 event 0: region 42 is not defined`, `location 0 event 2: Leave of region "main", but <42> (undefined) was entered last`}},
		{name: "undefined string",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { r := a.Regions[0]; r.Name = 4242; a.Regions[0] = r },
			want:   []string{`region 0: name is string 4242, which is not defined`}},
		{name: "undefined attribute",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { a.Events[0][0].Attrs[1].Ref = 9 },
			want:   []string{`location 0 event 0: attribute 9 is not defined`}},
		{name: "attribute of the wrong type",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { a.Events[0][0].Attrs[1].Type = OTF2TypeUint32 },
			want:   []string{`location 0 event 0: attribute "Parent GUID" has type UINT32, defined as UINT64`}},
		{name: "undefined metric class",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { a.Events[0][1].Metric = 5 },
			want:   []string{`location 0 event 1: metric class 5 is not defined`}},
		{name: "metric values missing",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { a.Events[0][1].Values = nil },
			want:   []string{`location 0 event 1: 0 values for metric class 0 of 1 members`}},
		{name: "undefined location group",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { a.Locations[1].Group = 8 },
			want:   []string{`location 1: location group 8 is not defined`}},
		{name: "undefined metric member",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { delete(a.MetricMembers, 0) },
			want:   []string{`metric class 0: member 0 is not defined`}},
		{name: "undefined system tree node",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { delete(a.SystemTreeNodes, 0) },
			want:   []string{`location group 0: system tree parent 0 is not defined`, `location group 1: system tree parent 0 is not defined`}},
		{name: "location without events",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { delete(a.Events, 1<<32) },
			want:   []string{`location 4294967296: no events read (no event file?)`}},
		{name: "location twice",
			evs:    twoLocalityRun,
			change: func(a *OTF2Archive) { a.Locations = append(a.Locations, a.Locations[0]) },
			want:   []string{`location 0: defined twice`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := readTaskArchive(t, tc.evs)
			if tc.change != nil {
				tc.change(a)
			}
			got := CheckOTF2(a)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
