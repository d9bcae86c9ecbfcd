//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/trace"
)

// writeRunTrace writes the archive of a small run into a new directory: two
// localities of two lanes; on each lane a task that spawns one on the other
// locality; one task yields and resumes. With broken, the last task of
// locality 1 is never left and names a parent that does not exist. It
// returns the directory.
func writeRunTrace(t *testing.T, broken bool) string {
	t.Helper()
	dir := t.TempDir()
	w, err := trace.CreateOTF2(trace.OTF2Config{Dir: dir, Name: "tessera", Creator: "tessera trace test"})
	if err != nil {
		t.Fatal(err)
	}
	guid := w.Attribute("GUID", "", trace.OTF2TypeUint64)
	parent := w.Attribute("Parent GUID", "", trace.OTF2TypeUint64)
	node := w.SystemTreeNode("host", "node", trace.OTF2UndefinedU32)
	cpu := w.MetricMember(trace.OTF2MetricMemberDef{Name: "CPU Utilization", Mode: trace.OTF2MetricModeAbsolutePoint,
		ValueType: trace.OTF2TypeDouble, Base: trace.OTF2BaseDecimal, Unit: "%"})
	metric := w.MetricClass([]uint32{cpu}, trace.OTF2OccurrenceAsynchronous, trace.OTF2RecorderKindUnknown)
	main := w.Region(trace.OTF2RegionDef{Name: "main", Role: trace.OTF2RoleTask, Paradigm: trace.OTF2ParadigmUser})
	work := w.Region(trace.OTF2RegionDef{Name: "work", Role: trace.OTF2RoleTask, Paradigm: trace.OTF2ParadigmUser})
	step := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for loc := uint64(0); loc < 2; loc++ {
		g := w.LocationGroup(fmt.Sprintf("locality %d", loc), node)
		for lane := uint64(0); lane < 2; lane++ {
			ew, err := w.Location(loc<<32+lane, fmt.Sprintf("lane %d", lane), g)
			step(err)
			me := 10*loc + lane + 1 // GUIDs 1, 2, 11, 12
			other := 10*(1-loc) + lane + 1
			step(ew.Metric(0, metric, trace.DoubleMetric(float64(me))))
			step(ew.Enter(100, main, trace.U64Attr(guid, me), trace.U64Attr(parent, 0)))
			step(ew.Leave(200, main))
			child := 100 + me
			step(ew.Enter(300, work, trace.U64Attr(guid, child), trace.U64Attr(parent, other)))
			if broken && loc == 1 && lane == 1 {
				step(ew.Enter(350, work, trace.U64Attr(guid, 999), trace.U64Attr(parent, 4242)))
				continue
			}
			step(ew.Leave(400, work))
			step(ew.Enter(500, work, trace.U64Attr(guid, child), trace.U64Attr(parent, other)))
			step(ew.Leave(550, work))
		}
	}
	step(w.Close())
	return dir
}

// runTrace runs `tessera trace ARGS...`.
func runTrace(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = dispatch(append([]string{"trace"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestTraceSummary(t *testing.T) {
	dir := writeRunTrace(t, false)
	csvPath := filepath.Join(t.TempDir(), "profile.csv")
	code, out, errOut := runTrace("summary", "-per-locality", dir, "-csv", csvPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Wall 550 ns; each lane busy 100 (main) + 100 + 50 (work).
	for _, want := range []string{
		"tessera.otf2: 2 localities, 4 lanes, 28 events, written by tessera trace test",
		"wall time 550ns",
		" all 4 1µs 2.2µs 45.5%",
		" work 4 600ns 150ns 150ns 150ns 27.27",
		"profile of locality 1",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.TrimSpace(want)) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "locality,region,count") || !strings.HasPrefix(lines[5], "all,work,4,600,150,150,150,") {
		t.Errorf("CSV:\n%s", b)
	}
}

func TestTraceExportPerfetto(t *testing.T) {
	dir := writeRunTrace(t, false)
	out := filepath.Join(t.TempDir(), "trace.json")
	code, stdout, errOut := runTrace("export", "--format", "perfetto", dir, "-o", out)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, stdout, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runTrace("export", "-format=perfetto", filepath.Join(dir, "tessera.otf2"))
	if code != 0 || stdout != string(b) {
		t.Errorf("to stdout: exit %d, output differs from -o's", code)
	}
	var doc struct {
		TraceEvents []struct {
			Ph   string `json:"ph"`
			Name string `json:"name"`
			Pid  int    `json:"pid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range doc.TraceEvents {
		count[e.Ph+" "+e.Name]++
	}
	// 4 main + 8 pieces of work; spawns across localities and resumes.
	for k, want := range map[string]int{"X main": 4, "X work": 8, "s spawn": 4, "f spawn": 4, "s resume": 4, "f resume": 4,
		"C CPU Utilization (lane 0)": 2, "M process_name": 2, "M thread_name": 4} {
		if count[k] != want {
			t.Errorf("%d %q events, want %d (all: %v)", count[k], k, want, count)
		}
	}
}

func TestTraceCheck(t *testing.T) {
	golden := filepath.Join("..", "..", "trace", "testdata", "otf2")
	truncated := writeRunTrace(t, false)
	evt := filepath.Join(truncated, "tessera", "4294967296.evt")
	b, err := os.ReadFile(evt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evt, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	badMagic := writeRunTrace(t, false)
	anchor := filepath.Join(badMagic, "tessera.otf2")
	if b, err = os.ReadFile(anchor); err != nil {
		t.Fatal(err)
	}
	b[3] = 'X'
	if err := os.WriteFile(anchor, b, 0o644); err != nil {
		t.Fatal(err)
	}
	noEvents := writeRunTrace(t, false)
	if err := os.Remove(filepath.Join(noEvents, "tessera", "1.evt")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		code      int
		want      []string
	}{
		{"wrong magic", badMagic, 1, []string{"tessera.otf2", "not an OTF2 anchor file: magic"}},
		{"missing event file", noEvents, 1, []string{"location 1", "1.evt: no such file"}},
		{"sound", writeRunTrace(t, false), 0, []string{"tessera.otf2: sound (4 locations, 28 events)"}},
		{"golden", filepath.Join(golden, "two-localities"), 0, []string{"traces.otf2: sound"}},
		{"broken", writeRunTrace(t, true), 1, []string{
			"tessera.otf2: 3 problem(s):",
			`  location 4294967297: region "work" entered and never left`,
			`  location 4294967297: region "work" entered and never left`,
			"  task 999 (location 4294967297 event 4): parent GUID 4242 is no task of the archive",
		}},
		{"golden with an unknown parent", filepath.Join(golden, "tiny"), 1, []string{"parent GUID 7 is no task of the archive"}},
		{"truncated event file", truncated, 1, []string{"4294967296.evt", "unexpected end of data"}},
		{"no archive", t.TempDir(), 1, []string{"no OTF2 archive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runTrace("check", tc.dir)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", w, out, errOut)
				}
			}
		})
	}
}

func TestTraceUsage(t *testing.T) {
	dir := writeRunTrace(t, false)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: tessera trace"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"help"}, 0, "export --format perfetto"},
		{[]string{"export", dir}, 2, `--format must be perfetto, not ""`},
		{[]string{"export", "--format", "svg", dir}, 2, `--format must be perfetto, not "svg"`},
		{[]string{"summary"}, 2, "want one ARCHIVE argument, got 0"},
		{[]string{"check", dir, dir}, 2, "want one ARCHIVE argument, got 2"},
		{[]string{"summary", "-bogus", dir}, 2, "flag provided but not defined: -bogus"},
		{[]string{"summary", "-csv", filepath.Join(dir, "no", "such", "dir.csv"), dir}, 1, "no such file"},
	} {
		code, out, errOut := runTrace(tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("tessera trace %q: exit %d, want %d and %q\nstdout: %s\nstderr: %s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
}

// TestTraceRealRun traces a run of the hello example on three real
// processes and reads its archive back with the three commands.
func TestTraceRealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the hello example")
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/tessera-amt/tessera/examples/hello").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "trace")
	code, out, errOut := runHelperJob(t, runOptions{N: 3, Grace: 10 * time.Second, Prog: filepath.Join(bin, "hello"),
		Env: append(os.Environ(), "TESSERA_TRACE="+dir, "TESSERA_TRACE_SAMPLE=1ms")})
	if code != 0 {
		t.Fatalf("hello on 3 localities: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	code, out, errOut = runTrace("check", dir)
	if code != 0 || !strings.Contains(out, "tessera.otf2: sound (") {
		t.Errorf("check: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = runTrace("summary", dir)
	if code != 0 || !strings.Contains(out, ": 3 localities, ") || !strings.Contains(out, " main ") || !strings.Contains(out, "hello.greet") {
		t.Errorf("summary: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = runTrace("export", "--format", "perfetto", dir)
	if code != 0 {
		t.Fatalf("export: exit %d\nstderr: %s", code, errOut)
	}
	var doc struct {
		TraceEvents []struct {
			Ph   string `json:"ph"`
			Name string `json:"name"`
			ID   uint64 `json:"id"`
			Pid  int    `json:"pid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("export: %v", err)
	}
	from := map[uint64]int{}
	across := 0
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "s":
			from[e.ID] = e.Pid
		case "f":
			if p, ok := from[e.ID]; ok && p != e.Pid {
				across++
			}
		}
	}
	// main on locality 0 spawns a greeting on each locality.
	if across == 0 {
		t.Errorf("export: no flow from one locality to another:\n%s", out)
	}
}
