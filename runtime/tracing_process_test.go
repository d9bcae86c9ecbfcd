package runtime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/trace"
)

// The tracer in real processes: testdata/tracejob on four localities with
// TESSERA_TRACE set, its archive checked with the reference readers
// (otf2-print, python3-otf2, otf2-snapshots), which the tests need: they
// skip loudly without them, and fail under CI=true.

var tracejob = &testProgram{name: "tracejob"}

func needTool(t *testing.T, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	msg := what + " (install with `make test-deps` or scripts/test-deps.sh)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", msg)
	}
	t.Skipf("SKIPPED, NOT TESTED: %s", msg)
}

// otf2Tool returns the path of an otf2-tools program.
func otf2Tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	needTool(t, name+" not found", err == nil)
	return p
}

// pythonOTF2 returns a python3 that imports otf2 (python3-otf2 installs for
// /usr/bin/python3, which a python3 of a venv on PATH may not see).
func pythonOTF2(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import otf2").Run() == nil {
			return p
		}
	}
	needTool(t, "no python3 that can `import otf2`", false)
	return ""
}

// runTool runs a tool that must exit 0 with nothing on stderr, and returns
// its stdout.
func runTool(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("%s %s: %v\nstderr: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// pyEvent is an event as python3-otf2 reads it.
type pyEvent struct {
	Loc    uint64 `json:"l"`
	Time   uint64 `json:"t"`
	Kind   string `json:"k"`
	Region string `json:"r"`
	GUID   uint64 `json:"g"`
	Parent uint64 `json:"p"`
}

const pyDump = `
import json, sys, otf2
with otf2.reader.open(sys.argv[1]) as tr:
    for loc, ev in tr.events:
        e = {"l": loc._ref, "t": ev.time, "k": type(ev).__name__}
        if hasattr(ev, "region"):
            e["r"] = ev.region.name
        if ev.attributes:
            a = {k.name: v for k, v in ev.attributes.items()}
            e["g"], e["p"] = a["GUID"], a["Parent GUID"]
        print(json.dumps(e))
`

// The lines of otf2-print that Traveler parses.
var (
	printEnterLeave = regexp.MustCompile(`^(ENTER|LEAVE)\s+(\d+)\s+(\d+)\s+Region: "([^"]+)" <\d+>$`)
	printAttrs      = regexp.MustCompile(`^\s+ADDITIONAL ATTRIBUTES: \("GUID" <\d+>; UINT64; (\d+)\), \("Parent GUID" <\d+>; UINT64; (\d+)\)$`)
	printMetric     = regexp.MustCompile(`^METRIC\s+\d+\s+\d+\s+Metric: \d+, 1 Value: \("[^"]+ \(locality \d+\)" <\d+>; (DOUBLE|UINT64); [0-9.]+\)$`)
)

// checkArchive checks a run's archive with every reader and returns the
// tasks it holds (GUID -> region) and their parents. A task's parent may be
// missing only when it was made on one of the dead localities.
func checkArchive(t *testing.T, anchor string, dead map[uint32]bool) (tasks map[uint64]string, parents map[uint64]uint64) {
	t.Helper()
	printer := otf2Tool(t, "otf2-print")
	py := pythonOTF2(t)
	runTool(t, printer, "--silent", "-Werror", anchor)

	// Traveler's view: ENTER/LEAVE lines with a quoted region name, each
	// ENTER followed by its GUID and Parent GUID.
	out := runTool(t, printer, anchor)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	enters, metrics, pending := 0, 0, false
	for sc.Scan() {
		line := sc.Text()
		if pending {
			if !printAttrs.MatchString(line) {
				t.Fatalf("otf2-print: ENTER not followed by its GUID and Parent GUID: %q", line)
			}
			pending = false
			continue
		}
		if m := printEnterLeave.FindStringSubmatch(line); m != nil {
			if m[1] == "ENTER" {
				enters++
				pending = true
			}
		} else if printMetric.MatchString(line) {
			metrics++
		} else if strings.HasPrefix(line, "ENTER") || strings.HasPrefix(line, "LEAVE") || strings.HasPrefix(line, "METRIC") {
			t.Fatalf("otf2-print: a line Traveler would not parse: %q", line)
		}
	}
	if enters == 0 || metrics == 0 {
		t.Fatalf("otf2-print: %d ENTER and %d METRIC lines", enters, metrics)
	}

	// python3-otf2's view.
	var stderr bytes.Buffer
	cmd := exec.Command(py, "-c", pyDump, anchor)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3-otf2: %v\n%s", err, stderr.String())
	}
	tasks, parents = map[uint64]string{}, map[uint64]uint64{}
	last := map[uint64]uint64{}
	open := map[uint64]string{}
	pyEnters := 0
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e pyEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("python3-otf2 printed %q: %v", line, err)
		}
		if e.Time < last[e.Loc] {
			t.Fatalf("location %d: time %d after %d", e.Loc, e.Time, last[e.Loc])
		}
		last[e.Loc] = e.Time
		switch e.Kind {
		case "Enter":
			pyEnters++
			if open[e.Loc] != "" {
				t.Fatalf("location %d: Enter %s inside %s", e.Loc, e.Region, open[e.Loc])
			}
			open[e.Loc] = e.Region
			if old, ok := tasks[e.GUID]; ok && old != e.Region {
				t.Fatalf("task %d is %q and %q", e.GUID, old, e.Region)
			}
			tasks[e.GUID], parents[e.GUID] = e.Region, e.Parent
		case "Leave":
			if open[e.Loc] != e.Region {
				t.Fatalf("location %d: Leave %s, entered %q", e.Loc, e.Region, open[e.Loc])
			}
			open[e.Loc] = ""
		}
	}
	if pyEnters != enters {
		t.Fatalf("python3-otf2 read %d Enter events, otf2-print printed %d", pyEnters, enters)
	}
	for g, p := range parents {
		if _, ok := tasks[p]; p != 0 && !ok && !dead[GUIDLocality(p)] {
			t.Fatalf("task %d (%s): its Parent GUID %d is no task of the trace", g, tasks[g], p)
		}
	}

	// Go's reader and checker agree.
	a, err := trace.ReadOTF2(anchor)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range trace.CheckOTF2(a) {
		var g, parent uint64
		var loc, ev int
		if _, err := fmt.Sscanf(p, "task %d (location %d event %d): parent GUID %d is no task of the archive", &g, &loc, &ev, &parent); err == nil && dead[GUIDLocality(parent)] {
			continue
		}
		t.Fatalf("CheckOTF2: %s", p)
	}

	// otf2-snapshots, on a copy (it adds to the archive).
	cp := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", filepath.Dir(anchor), cp).CombinedOutput(); err != nil {
		t.Fatalf("copying the archive: %v\n%s", err, out)
	}
	runTool(t, otf2Tool(t, "otf2-snapshots"), filepath.Join(cp, filepath.Base(anchor)))
	runTool(t, printer, "--silent", "-Werror", filepath.Join(cp, filepath.Base(anchor)))
	return tasks, parents
}

func TestProcessTracing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TESSERA_TRACE", dir)
	t.Setenv("TESSERA_TRACE_FORMAT", "otf2,perfetto")
	t.Setenv("TESSERA_TRACE_SAMPLE", "20ms")
	const n, rounds, depth = 4, 30, 6
	job := startProcesses(t, tracejob, n, "run", strconv.Itoa(rounds), strconv.Itoa(depth))
	total := 0
	for i, p := range job.Procs {
		select {
		case <-p.Done:
		case <-time.After(120 * time.Second):
			t.Fatalf("locality %d did not finish; stderr:\n%s", i, p.Stderr)
		}
		var got int
		if _, err := fmt.Sscanf(p.Stdout.String(), fmt.Sprintf("locality %d ok %%d", i), &got); err != nil || p.ExitCode() != 0 {
			t.Fatalf("locality %d: exit %d, stdout:\n%s\nstderr:\n%s", i, p.ExitCode(), p.Stdout, p.Stderr)
		}
		total += got
	}
	tasks, parents := checkArchive(t, filepath.Join(dir, trace.ArchiveName+".otf2"), nil)
	// Every task the program counted, and each locality's main task.
	if len(tasks) != total+n {
		t.Fatalf("%d tasks in the archive, the program ran %d (+%d main tasks)", len(tasks), total, n)
	}
	remote := 0
	for g, name := range tasks {
		if name == "tracejob.node" && GUIDLocality(g) != GUIDLocality(parents[g]) && parents[g] != 0 {
			remote++
		}
	}
	if remote == 0 {
		t.Fatal("no tracejob.node task made on another locality than its parent's")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "trace.json")); err != nil || !json.Valid(b) {
		t.Fatalf("trace.json: %v", err)
	}
	// Several event chunks per lane location.
	multi := false
	for l := range n {
		if info, err := os.Stat(filepath.Join(dir, trace.ArchiveName, strconv.Itoa(l<<32)+".evt")); err == nil && info.Size() > trace.OTF2MinChunkSize {
			multi = true
		}
	}
	if !multi {
		t.Error("no lane wrote more than one event chunk")
	}
	t.Logf("%d tasks, %d of them remote node calls", len(tasks), remote)
}

// A killed locality leaves no part; the survivors fail, still write theirs,
// and locality 0 merges an archive of the three that the readers accept.
func TestProcessTracingKilledLocality(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TESSERA_TRACE", dir)
	job := startProcesses(t, tracejob, 4, "spin", "3")
	job.WaitOutput(t, "ready", 60*time.Second)
	const victim = 2
	if err := job.Procs[victim].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, p := range job.Procs {
		if i == victim {
			continue
		}
		select {
		case <-p.Done:
		case <-time.After(30 * time.Second):
			t.Fatalf("locality %d still running 30 s after locality %d was killed; stderr:\n%s", i, victim, p.Stderr)
		}
		if p.ExitCode() == 0 {
			t.Errorf("locality %d exited 0", i)
		}
	}
	if log := job.Procs[0].Stderr.String(); !strings.Contains(log, "localities [2] left no events") {
		t.Errorf("locality 0 does not say which locality's events are missing:\n%s", log)
	}
	tasks, _ := checkArchive(t, filepath.Join(dir, trace.ArchiveName+".otf2"), map[uint32]bool{victim: true})
	a, err := trace.ReadOTF2(filepath.Join(dir, trace.ArchiveName+".otf2"))
	if err != nil {
		t.Fatal(err)
	}
	locs := map[uint64]bool{}
	for _, l := range a.Locations {
		locs[l.ID>>32] = true
	}
	if len(locs) != 3 || locs[victim] {
		t.Fatalf("the archive holds localities %v, want 0, 1, 3", locs)
	}
	t.Logf("%d tasks from the survivors", len(tasks))
}
