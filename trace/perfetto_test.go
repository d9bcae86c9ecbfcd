package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// chromeEvent is an entry of traceEvents as read back.
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   *float64       `json:"ts"`
	Dur  *float64       `json:"dur"`
	Pid  *int64         `json:"pid"`
	Tid  *int64         `json:"tid"`
	ID   uint64         `json:"id"`
	Bp   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

func exportPerfetto(t *testing.T, a *OTF2Archive) ([]byte, []chromeEvent) {
	t.Helper()
	var b bytes.Buffer
	must(t, WritePerfetto(&b, a))
	var doc struct {
		TraceEvents []chromeEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	return b.Bytes(), doc.TraceEvents
}

// checkChromeTrace checks what a trace-event consumer relies on: every
// event has ph, pid and tid; every event but metadata has ts; complete
// events have dur >= 0 and nest properly on their thread; each flow id has
// one "s" and one "f" with the same name and category, each inside a
// complete event on its thread (bp "e": the enclosing slice).
func checkChromeTrace(t *testing.T, evs []chromeEvent) {
	t.Helper()
	type thread struct{ pid, tid int64 }
	type span struct{ start, end float64 }
	slicesOf := map[thread][]span{}
	for i, e := range evs {
		if e.Ph == "" || e.Pid == nil || e.Tid == nil {
			t.Fatalf("event %d %+v: no ph, pid or tid", i, e)
		}
		if e.Ph != "M" && e.Ts == nil {
			t.Fatalf("event %d %+v: no ts", i, e)
		}
		if e.Ph == "X" {
			if e.Dur == nil || *e.Dur < 0 {
				t.Fatalf("event %d %+v: bad dur", i, e)
			}
			th := thread{*e.Pid, *e.Tid}
			slicesOf[th] = append(slicesOf[th], span{*e.Ts, *e.Ts + *e.Dur})
		}
	}
	for th, ss := range slicesOf {
		slices.SortStableFunc(ss, func(a, b span) int {
			if a.start != b.start {
				return cmpFloat(a.start, b.start)
			}
			return cmpFloat(b.end, a.end)
		})
		var open []span
		for _, s := range ss {
			for len(open) > 0 && open[len(open)-1].end <= s.start && s.end > open[len(open)-1].end {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && s.end > open[len(open)-1].end {
				t.Errorf("thread %v: slice %v overlaps %v without nesting", th, s, open[len(open)-1])
			}
			open = append(open, s)
		}
	}
	inside := func(e chromeEvent) bool {
		for _, s := range slicesOf[thread{*e.Pid, *e.Tid}] {
			if s.start <= *e.Ts && *e.Ts <= s.end {
				return true
			}
		}
		return false
	}
	type end struct{ s, f []chromeEvent }
	flows := map[uint64]*end{}
	for _, e := range evs {
		if e.Ph != "s" && e.Ph != "f" {
			continue
		}
		if flows[e.ID] == nil {
			flows[e.ID] = &end{}
		}
		if e.Ph == "s" {
			flows[e.ID].s = append(flows[e.ID].s, e)
		} else {
			flows[e.ID].f = append(flows[e.ID].f, e)
		}
		if !inside(e) {
			t.Errorf("flow event %+v lies in no slice of its thread", e)
		}
	}
	for id, f := range flows {
		if len(f.s) != 1 || len(f.f) != 1 || f.s[0].Name != f.f[0].Name || f.s[0].Cat != f.f[0].Cat {
			t.Errorf("flow %d: starts %+v, ends %+v", id, f.s, f.f)
			continue
		}
		if *f.s[0].Ts > *f.f[0].Ts {
			t.Errorf("flow %d goes back in time: %+v → %+v", id, f.s[0], f.f[0])
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestPerfettoExport(t *testing.T) {
	a := readTaskArchive(t, twoLocalityRun)
	_, evs := exportPerfetto(t, a)
	checkChromeTrace(t, evs)

	var got []string
	for _, e := range evs {
		switch e.Ph {
		case "M":
			if e.Name == "process_name" || e.Name == "thread_name" {
				got = append(got, fmt.Sprintf("M %s %d/%d %v", e.Name, *e.Pid, *e.Tid, e.Args["name"]))
			}
		case "X":
			got = append(got, fmt.Sprintf("X %s %d/%d %.3f+%.3f guid %v parent %v", e.Name, *e.Pid, *e.Tid, *e.Ts, *e.Dur, e.Args["guid"], e.Args["parent_guid"]))
		case "s", "f":
			got = append(got, fmt.Sprintf("%s %s %d %d/%d %.3f", e.Ph, e.Name, e.ID, *e.Pid, *e.Tid, *e.Ts))
		case "C":
			got = append(got, fmt.Sprintf("C %s %d %.3f %v", e.Name, *e.Pid, *e.Ts, e.Args["value"]))
		default:
			t.Errorf("unexpected event %+v", e)
		}
	}
	want := []string{
		"M process_name 0/0 locality 0",
		"M thread_name 0/0 lane 0",
		"M thread_name 0/1 lane 1",
		"M process_name 1/0 locality 1",
		"M thread_name 1/0 lane 0",
		// by location, then by start
		"X main 0/0 0.000+0.020 guid 1 parent 0",
		"X work 0/0 0.040+0.040 guid 3 parent 1",
		"X kernel 0/0 0.045+0.020 guid <nil> parent <nil>",
		"X work 0/1 0.010+0.020 guid 2 parent 1",
		"X work 0/1 0.050+0.010 guid 2 parent 1",
		"X work 1/0 0.005+0.050 guid 4 parent 1",
		"X finish 1/0 0.060+0.010 guid 5 parent 4",
		// by child GUID: 2 spawned while main ran, then its resume flow;
		// 3 spawned after main ended (starts in main's last ns); 4 on the
		// other locality; 5 by 4 after 4 ended.
		"s spawn 1 0/0 0.010", "f spawn 1 0/1 0.010",
		"s resume 2 0/1 0.029", "f resume 2 0/1 0.050",
		"s spawn 3 0/0 0.019", "f spawn 3 0/0 0.040",
		"s spawn 4 0/0 0.005", "f spawn 4 1/0 0.005",
		"s spawn 5 1/0 0.054", "f spawn 5 1/0 0.060",
		"C CPU Utilization 0 0.000 50",
		"C CPU Utilization 0 0.100 75",
		"C CPU Utilization 1 0.005 10",
		"C CPU Utilization 1 0.100 20",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A region entered at the same time as the task around it comes after it.
func TestPerfettoSameStart(t *testing.T) {
	a := readTaskArchive(t, []tev{enter(0, 1, "outer", 1, 0), enter(0, 1, "inner", 0, 0), leave(0, 2, "inner"), leave(0, 3, "outer")})
	_, evs := exportPerfetto(t, a)
	var names []string
	for _, e := range evs {
		if e.Ph == "X" {
			names = append(names, e.Name)
		}
	}
	if fmt.Sprint(names) != "[outer inner]" {
		t.Errorf("slices in order %v, want [outer inner]", names)
	}
}

func TestPerfettoLargeGUID(t *testing.T) {
	big := uint64(1<<63 + 5)
	a := readTaskArchive(t, []tev{enter(0, 1, "a", big, 1<<44), leave(0, 2, "a")})
	_, evs := exportPerfetto(t, a)
	for _, e := range evs {
		if e.Ph == "X" && (e.Args["guid"] != "9223372036854775813" || e.Args["parent_guid"] != float64(1<<44)) {
			t.Errorf("args %v", e.Args)
		}
	}
}

func TestPerfettoCountersPerLane(t *testing.T) {
	a := readTaskArchive(t, []tev{sample(0, 1, 1), sample(1, 2, 2), sample(1<<32, 3, 3)})
	_, evs := exportPerfetto(t, a)
	var names []string
	for _, e := range evs {
		if e.Ph == "C" {
			names = append(names, fmt.Sprintf("%d %s", *e.Pid, e.Name))
		}
	}
	want := []string{"0 CPU Utilization (lane 0)", "0 CPU Utilization (lane 1)", "1 CPU Utilization"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("counters %q, want %q", names, want)
	}
}

// TestPerfettoCountersOfATesseraRun: the metrics of the golden run, named
// after their locality in the archive, are counters of that locality's
// process under their plain names.
func TestPerfettoCountersOfATesseraRun(t *testing.T) {
	a, err := ReadOTF2(filepath.Join("testdata", "otf2", goldenRunName, ArchiveName+".otf2"))
	must(t, err)
	_, evs := exportPerfetto(t, a)
	checkChromeTrace(t, evs)
	got := map[string][]float64{}
	for _, e := range evs {
		if e.Ph == "C" {
			k := fmt.Sprintf("%d %s", *e.Pid, e.Name)
			got[k] = append(got[k], e.Args["value"].(float64))
		}
	}
	for pid := range 2 {
		for _, m := range SampleMetrics() {
			if vs := got[fmt.Sprintf("%d %s", pid, m.Name)]; len(vs) != 2 {
				t.Errorf("process %d: counter %q has values %v, want 2", pid, m.Name, vs)
			}
		}
	}
	if vs := got["1 Bytes sent"]; len(got) != 2*len(SampleMetrics()) || fmt.Sprint(vs) != "[0 4.000000123e+09]" {
		t.Errorf("counters %v", got)
	}
}

func TestPerfettoGolden(t *testing.T) {
	for _, name := range []string{"tiny", "two-localities"} {
		a, err := ReadOTF2(goldenAnchor(name))
		if err != nil {
			t.Fatal(err)
		}
		_, evs := exportPerfetto(t, a)
		checkChromeTrace(t, evs)
		n := 0
		for _, e := range evs {
			if e.Ph == "X" {
				n++
			}
		}
		enters := 0
		for _, evs := range a.Events {
			for _, ev := range evs {
				if ev.Kind == OTF2Enter {
					enters++
				}
			}
		}
		if n != enters {
			t.Errorf("%s: %d slices for %d Enter events", name, n, enters)
		}
	}
}

func TestPerfettoUnmatched(t *testing.T) {
	a := readTaskArchive(t, []tev{enter(0, 1, "a", 1, 0)})
	err := WritePerfetto(&bytes.Buffer{}, a)
	if err == nil || !strings.Contains(err.Error(), `perfetto: location 0: region "a" entered at 1 and never left`) {
		t.Errorf("error %v", err)
	}
}

// perfettoPythonCheck is what a consumer written in another language
// checks: the file is JSON, and every flow has its start and end.
const perfettoPythonCheck = `
import json, sys, collections
doc = json.load(open(sys.argv[1]))
evs = doc["traceEvents"]
assert isinstance(evs, list) and evs, "no traceEvents"
flows = collections.defaultdict(lambda: {"s": 0, "f": 0})
for e in evs:
    assert e["ph"] in "MXsfC", e
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
    if e["ph"] != "M":
        assert isinstance(e["ts"], (int, float)), e
    if e["ph"] in "sf":
        flows[(e["cat"], e["name"], e["id"])][e["ph"]] += 1
bad = {k: v for k, v in flows.items() if v != {"s": 1, "f": 1}}
assert not bad, bad
print(len(evs), "events", len(flows), "flows")
`

// TestPerfettoPython loads the export with python3's json module.
func TestPerfettoPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		missingTool(t, "python3 not found")
	}
	b, _ := exportPerfetto(t, readTaskArchive(t, twoLocalityRun))
	p := filepath.Join(t.TempDir(), "trace.json")
	must(t, os.WriteFile(p, b, 0o644))
	out, err := exec.Command(py, "-c", perfettoPythonCheck, p).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 check: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "5 flows") {
		t.Errorf("python3 check: %s", out)
	}
}

// A child that starts before its parent (clock offsets between
// localities) gets no flow, and the export says so.
func TestPerfettoBackwardFlow(t *testing.T) {
	a := readTaskArchive(t, []tev{
		enter(0, 10, "parent", 1, 0), leave(0, 20, "parent"),
		enter(1<<32, 5, "child", 2, 1), leave(1<<32, 8, "child"),
	})
	b, evs := exportPerfetto(t, a)
	checkChromeTrace(t, evs)
	for _, e := range evs {
		if e.Ph == "s" || e.Ph == "f" {
			t.Errorf("flow %+v", e)
		}
	}
	var doc struct {
		OtherData struct {
			FlowsLeftOut int `json:"flows_left_out"`
		} `json:"otherData"`
	}
	must(t, json.Unmarshal(b, &doc))
	if doc.OtherData.FlowsLeftOut != 1 {
		t.Errorf("flows_left_out %d, want 1", doc.OtherData.FlowsLeftOut)
	}
}
