package trace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestClockOffsetsLikeLibotf2: ReadOTF2 corrects a location's times by its
// clock offsets as libotf2 does (the expected times are what otf2-print
// 3.0.2 printed): linear between two offsets, along the first line
// before it and the last one after it, rounded to the nearest tick; a
// single offset corrects nothing. With otf2-print installed, it also
// compares the whole printout.
func TestClockOffsetsLikeLibotf2(t *testing.T) {
	times := []uint64{500, 1000, 1001, 1500, 1999, 2000, 3000}
	for _, c := range []struct {
		name    string
		offsets []OTF2ClockOffset
		want    []uint64
	}{
		{"one offset", []OTF2ClockOffset{{Time: 1000, Offset: 500}}, times},
		{"slope 1", []OTF2ClockOffset{{Time: 1000, Offset: 500}, {Time: 2000, Offset: 1500}}, []uint64{500, 1500, 1502, 2500, 3498, 3500, 5500}},
		{"constant", []OTF2ClockOffset{{Time: 1000, Offset: 500}, {Time: 1200, Offset: 500}}, []uint64{1000, 1500, 1501, 2000, 2499, 2500, 3500}},
		{"three, slope 1/3 then 0", []OTF2ClockOffset{{Time: 1000, Offset: 0, StdDev: 1.5}, {Time: 1300, Offset: 100}, {Time: 1600, Offset: 100}}, []uint64{333, 1000, 1001, 1600, 2099, 2100, 3100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := CreateOTF2(OTF2Config{Dir: dir})
			must(t, err)
			g := w.LocationGroup("locality 0", w.SystemTreeNode("host", "node", OTF2UndefinedU32))
			r := w.Region(OTF2RegionDef{Name: "step", Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser})
			ew, err := w.Location(0, "locality 0 lane 0", g)
			must(t, err)
			for _, ts := range times {
				must(t, ew.Enter(ts, r))
				must(t, ew.Leave(ts, r))
			}
			must(t, w.Close())
			must(t, os.WriteFile(filepath.Join(dir, "traces", "0.def"), otf2LocalDefs{clock: c.offsets}.encode(), 0o644))
			a, err := ReadOTF2(w.AnchorPath())
			must(t, err)
			var got []uint64
			for i, ev := range a.Events[0] {
				if i%2 == 0 {
					got = append(got, ev.Time)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("times %v, want %v", got, c.want)
			}
			if !slices.Equal(a.ClockOffsets[0], c.offsets) {
				t.Errorf("clock offsets %+v, want %+v", a.ClockOffsets[0], c.offsets)
			}
			if _, err := exec.LookPath("otf2-print"); err != nil {
				return // the times above are otf2-print's
			}
			out := checkOTF2Print(t, w.AnchorPath(), map[uint64]int{0: 2 * len(times)})
			var ours bytes.Buffer
			must(t, a.PrintEvents(&ours))
			if ours.String() != out {
				t.Errorf("PrintEvents:\n%s\notf2-print:\n%s", ours.String(), out)
			}
		})
	}
}

// TestLocalDefsRoundTrip: the mapping tables and clock offsets of a local
// definition file read back as written, and bad ones are errors.
func TestLocalDefsRoundTrip(t *testing.T) {
	want := otf2LocalDefs{regions: []uint64{3, 0, 1 << 40}, metrics: []uint64{7, 8},
		clock: []OTF2ClockOffset{{Time: 5, Offset: -3, StdDev: 0.25}, {Time: 1 << 50, Offset: 1 << 40}}}
	got, err := readLocalDefs(want.encode(), OTF2DefaultDefChunkSize)
	must(t, err)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read %+v, want %+v", got, want)
	}
	backwards := otf2LocalDefs{clock: []OTF2ClockOffset{{Time: 5}, {Time: 5}}}
	if _, err := readLocalDefs(backwards.encode(), OTF2DefaultDefChunkSize); err == nil {
		t.Error("two clock offsets at the same time: no error")
	}
	evs := []OTF2Event{{Kind: OTF2Metric, Metric: 2}}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "0.def"), want.encode(), 0o644))
	if _, err := applyLocalDefs(filepath.Join(dir, "0.def"), OTF2DefaultDefChunkSize, evs); err == nil {
		t.Error("metric 2 of 2 mapped: no error")
	}
}

// TestMergeMovesLocalitiesOntoOneClock: the tracers of two localities
// count time from their own origins, 7s apart; the merged archive holds
// every time on the run's clock (from the earlier origin), clock offsets
// for the later locality's locations, metric references mapped to the
// locality's own metrics, and clock properties that give each event's
// wall-clock time. otf2-print, when installed, prints the same times.
func TestMergeMovesLocalitiesOntoOneClock(t *testing.T) {
	const apart = 7_000_000_123
	base := uint64(time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC).UnixNano())
	dir := t.TempDir()
	for loc := range uint32(2) {
		tr, err := NewTracer(TracerConfig{Dir: dir, Locality: loc, Lanes: 1, Host: "host-a"})
		must(t, err)
		tr.origin = base + uint64(loc)*apart
		lane, samples := &tr.lanes[0], &tr.lanes[1]
		lane.mu.Lock()
		lane.enter(1000, tr.region("step"), uint64(loc)<<44|1, 0)
		lane.leave(5000, tr.region("step"))
		lane.mu.Unlock()
		samples.mu.Lock()
		samples.metric(2000, 2, U64Metric(uint64(10+loc))) // task queue length
		samples.mu.Unlock()
		must(t, tr.Close())
	}
	res, err := MergeOTF2(context.Background(), dir, 2, time.Second)
	must(t, err)
	a, err := ReadOTF2(res.Anchor)
	must(t, err)
	if p := CheckOTF2(a); len(p) > 0 {
		t.Fatalf("CheckOTF2: %v", p)
	}
	want := map[uint64][]uint64{0: {1000, 5000}, 1: {2000}, 1 << 32: {1000 + apart, 5000 + apart}, 1<<32 | 1: {2000 + apart}}
	for id, times := range want {
		var got []uint64
		for _, ev := range a.Events[id] {
			got = append(got, ev.Time)
			at, ok := a.Clock.WallClock(ev.Time)
			if wall := time.Unix(0, int64(base+ev.Time)); !ok || !at.Equal(wall) {
				t.Errorf("location %d: time %d is at %v, want %v", id, ev.Time, at, wall)
			}
		}
		if !slices.Equal(got, times) {
			t.Errorf("location %d: times %v, want %v", id, got, times)
		}
	}
	if c := a.Clock; c.GlobalOffset != 1000 || c.TraceLength != 4000+apart || c.RealtimeTimestamp != base+1000 {
		t.Errorf("clock %+v", c)
	}
	if len(a.ClockOffsets) != 2 || a.ClockOffsets[1<<32][0] != (OTF2ClockOffset{Time: 1000, Offset: apart}) || a.ClockOffsets[1<<32|1][0].Offset != apart {
		t.Errorf("clock offsets %+v", a.ClockOffsets)
	}
	for id, v := range map[uint64]uint64{1: 10, 1<<32 | 1: 11} {
		ev := a.Events[id][0]
		m, _ := a.metricMember(ev.Metric, 0)
		if name := a.StringOf(a.MetricMembers[m].Name); name != fmt.Sprintf("Task queue length (locality %d)", id>>32) || ev.Values[0] != U64Metric(v) {
			t.Errorf("location %d: metric %q = %+v", id, name, ev.Values)
		}
	}
	// Profiles count in durations: the same whatever the origins.
	_, all, err := ProfileFromOTF2(a)
	must(t, err)
	if s := all.Regions["step"]; s == nil || s.Count != 2 || s.Total != 8000 || all.Wall != 4000+apart {
		t.Errorf("profile %+v, step %+v", all, s)
	}
	if _, err := exec.LookPath("otf2-print"); err != nil {
		return
	}
	out := checkOTF2Print(t, res.Anchor, map[uint64]int{0: 2, 1: 1, 1 << 32: 2, 1<<32 | 1: 1})
	var ours bytes.Buffer
	must(t, a.PrintEvents(&ours))
	if ours.String() != out {
		t.Errorf("PrintEvents:\n%s\notf2-print:\n%s", ours.String(), out)
	}
}

// TestMergeEpochParts: parts of earlier versions (no origin: times in ns
// since the Unix epoch) merge as they did, without clock offsets, their
// times read as wall-clock times.
func TestMergeEpochParts(t *testing.T) {
	epoch := uint64(time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC).UnixNano())
	dir := t.TempDir()
	for loc := range uint32(2) {
		tr, err := NewTracer(TracerConfig{Dir: dir, Locality: loc, Lanes: 1, Host: "host-a"})
		must(t, err)
		tr.origin = 0
		lane := &tr.lanes[0]
		lane.mu.Lock()
		lane.enter(epoch+uint64(loc)*10, tr.region("step"), uint64(loc)<<44|1, 0)
		lane.leave(epoch+100, tr.region("step"))
		lane.mu.Unlock()
		must(t, tr.Close())
	}
	res, err := MergeOTF2(context.Background(), dir, 2, time.Second)
	must(t, err)
	a, err := ReadOTF2(res.Anchor)
	must(t, err)
	if len(a.ClockOffsets) != 0 || a.Events[1<<32][0].Time != epoch+10 {
		t.Errorf("clock offsets %v, first time of locality 1 %d", a.ClockOffsets, a.Events[1<<32][0].Time)
	}
	if c := a.Clock; c.GlobalOffset != epoch || c.RealtimeTimestamp != epoch || c.TraceLength != 100 {
		t.Errorf("clock %+v", c)
	}
	if at, _ := a.Clock.WallClock(epoch + 10); at.UnixNano() != int64(epoch+10) {
		t.Errorf("wall clock %v", at)
	}
}
