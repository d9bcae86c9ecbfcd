//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the job writes to it.
// If ready is not nil, it is closed once readyLines lines (each Write is
// one) have contained readyText.
type syncBuffer struct {
	mu         sync.Mutex
	buf        bytes.Buffer
	readyText  string
	readyLines int
	ready      chan struct{}
}

// newSyncBuffer returns a syncBuffer that closes ready after lines lines
// containing text.
func newSyncBuffer(text string, lines int) *syncBuffer {
	return &syncBuffer{readyText: text, readyLines: lines, ready: make(chan struct{})}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready != nil && b.readyLines > 0 && bytes.Contains(p, []byte(b.readyText)) {
		if b.readyLines--; b.readyLines == 0 {
			close(b.ready)
		}
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// helperJob returns the options of a job of n helper localities.
func helperJob(t *testing.T, n int, args ...string) runOptions {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return runOptions{
		N:     n,
		Grace: 10 * time.Second,
		Prog:  exe,
		Args:  args,
		Env:   append(os.Environ(), helperEnv+"=1"),
	}
}

// runHelperJob runs a job with a bound that only catches hangs.
func runHelperJob(t *testing.T, opts runOptions) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out, errOut syncBuffer
	code, err := runJob(ctx, opts, &out, &errOut)
	if err != nil {
		t.Fatalf("runJob: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	return code, out.String(), errOut.String()
}

// byLocality splits prefixed output into the lines of each locality. It
// fails the test on a line without a prefix.
func byLocality(t *testing.T, out string) map[int][]string {
	t.Helper()
	re := regexp.MustCompile(`^\[L(\d+)\] (.*)$`)
	m := map[int][]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" && out == "" {
			break
		}
		sub := re.FindStringSubmatch(l)
		if sub == nil {
			t.Fatalf("line without a locality prefix: %q", l)
		}
		loc, _ := strconv.Atoi(sub[1])
		m[loc] = append(m[loc], sub[2])
	}
	return m
}

func TestRunEnvironment(t *testing.T) {
	t.Parallel()
	const n = 4
	opts := helperJob(t, n, "env")
	// Stale values from an enclosing job must not leak through.
	opts.Env = append(opts.Env, "TESSERA_LOCALITY=77", "TESSERA_ROOT_FD=99", "TESSERA_SECRET=stale")
	code, stdout, stderr := runHelperJob(t, opts)
	if code != 0 {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", code, stderr)
	}

	lines := byLocality(t, stdout)
	if len(lines) != n {
		t.Fatalf("output from %d localities, want %d:\n%s", len(lines), n, stdout)
	}
	first := map[string]string{}
	for loc := range n {
		if len(lines[loc]) != 1 {
			t.Fatalf("locality %d printed %q, want one line", loc, lines[loc])
		}
		env := map[string]string{}
		for _, f := range strings.Fields(lines[loc][0]) {
			k, v, _ := strings.Cut(f, "=")
			env[k] = v
		}
		if env["loc"] != strconv.Itoa(loc) {
			t.Errorf("line prefixed [L%d] has TESSERA_LOCALITY=%q", loc, env["loc"])
		}
		if env["n"] != strconv.Itoa(n) {
			t.Errorf("locality %d: TESSERA_NUM_LOCALITIES=%q, want %d", loc, env["n"], n)
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(env["secret"]) {
			t.Errorf("locality %d: TESSERA_SECRET=%q, want 64 hex digits", loc, env["secret"])
		}
		if env["job"] == "" {
			t.Errorf("locality %d: TESSERA_JOB_ID is empty", loc)
		}
		if env["host"] != "127.0.0.1" {
			t.Errorf("locality %d: TESSERA_LISTEN_HOST=%q", loc, env["host"])
		}
		if want := os.Getenv("GOMAXPROCS"); want == "" {
			if want = strconv.Itoa(coresPerLocality(goruntime.NumCPU(), n)); env["gomaxprocs"] != want {
				t.Errorf("locality %d: GOMAXPROCS=%q, want its share of the cores, %s", loc, env["gomaxprocs"], want)
			}
		}
		if host, _, err := net.SplitHostPort(env["root"]); err != nil || host != "127.0.0.1" {
			t.Errorf("locality %d: TESSERA_ROOT_ADDR=%q", loc, env["root"])
		}
		wantFD := ""
		if loc == 0 {
			wantFD = "3"
		}
		if env["rootfd"] != wantFD {
			t.Errorf("locality %d: TESSERA_ROOT_FD=%q, want %q", loc, env["rootfd"], wantFD)
		}
		for _, k := range []string{"secret", "root", "job"} {
			if loc == 0 {
				first[k] = env[k]
			} else if env[k] != first[k] {
				t.Errorf("locality %d has %s %q, locality 0 has %q", loc, k, env[k], first[k])
			}
		}
	}
}

func TestRunRootListener(t *testing.T) {
	t.Parallel()
	const n = 3
	code, stdout, stderr := runHelperJob(t, helperJob(t, n, "listener"))
	if code != 0 {
		t.Fatalf("exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lines := byLocality(t, stdout)
	if got, want := strings.Join(lines[0], "|"), fmt.Sprintf("listener ok, accepted %d", n-1); got != want {
		t.Errorf("locality 0 printed %q, want %q", got, want)
	}
	for loc := 1; loc < n; loc++ {
		if got := strings.Join(lines[loc], "|"); got != "dial ok" {
			t.Errorf("locality %d printed %q, want %q", loc, got, "dial ok")
		}
	}
}

func TestRunFailureKillsSiblings(t *testing.T) {
	t.Parallel()
	opts := helperJob(t, 3, "fail", "1", "3")
	opts.Grace = 500 * time.Millisecond
	code, stdout, stderr := runHelperJob(t, opts)
	if code != 3 {
		t.Fatalf("exit status %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"locality 1 exited with status 3", "killing localities still running"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "locality 0 was killed by signal") {
		t.Errorf("a locality killed by the launcher was reported as a failure:\n%s", stderr)
	}
}

// TestRunKillsLeftovers checks that the launcher kills what a locality
// left behind in its process group: the job ends only once the output of
// every locality has been closed, and here a process that would sleep for
// ten minutes holds it.
func TestRunKillsLeftovers(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runHelperJob(t, helperJob(t, 2, "orphan"))
	if code != 0 {
		t.Fatalf("exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for loc, lines := range byLocality(t, stdout) {
		if got := strings.Join(lines, "|"); !strings.HasPrefix(got, "orphan ") {
			t.Errorf("locality %d printed %q, want it to start its orphan", loc, got)
		}
	}
}

func TestRunContextDone(t *testing.T) {
	t.Parallel()
	opts := helperJob(t, 1, "trap") // waits a minute for a signal
	out := newSyncBuffer("] ready\n", 1)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-out.ready
		cancel()
	}()
	code, err := runJob(ctx, opts, out, io.Discard)
	if code != 2 || !errors.Is(err, context.Canceled) {
		t.Errorf("runJob = %d, %v; want 2, %v", code, err, context.Canceled)
	}
}

// TestRunContextDoneOutputHeld checks that runJob returns when ctx is done
// even though a process the launcher cannot kill holds a locality's output.
func TestRunContextDoneOutputHeld(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := newSyncBuffer("] orphan ", 1)
	go func() {
		<-out.ready
		cancel()
	}()
	code, err := runJob(ctx, helperJob(t, 1, "escape"), out, io.Discard)
	var pid int
	for _, l := range byLocality(t, out.String())[0] {
		fmt.Sscanf(l, "orphan %d", &pid)
	}
	if pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if code != 2 || !errors.Is(err, context.Canceled) {
		t.Errorf("runJob = %d, %v; want 2, %v", code, err, context.Canceled)
	}
	if pid == 0 {
		t.Errorf("locality 0 did not start the process that holds its output:\n%s", out.String())
	}
}

func TestRunSignalDeath(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runHelperJob(t, helperJob(t, 2, "selfkill", "1"))
	if want := 128 + int(syscall.SIGKILL); code != want {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	const n = 3
	opts := helperJob(t, n, "trap")
	sigs := make(chan os.Signal, 1)
	opts.Signals = sigs
	out := newSyncBuffer("] ready\n", n)
	var errOut syncBuffer

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-out.ready:
			sigs <- syscall.SIGTERM
		case <-ctx.Done():
		}
	}()
	code, err := runJob(ctx, opts, out, &errOut)
	if err != nil {
		t.Fatalf("runJob: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	// The last locality does not catch SIGTERM and dies of it.
	if want := 128 + int(syscall.SIGTERM); code != want {
		t.Errorf("exit status %d, want %d", code, want)
	}
	lines := byLocality(t, out.String())
	for loc := range n - 1 {
		if got := strings.Join(lines[loc], "|"); got != "ready|got terminated" {
			t.Errorf("locality %d printed %q, want it to get SIGTERM", loc, got)
		}
	}
}

func TestRunOutput(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runHelperJob(t, helperJob(t, 2, "output"))
	if code != 0 {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", code, stderr)
	}
	for loc := range 2 {
		p := fmt.Sprintf("[L%d] ", loc)
		for _, want := range []string{p + "first\n" + p + "second\n", p + "no newline at the end\n"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
		if want := p + strings.Repeat("y", 200<<10) + "\n"; !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks locality %d's long line intact", loc)
		}
	}
	byLocality(t, stdout)
	byLocality(t, stderr)
}

func TestRunBadOptions(t *testing.T) {
	t.Parallel()
	good := helperJob(t, 2, "env")
	tests := []struct {
		name string
		edit func(*runOptions)
		want string
	}{
		{"no localities", func(o *runOptions) { o.N = 0 }, "at least 1"},
		{"negative localities", func(o *runOptions) { o.N = -3 }, "at least 1"},
		{"no program", func(o *runOptions) { o.Prog = "" }, "no program"},
		{"program not in PATH", func(o *runOptions) { o.Prog = "tessera-no-such-program" }, `"tessera-no-such-program"`},
		{"program path missing", func(o *runOptions) { o.Prog = "./tessera-no-such-program" }, `"./tessera-no-such-program"`},
		{"negative grace", func(o *runOptions) { o.Grace = -time.Second }, "--grace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := good
			tt.edit(&opts)
			var out, errOut bytes.Buffer
			code, err := runJob(t.Context(), opts, &out, &errOut)
			if err == nil || code != 2 {
				t.Fatalf("runJob = %d, %v; want 2 and an error", code, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if out.Len()+errOut.Len() > 0 {
				t.Errorf("a job that was not started wrote output: %q %q", out.String(), errOut.String())
			}
		})
	}
}

func TestDispatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{nil, 2, "", "usage: tessera"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"help"}, 0, "usage: tessera", ""},
		{[]string{"run", "-n", "0", "prog"}, 2, "", "at least 1"},
		{[]string{"run", "prog"}, 2, "", "at least 1"},
		{[]string{"run", "-n", "2"}, 2, "", "no program"},
		{[]string{"run", "-n", "two", "prog"}, 2, "", `invalid value "two" for flag -n`},
		{[]string{"run", "--bogus", "-n", "2", "prog"}, 2, "", "-bogus"},
		{[]string{"run", "-n", "2", "--grace", "soon", "prog"}, 2, "", `invalid value "soon" for flag -grace`},
		{[]string{"run", "-n", "2", "--", "tessera-no-such-program"}, 2, "", `"tessera-no-such-program"`},
		{[]string{"info", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"info"}, 0, "tessera     " + version, ""},
		{[]string{"info"}, 0, "parcelport  shm (default)", ""},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := dispatch(tt.args, &stdout, &stderr)
		if code != tt.code {
			t.Errorf("tessera %q exited %d, want %d; stderr:\n%s", tt.args, code, tt.code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tt.wantStdout) {
			t.Errorf("tessera %q: stdout %q lacks %q", tt.args, stdout.String(), tt.wantStdout)
		}
		if !strings.Contains(stderr.String(), tt.wantStderr) {
			t.Errorf("tessera %q: stderr %q lacks %q", tt.args, stderr.String(), tt.wantStderr)
		}
	}
}

func TestParseRunArgs(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	opts, err := parseRunArgs([]string{"-n", "4", "--grace", "1.5s", "--", "prog", "-n", "x"}, &stderr)
	if err != nil {
		t.Fatalf("parseRunArgs: %v\n%s", err, stderr.String())
	}
	if opts.N != 4 || opts.Grace != 1500*time.Millisecond || opts.Prog != "prog" ||
		strings.Join(opts.Args, " ") != "-n x" {
		t.Errorf("parsed %+v", opts)
	}
	opts, err = parseRunArgs([]string{"-n=2", "prog", "--grace", "1s"}, &stderr)
	if err != nil {
		t.Fatalf("parseRunArgs: %v", err)
	}
	if opts.Grace != 10*time.Second || strings.Join(opts.Args, " ") != "--grace 1s" {
		t.Errorf("flags after prog must go to prog: parsed %+v", opts)
	}
}

func TestCoresPerLocality(t *testing.T) {
	for _, c := range []struct{ cores, n, want int }{{2, 1, 2}, {2, 2, 1}, {2, 4, 1}, {16, 4, 4}, {16, 3, 5}, {1, 8, 1}} {
		if got := coresPerLocality(c.cores, c.n); got != c.want {
			t.Errorf("coresPerLocality(%d, %d) = %d, want %d", c.cores, c.n, got, c.want)
		}
	}
}
