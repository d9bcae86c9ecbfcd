package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTask is what the tracer test drives through the tracer, the way the
// runtime's scheduler would: a task starts on a lane, may yield (Leave) and
// resume (Enter) on another one, and stops.
type fakeTask struct {
	guid, parent uint64
	name         string
}

// runFakeLocality drives tasks through a tracer: on each lane a goroutine
// runs its share, and every third task yields and resumes on the next lane
// (under that lane's hand-off lock, as the scheduler would grant it).
func runFakeLocality(t *testing.T, tr *Tracer, loc uint32, lanes, tasks int) []fakeTask {
	t.Helper()
	var all []fakeTask
	names := []string{"app.step", "github.com/example/prog/work.kernel.func1", fmt.Sprintf("app.only-on-%d", loc)}
	for i := range tasks {
		g := uint64(loc)<<44 | uint64(i+1)
		var parent uint64
		if i > 0 {
			parent = uint64(loc)<<44 | uint64(i/2+1)
		}
		all = append(all, fakeTask{guid: g, parent: parent, name: names[i%len(names)]})
	}
	// held[lane] is the lane itself: whoever holds it may write its events.
	held := make([]sync.Mutex, lanes)
	var wg sync.WaitGroup
	for lane := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lane; i < len(all); i += lanes {
				ft := all[i]
				held[lane].Lock()
				tr.Enter(lane, ft.name, ft.guid, ft.parent)
				if i%3 == 0 {
					tr.Leave(lane, ft.name) // yield
					held[lane].Unlock()
					other := (lane + 1) % lanes
					held[other].Lock()
					tr.Enter(other, ft.name, ft.guid, ft.parent) // resume
					tr.Leave(other, ft.name)
					held[other].Unlock()
					continue
				}
				tr.Leave(lane, ft.name)
				held[lane].Unlock()
			}
		}()
	}
	wg.Wait()
	return all
}

func TestTracerArchiveMultiChunk(t *testing.T) {
	dir := t.TempDir()
	const lanes, tasks = 2, 32000 // more than 512 KiB per lane: three chunks of 256 KiB
	var want []fakeTask
	for loc := range uint32(2) {
		tr, err := NewTracer(TracerConfig{Dir: dir, Locality: loc, Lanes: lanes, Host: "host-a", EvtChunkSize: OTF2MinChunkSize})
		if err != nil {
			t.Fatal(err)
		}
		var sampled atomic.Int32
		tr.StartSampler(5*time.Millisecond, func() RuntimeSample {
			sampled.Add(1)
			return RuntimeSample{TaskQueueLen: 3, ParcelsSent: 7}
		})
		want = append(want, runFakeLocality(t, tr, loc, lanes, tasks)...)
		waitSampled(t, &sampled, 2) // the one at the start and one of the ticker
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		tr.Enter(0, "late", 1, 0) // after Close: dropped
	}
	res, err := MergeOTF2(context.Background(), dir, 2, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Merged, []uint32{0, 1}) || len(res.Missing) != 0 {
		t.Fatalf("merged %v, missing %v", res.Merged, res.Missing)
	}
	a, err := ReadOTF2(res.Anchor)
	if err != nil {
		t.Fatal(err)
	}
	if p := CheckOTF2(a); len(p) > 0 {
		t.Fatalf("CheckOTF2: %d problems, first: %s", len(p), p[0])
	}
	if info, err := os.Stat(filepath.Join(dir, ArchiveName, "0.evt")); err != nil || info.Size() <= 2*OTF2MinChunkSize {
		t.Fatalf("lane 0 of locality 0: %v, %d bytes: want more than two chunks", err, info.Size())
	}
	// Every task appears with its name, GUID and parent; its Enter events
	// are one (no yield) or two (a yield and a resume on the other lane).
	type seen struct {
		name    string
		parent  uint64
		enters  int
		regions map[string]bool
	}
	got := map[uint64]*seen{}
	samples := 0                                   // sample times, all localities
	metricEvents := map[string][]OTF2MetricValue{} // by member name
	for _, l := range a.Locations {
		loc, lane := l.ID>>32, l.ID&0xffffffff
		wantName := fmt.Sprintf("locality %d lane %d", loc, lane)
		if lane == lanes {
			wantName = fmt.Sprintf("locality %d samples", loc)
		}
		if name, group := a.StringOf(l.Name), a.StringOf(a.LocationGroups[l.Group].Name); name != wantName || group != fmt.Sprintf("locality %d", loc) {
			t.Errorf("location %d is %q in group %q, want %q in locality %d", l.ID, name, group, wantName, loc)
		}
		lastSample := uint64(0)
		for _, ev := range a.Events[l.ID] {
			switch ev.Kind {
			case OTF2Metric:
				// One value per event, of its one member's type.
				m, ok := a.metricMember(ev.Metric, 0)
				if !ok || len(ev.Values) != 1 || len(a.MetricClasses[ev.Metric].Members) != 1 || a.MetricMembers[m].ValueType != ev.Values[0].Type {
					t.Fatalf("location %d: metric event %+v of class %+v", l.ID, ev, a.MetricClasses[ev.Metric])
				}
				name := a.StringOf(a.MetricMembers[m].Name)
				metricEvents[name] = append(metricEvents[name], ev.Values[0])
				if !strings.HasSuffix(name, fmt.Sprintf(" (locality %d)", loc)) {
					t.Fatalf("location %d: metric %q is not named after its locality", l.ID, name)
				}
				if ev.Time != lastSample {
					samples++
					lastSample = ev.Time
				}
			case OTF2Enter:
				if len(ev.Attrs) != 2 || a.StringOf(a.Attributes[ev.Attrs[0].Ref].Name) != AttrGUID ||
					a.StringOf(a.Attributes[ev.Attrs[1].Ref].Name) != AttrParentGUID {
					t.Fatalf("location %d: Enter attributes %v", l.ID, ev.Attrs)
				}
				s := got[ev.Attrs[0].Value]
				if s == nil {
					s = &seen{parent: ev.Attrs[1].Value, regions: map[string]bool{}}
					got[ev.Attrs[0].Value] = s
				}
				s.enters++
				s.regions[a.StringOf(a.Regions[ev.Region].Name)] = true
				if a.Regions[ev.Region].Role != OTF2RoleTask {
					t.Fatalf("region %d: role %d, want TASK", ev.Region, a.Regions[ev.Region].Role)
				}
			}
		}
	}
	if samples < 4 {
		t.Errorf("%d samples, want at least one at the start and one at the end of each locality", samples)
	}
	// Every metric of every locality, as many times as the locality took
	// samples; the runtime's counters as they were.
	for loc := range 2 {
		var n int
		for i, m := range SampleMetrics() {
			vs := metricEvents[fmt.Sprintf("%s (locality %d)", m.Name, loc)]
			if i == 0 {
				n = len(vs)
			}
			if len(vs) != n || n < 2 {
				t.Errorf("locality %d: %d samples of %q, %d of the first metric", loc, len(vs), m.Name, n)
			}
			if n < 3 {
				t.Errorf("locality %d: %d samples of %q, want one at the start, one of the ticker and one at the end", loc, n, m.Name)
			}
			for _, v := range vs {
				if (m.Name == "Task queue length" && v != U64Metric(3)) || (m.Name == "Parcels sent" && v != U64Metric(7)) {
					t.Fatalf("locality %d: %s %+v", loc, m.Name, v)
				}
			}
		}
	}
	if len(metricEvents) != 2*len(SampleMetrics()) {
		t.Errorf("metrics %d, want %d", len(metricEvents), 2*len(SampleMetrics()))
	}
	for i, ft := range want {
		s := got[ft.guid]
		name := RegionName(ft.name)
		if s == nil || s.parent != ft.parent || len(s.regions) != 1 || !s.regions[name] {
			t.Fatalf("task %d (GUID %d, %q): read back %+v", i, ft.guid, name, s)
		}
		if s.enters != 1+btoi(i%tasks%3 == 0) {
			t.Fatalf("task %d: %d Enter events, want %d", i, s.enters, 1+btoi(i%tasks%3 == 0))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d tasks read back, want %d", len(got), len(want))
	}
	// Regions are unified: "app.step" is one region for both localities.
	n := 0
	for _, r := range a.Regions {
		if a.StringOf(r.Name) == "app.step" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("region app.step defined %d times", n)
	}
	counts := map[uint64]int{}
	for id, evs := range a.Events {
		counts[id] = len(evs)
	}
	checkOTF2Print(t, res.Anchor, counts)
	checkPythonTasks(t, res.Anchor, len(want))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkPythonTasks reads the archive with python3-otf2 and checks that it
// sees every task's GUID once in a first Enter, times in order per
// location, and region names that are not references.
func checkPythonTasks(t *testing.T, anchor string, tasks int) {
	t.Helper()
	py := pythonWithOTF2(t)
	script := `
import json, sys, otf2
last, guids, bad = {}, set(), []
with otf2.reader.open(sys.argv[1]) as tr:
    for loc, ev in tr.events:
        if ev.time < last.get(loc._ref, 0):
            bad.append("time goes back on %d" % loc._ref)
        last[loc._ref] = ev.time
        if isinstance(ev, otf2.events.Enter):
            a = {k.name: v for k, v in ev.attributes.items()}
            guids.add(a["GUID"])
            if not isinstance(ev.region.name, str) or not ev.region.name:
                bad.append("region without a name")
print(json.dumps({"tasks": len(guids), "bad": bad[:5]}))
`
	var stderr bytes.Buffer
	cmd := exec.Command(py, "-c", script, anchor)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3-otf2: %v\n%s", err, stderr.String())
	}
	var r struct {
		Tasks int
		Bad   []string
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("python3-otf2 printed %q: %v", out, err)
	}
	if r.Tasks != tasks || len(r.Bad) > 0 {
		t.Fatalf("python3-otf2: %d tasks (want %d), problems %v", r.Tasks, tasks, r.Bad)
	}
}

// A locality that never closes its tracer (it died) leaves no part: the
// merge waits its while, then writes an archive of the others that the
// readers accept.
func TestMergeWithoutADeadLocality(t *testing.T) {
	dir := t.TempDir()
	var trs []*Tracer
	for loc := range uint32(3) {
		tr, err := NewTracer(TracerConfig{Dir: dir, Locality: loc, Lanes: 1})
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
		tr.Enter(0, "step", uint64(loc)<<44|1, 0)
		tr.Leave(0, "step")
	}
	trs[1].Enter(0, "dies-here", 1<<44|2, 1<<44|1) // no Leave, no Close
	for _, loc := range []int{0, 2} {
		trs[loc].Enter(0, "unfinished", uint64(loc)<<44|2, 0) // left open: Close leaves it
		if err := trs[loc].Close(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res, err := MergeOTF2(context.Background(), dir, 3, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 200*time.Millisecond || !slices.Equal(res.Missing, []uint32{1}) || !slices.Equal(res.Merged, []uint32{0, 2}) {
		t.Fatalf("after %v: merged %v, missing %v", time.Since(start), res.Merged, res.Missing)
	}
	a, err := ReadOTF2(res.Anchor)
	if err != nil {
		t.Fatal(err)
	}
	if p := CheckOTF2(a); len(p) > 0 {
		t.Fatalf("CheckOTF2: %v", p)
	}
	var names []string
	for _, r := range a.Regions {
		names = append(names, a.StringOf(r.Name))
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "step,unfinished" {
		t.Fatalf("regions %v", names)
	}
	counts := map[uint64]int{}
	for id, evs := range a.Events {
		counts[id] = len(evs)
	}
	checkOTF2Print(t, res.Anchor, counts)

	// Locality 0 died too: what is left merges by hand, with whatever parts
	// are there.
	if err := os.Remove(partPath(dir, 0)); err != nil {
		t.Fatal(err)
	}
	res, err = MergeOTF2(context.Background(), dir, 0, 0)
	if err != nil || !slices.Equal(res.Merged, []uint32{2}) {
		t.Fatalf("merging what locality 2 left: %+v, %v", res, err)
	}
	if a, err = ReadOTF2(res.Anchor); err != nil || len(a.Locations) != 2 || a.Locations[0].ID != 2<<32 {
		t.Fatalf("archive of locality 2 alone: %v", err)
	}
	trs[1].Close()
}

func TestTracerConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  TracerConfig
		want string
	}{
		{TracerConfig{Lanes: 1}, "no trace directory"},
		{TracerConfig{Dir: t.TempDir(), Lanes: 0, Locality: 3}, "locality 3: 0 lanes"},
		{TracerConfig{Dir: t.TempDir(), Lanes: 1, EvtChunkSize: 1000}, "event chunk size 1000"},
	} {
		if _, err := NewTracer(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewTracer(%+v): %v, want an error with %q", c.cfg, err, c.want)
		}
	}
	if _, err := MergeOTF2(context.Background(), t.TempDir(), 2, 10*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no locality left its part") {
		t.Errorf("MergeOTF2 of nothing: %v", err)
	}
}

func TestRegionName(t *testing.T) {
	for in, want := range map[string]string{
		"tracejob.node": "tracejob.node",
		"github.com/tessera-amt/tessera/runtime.runMain.func1": "runtime.runMain.func1",
		"": "(unnamed task)",
		"example.com/m/p.Map[go.shape.struct { example.com/m/q.T }].func2": "p.Map[go.shape.struct { example.com/m/q.T }].func2",
	} {
		if got := RegionName(in); got != want {
			t.Errorf("RegionName(%q) = %q, want %q", in, got, want)
		}
	}
}

// waitSampled waits until the sampler has read its counters n times.
func waitSampled(t *testing.T, sampled *atomic.Int32, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); sampled.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sampler took %d samples, want %d", sampled.Load(), n)
		}
	}
}
