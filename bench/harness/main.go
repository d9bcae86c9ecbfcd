// Command harness runs the benchmark sections and writes docs/benchmarks.md:
// what `make bench` runs after bench/run.sh has built the programs.
//
//	go run ./bench/harness -bin DIR [section...]   run sections, then report
//	go run ./bench/harness -report                 only render the report
//
// Each section (plans.go) is a list of phases; a phase runs its jobs once a
// repetition, in reversed order every other repetition where the
// measurement pairs neighbours. Every job's benchmark lines (of locality 0,
// for a `tessera run` job) go to bench/results/NAME.txt under the
// configuration lines "job", "cmd" and "rep" that bench/report selects and
// pairs by; the file starts with the machine, commit and date. A section
// that fails keeps its previous file and is named in the report, and the
// harness exits 1 after the other sections ran. It owns no statistics:
// bench/report computes every figure from the files.
//
// The environment sets the counts (REPS, LREPS, and each section's own, as
// plans.go reads them with count and words) and SECTIONS (words that
// select sections by name, like the arguments).
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/bench/report"
)

// A job is one command whose benchmark lines are kept.
type job struct {
	name    string
	argv    []string // argv[0] "@NAME" is the program NAME in the bin directory
	env     []string // added to the environment
	group   string   // a job of a group that fails drops the group's lines and the group's later jobs
	parse   func(out string) []string
	timed   string // when set, the job's own line: this name with the job's wall time
	timeout time.Duration
}

// A phase runs jobs(rep) for rep 1..reps.
type phase struct {
	reps int
	jobs func(rep int) []job
}

// A plan is one section's run.
type plan struct {
	name     string
	phases   []phase
	unset    []string                   // variables removed from every job's environment
	check    func(lines []string) error // of every kept line, after the run
	optional bool                       // runs only when SECTIONS names it exactly
}

// runner runs jobs and keeps what they print.
type runner struct {
	bin, tmp string
	failed   map[string]bool // groups that failed in this section
}

func main() {
	bin := flag.String("bin", "", "directory of the programs bench/run.sh built")
	results := flag.String("results", "bench/results", "directory of the result files")
	out := flag.String("out", "docs/benchmarks.md", "the report to write")
	only := flag.Bool("report", false, "only render the report from the result files")
	flag.Parse()
	sections := report.Sections()
	var failed []string
	if !*only {
		if *bin == "" {
			fail(errors.New("-bin is required to run the sections"))
		}
		words := append(flag.Args(), strings.Fields(os.Getenv("SECTIONS"))...)
		failed = runAll(*bin, *results, words)
	}
	files, err := report.ReadDir(*results, sections)
	if err != nil {
		fail(err)
	}
	var b bytes.Buffer
	if err := report.Render(&b, sections, files, failed); err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fail(err)
	}
	say("wrote %s", *out)
	if len(failed) > 0 {
		say("sections that failed: %s", strings.Join(failed, ", "))
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "harness:", err)
	os.Exit(2)
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// runAll runs the plans selected by words (all without words) and returns
// the names of those that failed.
func runAll(bin, results string, words []string) []string {
	bin, _ = filepath.Abs(bin)
	header := headerLines(bin)
	var failed []string
	for _, p := range plans(bin) {
		if !chosen(p, words) {
			continue
		}
		say("==== section %s", p.name)
		if err := runPlan(p, bin, filepath.Join(results, p.name+".txt"), header); err != nil {
			say("section %s FAILED, its previous results stay: %v", p.name, err)
			failed = append(failed, p.name)
		}
	}
	return failed
}

// chosen says whether words select p: an optional plan only when a word
// is its name.
func chosen(p plan, words []string) bool {
	return selected(p.name, words) && (!p.optional || slices.Contains(words, p.name))
}

func selected(name string, words []string) bool {
	if len(words) == 0 {
		return true
	}
	for _, w := range words {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// runPlan runs p and writes its result file (only when it succeeds).
func runPlan(p plan, bin, path, header string) error {
	tmp, err := os.MkdirTemp("", "bench-"+p.name)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := &runner{bin: bin, tmp: tmp, failed: map[string]bool{}}
	var body bytes.Buffer
	type kept struct {
		group string
		text  string
	}
	var all []kept
	for _, ph := range p.phases {
		for rep := 1; rep <= ph.reps; rep++ {
			for _, j := range ph.jobs(rep) {
				if j.group != "" && r.failed[j.group] {
					continue
				}
				say("%s: repetition %d of %d: %s", p.name, rep, ph.reps, j.name)
				lines, shown, err := r.run(j, p.unset)
				if err != nil && j.group != "" {
					say("dropping the %s results (a partial baseline is no baseline): %v", j.group, err)
					r.failed[j.group] = true
					continue
				}
				if err != nil {
					return fmt.Errorf("%s: %w", j.name, err)
				}
				text := fmt.Sprintf("job: %s\ncmd: %s\nrep: %d\n", j.name, shown, rep)
				for _, l := range lines {
					text += l + "\n"
				}
				all = append(all, kept{j.group, text})
			}
		}
	}
	var lines []string
	body.WriteString(header)
	reps := 0
	for _, ph := range p.phases {
		reps = max(reps, ph.reps)
	}
	fmt.Fprintf(&body, "section: %s\nreps: %d\n", p.name, reps)
	for _, k := range all {
		if k.group != "" && r.failed[k.group] {
			continue
		}
		body.WriteString(k.text)
		for _, l := range strings.Split(k.text, "\n") {
			if strings.HasPrefix(l, "Benchmark") {
				lines = append(lines, l)
			}
		}
	}
	if p.check != nil {
		if err := p.check(lines); err != nil {
			return err
		}
	}
	os.Stderr.WriteString(body.String())
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", body.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// run runs j and returns its benchmark lines and its command as shown.
func (r *runner) run(j job, unset []string) ([]string, string, error) {
	argv := append([]string(nil), j.argv...)
	for i, a := range argv {
		if strings.HasPrefix(a, "@") {
			argv[i] = filepath.Join(r.bin, a[1:])
		}
		argv[i] = strings.ReplaceAll(argv[i], "{tmp}", r.tmp)
	}
	shown := strings.Join(j.env, " ")
	if shown != "" {
		shown += " "
	}
	shown += strings.NewReplacer(r.bin+"/", "", r.tmp+"/", "").Replace(strings.Join(argv, " "))
	if j.timeout == 0 {
		j.timeout = 10 * time.Minute
	}
	var out []byte
	var err error
	var took time.Duration
	for try := 1; try <= 3; try++ {
		a := append([]string(nil), argv...)
		for i := range a {
			if strings.Contains(a[i], "{freeport}") {
				port, perr := exec.Command(filepath.Join(r.bin, "pingpong"), "-mode", "freeport").Output()
				if perr != nil {
					return nil, shown, perr
				}
				a[i] = strings.ReplaceAll(a[i], "{freeport}", strings.TrimSpace(string(port)))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
		cmd := exec.CommandContext(ctx, a[0], a[1:]...)
		cmd.Env = environ(unset, j.env)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err = cmd.Output()
		took = time.Since(start)
		cancel()
		if err == nil {
			break
		}
		err = fmt.Errorf("%s: %w\n%s", shown, err, indent(stderr.String()))
		if !strings.Contains(stderr.String(), "address already in use") {
			return nil, shown, err
		}
		say("a port was taken (try %d of 3)", try)
	}
	if err != nil {
		return nil, shown, err
	}
	var lines []string
	if j.parse != nil {
		lines = j.parse(string(out))
	} else {
		lines = benchLines(string(out))
	}
	if j.timed != "" {
		lines = append(lines, fmt.Sprintf("Benchmark%s 1 %.4f s/op", j.timed, took.Seconds()))
	}
	return lines, shown, nil
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

func environ(unset, add []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, u := range unset {
			drop = drop || k == u
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}

// locality0 returns the lines of out printed by locality 0 of a `tessera
// run` job (without their "[L0] "), or every line of a plain program.
func locality0(out string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "[L") {
			var ok bool
			if l, ok = strings.CutPrefix(l, "[L0] "); !ok {
				continue
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// benchLines returns the benchmark lines of out (of locality 0).
func benchLines(out string) []string {
	var lines []string
	for _, l := range locality0(out) {
		if strings.HasPrefix(l, "Benchmark") && len(strings.Fields(l)) >= 4 {
			lines = append(lines, l)
		}
	}
	return lines
}

// headerLines are the configuration lines of every result file.
func headerLines(bin string) string {
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	dirty, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	c := strings.TrimSpace(string(commit))
	if len(bytes.TrimSpace(dirty)) > 0 {
		c += " (with uncommitted changes)"
	}
	return fmt.Sprintf("machine: %s\ncommit: %s\ndate: %s\n", machine(bin), c, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

// machine describes the machine in one line: cores, CPU, kernel, idle
// driver, Go and BLAS.
func machine(bin string) string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := strings.TrimSpace(readFile("/proc/sys/kernel/osrelease"))
	idle := cmp.Or(strings.TrimSpace(readFile("/sys/devices/system/cpu/cpuidle/current_driver")), "unknown")
	if hp := strings.TrimSpace(readFile("/sys/module/haltpoll/parameters/guest_halt_poll_ns")); hp != "" {
		idle += " (guest_halt_poll_ns " + hp + ")"
	}
	blas := blasOf(filepath.Join(bin, "tessera"))
	if ob := blasOf(filepath.Join(bin, "tessera-openblas")); ob != "" {
		blas += " and, in the openblas rows, " + ob
		if ct := os.Getenv("OPENBLAS_CORETYPE"); ct != "" {
			blas += ", OPENBLAS_CORETYPE=" + ct + " in the environment"
		}
	}
	return fmt.Sprintf("%d cores, %s, Linux %s, idle driver %s, %s; BLAS: %s", goruntime.NumCPU(), cpu, kernel, idle, goruntime.Version(), blas)
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func blasOf(tessera string) string {
	out, err := exec.Command(tessera, "info").Output()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "blas"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// agree checks that every value in unit on lines is within rel of the first.
func agree(unit string, rel float64) func([]string) error {
	return func(lines []string) error {
		var first float64
		n := 0
		for _, l := range lines {
			f := strings.Fields(l)
			for i := 2; i+1 < len(f); i += 2 {
				if f[i+1] != unit {
					continue
				}
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return err
				}
				if n == 0 {
					first = v
				} else if math.Abs(v-first) > rel*math.Abs(first) {
					return fmt.Errorf("the runs' %s differ: %g against %g", unit, v, first)
				}
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("no run printed a %s", unit)
		}
		return nil
	}
}
