package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildProgram compiles the launcher and this program into a temporary
// directory.
func buildProgram(t *testing.T) (tessera, als string) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/tessera-amt/tessera/cmd/tessera", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "tessera"), filepath.Join(dir, "als")
}

// runProgram runs `tessera run -n n als args...` and returns its output
// and exit code.
func runProgram(t *testing.T, tessera, als string, n int, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tessera, append([]string{"run", "-n", fmt.Sprint(n), als}, args...)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("tessera run -n %d als %q did not finish: %s", n, args, out)
	}
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

// TestProcessFactorsDoNotDependOnLocalities runs the program as 1, 3 and 4
// real processes, on generated ratings and on the same ratings read from a
// file: every run writes the same factor files, byte for byte, and the loss
// goes down every iteration.
func TestProcessFactorsDoNotDependOnLocalities(t *testing.T) {
	tessera, als := buildProgram(t)
	dir := t.TempDir()
	ratings := filepath.Join(dir, "ratings.csv")
	const syn = "300,200,0.1" // dense enough that every item is rated, so the file holds them all
	if out, err := exec.Command(als, "--synthetic", syn, "--seed", "5", "--make-ratings", ratings).CombinedOutput(); err != nil {
		t.Fatalf("als --make-ratings: %v\n%s", err, out)
	}
	common := []string{"--factors", "6", "--iterations", "3", "--seed", "5"}
	var want map[string][]byte
	for _, run := range []struct {
		n     int
		input []string
	}{
		{1, []string{"--synthetic", syn}},
		{3, []string{"--synthetic", syn}},
		{4, []string{"--synthetic", syn}},
		{4, []string{"--ratings", ratings}},
		{1, []string{"--ratings", ratings}},
	} {
		outDir := filepath.Join(dir, fmt.Sprintf("out-%d-%d", run.n, len(run.input[1])))
		args := append(append(append([]string{}, run.input...), common...), "--output", outDir)
		out, code := runProgram(t, tessera, als, run.n, args...)
		if code != 0 {
			t.Fatalf("%d localities %q: exit %d\n%s", run.n, args, code, out)
		}
		checkLossFalls(t, out)
		if st, err := os.Stat(ratings); err == nil && run.input[0] == "--ratings" {
			// The file's size, which the memory figures are judged against.
			if want := fmt.Sprintf("s (a file of %d bytes)\n", st.Size()); !strings.Contains(out, want) {
				t.Errorf("%d localities %q: no %q in\n%s", run.n, args, want, out)
			}
		}
		got := map[string][]byte{}
		for _, f := range []string{"X.csv", "Y.csv"} {
			b, err := os.ReadFile(filepath.Join(outDir, f))
			if err != nil {
				t.Fatal(err)
			}
			got[f] = b
		}
		if want == nil {
			want = got
			if !bytes.HasPrefix(got["Y.csv"], []byte("movieId,f1,f2,f3,f4,f5,f6\n1,")) {
				t.Fatalf("Y.csv starts %q", got["Y.csv"][:min(60, len(got["Y.csv"]))])
			}
			continue
		}
		for f := range want {
			// The file names movies 3i+1 where the generator names them
			// i+1: compare the factors, not the ids.
			if !equalFactors(got[f], want[f]) {
				t.Errorf("%d localities %q: %s differs from the 1-locality run", run.n, run.input, f)
			}
		}
	}
}

// equalFactors compares two factor files column by column after the id.
func equalFactors(a, b []byte) bool {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		_, fa, _ := strings.Cut(la[i], ",")
		_, fb, _ := strings.Cut(lb[i], ",")
		if fa != fb {
			return false
		}
	}
	return true
}

// checkLossFalls checks locality 0's iteration lines: the loss goes down.
func checkLossFalls(t *testing.T, out string) {
	t.Helper()
	prev, lines := 0.0, 0
	for _, l := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(l, "[L0] iteration ")
		if !ok {
			continue
		}
		var k, of int
		var secs, loss float64
		if _, err := fmt.Sscanf(rest, "%d/%d: %f s, loss %g", &k, &of, &secs, &loss); err != nil {
			t.Fatalf("iteration line %q: %v", l, err)
		}
		if lines > 0 && !(loss < prev) {
			t.Errorf("loss went up at iteration %d: %g after %g", k, loss, prev)
		}
		prev = loss
		lines++
	}
	if lines == 0 {
		t.Fatalf("no iteration lines in:\n%s", out)
	}
}

// TestProcessBadInput: a missing file, a ragged file and bad flag values
// end the job with a non-zero exit and a message naming the problem.
func TestProcessBadInput(t *testing.T) {
	tessera, als := buildProgram(t)
	dir := t.TempDir()
	ragged := filepath.Join(dir, "ragged.csv")
	if err := os.WriteFile(ragged, []byte("userId,movieId,rating,timestamp\n1,2,3,4\n5,6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "absent.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ratings", missing}, missing + ": no such file"},
		{[]string{"--ratings", ragged}, "ragged.csv line 3: 2 fields"},
		{[]string{"--synthetic", "100,100,0.9"}, "DENSITY must be in (0, 0.5]"},
		{[]string{"--synthetic", "100,100,0.1", "--factors", "x"}, `invalid value "x" for flag -factors`},
		{[]string{"--synthetic", "100,100,0.1", "--iterations", "0"}, "--iterations 0"},
	} {
		out, code := runProgram(t, tessera, als, 2, c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("als %q: exit %d, output:\n%s\nwant a failure naming %q", c.args, code, out, c.want)
		}
	}
}

// TestProcessHelpAndMakeRatings: --help exits 0 listing the flags, and
// --make-ratings says what it wrote.
func TestProcessHelpAndMakeRatings(t *testing.T) {
	_, als := buildProgram(t)
	out, err := exec.Command(als, "--help").CombinedOutput()
	if err != nil {
		t.Errorf("als --help: %v, want exit 0\n%s", err, out)
	}
	for _, flag := range []string{"-ratings", "-synthetic", "-make-ratings", "-quiet", "-iterations", "-solver", "-cg-steps"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("als --help does not list %s:\n%s", flag, out)
		}
	}
	path := filepath.Join(t.TempDir(), "r.csv")
	out, err = exec.Command(als, "--synthetic", "300,200,0.05", "--make-ratings", path).CombinedOutput()
	if err != nil {
		t.Fatalf("als --make-ratings: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(b), "\n") - 1 // less the header
	want := fmt.Sprintf("als: wrote %d ratings (300 users x 200 items) to %s in ", n, path)
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("als --make-ratings printed %q, want it to start %q", out, want)
	}
}

// TestProcessMemory: the program keeps its heap near the live data
// (gcPercent) unless GOGC says otherwise, and after the last iteration no
// array is left alive (the gathered ones are released).
func TestProcessMemory(t *testing.T) {
	_, als := buildProgram(t)
	peak := func(gogc string) (kib, arrays int) {
		t.Helper()
		cmd := exec.Command(als, "--synthetic", "20000,4000,0.005", "--factors", "64", "--iterations", "4",
			"--memory-every", "4", "--loss-every", "0", "--quiet")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOGC=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if gogc != "" {
			cmd.Env = append(cmd.Env, "GOGC="+gogc)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("als (GOGC %q): %v\n%s", gogc, err, out)
		}
		m := regexp.MustCompile(`memory: locality 0, iteration 4: peak RSS (\d+) KiB, (\d+) live arrays`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("als (GOGC %q) printed no memory line after the last iteration:\n%s", gogc, out)
		}
		kib, _ = strconv.Atoi(m[1])
		arrays, _ = strconv.Atoi(m[2])
		return kib, arrays
	}
	own, ownArrays := peak("")
	def, defArrays := peak("100")
	t.Logf("peak RSS %d KiB (GOGC %d), %d KiB (GOGC 100)", own, gcPercent, def)
	if float64(own) > 0.85*float64(def) {
		t.Errorf("peak RSS %d KiB with the program's GOGC %d, %d KiB with GOGC=100: want at most 0.85 of it", own, gcPercent, def)
	}
	if ownArrays != 0 || defArrays != 0 {
		t.Errorf("%d and %d arrays alive after the last iteration, want none", ownArrays, defArrays)
	}
}
