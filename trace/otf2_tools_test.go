package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The tests in this file check archives with the reference readers:
// otf2-print (Debian package otf2-tools) and python3-otf2. Install them
// with `make test-deps` (scripts/test-deps.sh). When they are missing the
// tests skip with a loud reason, and fail instead under CI=true.

func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + " (install with `make test-deps` or scripts/test-deps.sh)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", msg)
	}
	t.Skipf("SKIPPED, NOT TESTED: %s", msg)
}

func needOTF2Print(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("otf2-print")
	if err != nil {
		missingTool(t, "otf2-print not found")
	}
	return p
}

// pythonWithOTF2 finds a python3 that imports otf2: the one on PATH, or the
// system one (python3-otf2 installs for /usr/bin/python3, which a pyenv or
// venv python3 on PATH does not see).
func pythonWithOTF2(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		p, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", "import otf2").Run() == nil {
			return p
		}
		tried = append(tried, p)
	}
	missingTool(t, "no python3 that can `import otf2` (tried %v)", tried)
	return ""
}

var otf2PrintEvent = regexp.MustCompile(`^(ENTER|LEAVE|METRIC)\s+(\d+)\s+(\d+)\s+(.*)$`)

// checkOTF2Print runs `otf2-print --silent -Werror` (exit 0, empty stderr)
// and `otf2-print` on an archive, and checks the number of event lines per
// location.
func checkOTF2Print(t *testing.T, anchor string, counts map[uint64]int) string {
	t.Helper()
	tool := needOTF2Print(t)
	var stderr bytes.Buffer
	cmd := exec.Command(tool, "--silent", "-Werror", anchor)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("otf2-print --silent -Werror %s: %v\nstderr: %s", anchor, err, stderr.String())
	}
	stderr.Reset()
	cmd = exec.Command(tool, anchor)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("otf2-print %s: %v\nstderr: %s", anchor, err, stderr.String())
	}
	got := map[uint64]int{}
	for _, l := range strings.Split(string(out), "\n") {
		if m := otf2PrintEvent.FindStringSubmatch(l); m != nil {
			id, _ := strconv.ParseUint(m[2], 10, 64)
			got[id]++
		}
	}
	for id, n := range counts {
		if got[id] != n {
			t.Errorf("otf2-print: location %d: %d events, want %d", id, got[id], n)
		}
	}
	return string(out)
}

// TestOTF2RealReaders writes a small archive and reads it with otf2-print
// and python3-otf2.
func TestOTF2RealReaders(t *testing.T) {
	anchor, counts := writeSmallArchive(t, t.TempDir())
	t.Run("otf2-print", func(t *testing.T) {
		out := checkOTF2Print(t, anchor, counts)
		// The lines Traveler parses.
		for _, re := range []string{
			`(?m)^ENTER\s+4294967297\s+1001\s+Region: "fib_action" <\d+>$`,
			`(?m)^LEAVE\s+0\s+1015\s+Region: "inner_loop" <\d+>$`,
			`(?m)^\s+ADDITIONAL ATTRIBUTES: \("GUID" <0>; UINT64; 10\), \("Parent GUID" <1>; UINT64; 5\)$`,
			`(?m)^METRIC\s+1\s+1021\s+Metric: \d+, 1 Value: \("CPU Utilization" <\d+>; DOUBLE; 20.5\)$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("otf2-print output has no line matching %s", re)
			}
		}
		// Our own printer agrees with otf2-print on this archive too.
		a, err := ReadOTF2(anchor)
		if err != nil {
			t.Fatal(err)
		}
		var ours bytes.Buffer
		must(t, a.PrintEvents(&ours))
		if ours.String() != out {
			t.Errorf("PrintEvents differs from otf2-print:\n%s\n---- otf2-print:\n%s", ours.String(), out)
		}
	})
	t.Run("python3-otf2", func(t *testing.T) {
		py := pythonWithOTF2(t)
		const script = `
import json, sys, otf2
counts, last, bad, tasks = {}, {}, [], 0
with otf2.reader.open(sys.argv[1]) as tr:
    for loc, ev in tr.events:
        lid = str(loc.group.name) + "/" + str(loc.name)
        counts[lid] = counts.get(lid, 0) + 1
        if ev.time < last.get(lid, 0):
            bad.append("time goes backwards on " + lid)
        last[lid] = ev.time
        attrs = {a.name: v for a, v in ev.attributes.items()} if ev.attributes else {}
        if type(ev).__name__ == "Enter" and "GUID" in attrs:
            tasks += 1
            if "Parent GUID" not in attrs:
                bad.append("task without Parent GUID")
print(json.dumps({"counts": counts, "bad": bad, "tasks": tasks}))
`
		var stderr bytes.Buffer
		cmd := exec.Command(py, "-c", script, anchor)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python3-otf2: %v\n%s", err, stderr.String())
		}
		var res struct {
			Counts map[string]int
			Bad    []string
			Tasks  int
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("python3-otf2 output %q: %v", out, err)
		}
		if len(res.Bad) > 0 {
			t.Errorf("python3-otf2: %v", res.Bad)
		}
		if res.Tasks != 12 {
			t.Errorf("python3-otf2: %d tasks with GUID, want 12", res.Tasks)
		}
		want := map[string]int{}
		for id, n := range counts {
			want[fmt.Sprintf("locality %d/worker-thread#%d", id>>32, id&0xffffffff)] = n
		}
		if fmt.Sprint(res.Counts) != fmt.Sprint(want) {
			t.Errorf("python3-otf2 events per location: %v, want %v", res.Counts, want)
		}
	})
	t.Run("otf2-snapshots", func(t *testing.T) {
		// otf2-snapshots reads every event and appends snapshot files; it
		// changes the archive, so it runs on a copy.
		tool, err := exec.LookPath("otf2-snapshots")
		if err != nil {
			missingTool(t, "otf2-snapshots not found")
		}
		dir := t.TempDir()
		copyDir(t, filepath.Dir(anchor), dir)
		copied := filepath.Join(dir, filepath.Base(anchor))
		var stderr bytes.Buffer
		cmd := exec.Command(tool, "-n", "3", copied)
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil || stderr.Len() > 0 {
			t.Fatalf("otf2-snapshots: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
		}
		a, err := ReadOTF2(copied)
		if err != nil {
			t.Fatalf("reading the archive back after otf2-snapshots: %v", err)
		}
		for id, n := range counts {
			if len(a.Events[id]) != n {
				t.Errorf("after otf2-snapshots: location %d: %d events, want %d", id, len(a.Events[id]), n)
			}
		}
	})
}
