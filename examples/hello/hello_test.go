package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// build compiles the launcher and this program into a temporary directory.
func build(t *testing.T) (tessera, hello string) {
	dir := goBuild(t, "github.com/tessera-amt/tessera/cmd/tessera", ".")
	return filepath.Join(dir, "tessera"), filepath.Join(dir, "hello")
}

// goBuild compiles packages into a temporary directory and returns it.
func goBuild(t *testing.T, packages ...string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", append([]string{"build", "-o", dir + "/"}, packages...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// checkGreetings checks that each of n localities printed its line and heard
// from all n.
func checkGreetings(t *testing.T, out string, n int, prefixed bool) {
	t.Helper()
	for i := range n {
		want := fmt.Sprintf("locality %d of %d heard %d replies:", i, n, n)
		if prefixed {
			want = fmt.Sprintf("[L%d] ", i) + want
		}
		if !strings.Contains(out, want) {
			t.Errorf("no line %q in output:\n%s", want, out)
		}
	}
	for i := range n {
		if c := strings.Count(out, fmt.Sprintf(" L%d@", i)); c != n {
			t.Errorf("locality %d's greeting appears %d times, want %d:\n%s", i, c, n, out)
		}
	}
}

// TestHelloHelp: -help is a request, not an error: exit 0 and the usage.
func TestHelloHelp(t *testing.T) {
	_, hello := build(t)
	out, err := exec.Command(hello, "-help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "usage: tessera run -n N hello") {
		t.Errorf("hello -help: %v, output:\n%s\nwant exit 0 and the usage", err, out)
	}
}

func TestHelloUnderTesseraRun(t *testing.T) {
	tessera, hello := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, tessera, "run", "-n", "4", hello).CombinedOutput()
	if err != nil {
		t.Fatalf("tessera run: %v\n%s", err, out)
	}
	checkGreetings(t, string(out), 4, true)
}

// TestHelloUnderSlurm runs the program with a real slurm: srun -n 4 on a
// one-node cluster that scripts/slurm-local.sh installs (as root) and
// starts in a private directory. Where that is impossible it skips with
// the reason, except under CI=true, where it fails. The machine's own
// slurm is left as it was: its configuration file is unchanged (or still
// absent) and every slurm and munge daemon that ran before still runs.
func TestHelloUnderSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the slurm test starts daemons")
	}
	skip := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so the slurm test must run: %s", msg)
		}
		t.Skipf("SKIPPING the real-slurm test: %s", msg)
	}
	if os.Geteuid() != 0 {
		skip("not root, so scripts/slurm-local.sh cannot install and start slurm")
	}
	_, hello := build(t)
	before := machineSlurm(t)
	defer func() {
		if after := machineSlurm(t); after != before {
			t.Errorf("the machine's slurm changed:\nbefore: %s\nafter:  %s", before, after)
		}
	}()
	state := t.TempDir()
	script, _ := filepath.Abs("../../scripts/slurm-local.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "bash", script, "start", state).CombinedOutput(); err != nil {
		skipOrFail := t.Fatalf
		if strings.Contains(string(out), "apt-get") && os.Getenv("CI") != "true" {
			skipOrFail = t.Skipf
		}
		skipOrFail("starting slurm: %v\n%s", err, out)
	}
	defer func() {
		if out, err := exec.Command("bash", script, "stop", state).CombinedOutput(); err != nil {
			t.Errorf("stopping the test's slurm: %v\n%s", err, out)
		}
	}()
	if _, err := os.Stat(filepath.Join(state, "slurm.conf")); err != nil {
		t.Fatalf("slurm-local.sh start wrote no slurm.conf in its state directory: %v", err)
	}

	secret := filepath.Join(state, "secret")
	env := append(os.Environ(), "SLURM_CONF="+filepath.Join(state, "slurm.conf"), "TESSERA_SECRET_FILE="+secret)
	cmd := exec.CommandContext(ctx, "srun", "-n", "4", "--overcommit", "--time=5", hello)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("srun -n 4 hello: %v\n%s", err, out)
	}
	t.Logf("srun -n 4 --overcommit hello:\n%s", out)
	checkGreetings(t, string(out), 4, false)
	fi, err := os.Stat(secret)
	if err != nil {
		t.Fatalf("the job secret file was not created: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %v, want 0600", fi.Mode().Perm())
	}

	// The ALS example under srun writes the same factors as under
	// tessera run with the same seed.
	bin := goBuild(t, "github.com/tessera-amt/tessera/cmd/tessera", "github.com/tessera-amt/tessera/examples/als")
	tessera, als := filepath.Join(bin, "tessera"), filepath.Join(bin, "als")
	alsArgs := []string{"--synthetic", "400,300,0.05", "--factors", "8", "--iterations", "3", "--seed", "11"}
	dir := t.TempDir()
	cmd = exec.CommandContext(ctx, "srun", append([]string{"-n", "4", "--overcommit", "--time=5", als}, append(alsArgs, "--output", dir+"/srun")...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("srun -n 4 als: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, tessera, append([]string{"run", "-n", "4", als}, append(alsArgs, "--output", dir+"/run")...)...).CombinedOutput(); err != nil {
		t.Fatalf("tessera run -n 4 als: %v\n%s", err, out)
	}
	for _, f := range []string{"X.csv", "Y.csv"} {
		a, errA := os.ReadFile(filepath.Join(dir, "srun", f))
		b, errB := os.ReadFile(filepath.Join(dir, "run", f))
		if errA != nil || errB != nil {
			t.Fatalf("reading the factors: %v, %v", errA, errB)
		}
		if string(a) != string(b) {
			t.Errorf("%s under srun differs from %s under tessera run", f, f)
		}
	}
}

// machineSlurm describes the machine's own slurm as a test must leave it:
// the checksum of /etc/slurm/slurm.conf (or its absence) and the slurm and
// munge daemons running now, by pid.
func machineSlurm(t *testing.T) string {
	t.Helper()
	conf := "/etc/slurm/slurm.conf: absent"
	if b, err := os.ReadFile("/etc/slurm/slurm.conf"); err == nil {
		conf = fmt.Sprintf("/etc/slurm/slurm.conf: sha256 %x", sha256.Sum256(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		conf = "/etc/slurm/slurm.conf: " + err.Error()
	}
	var daemons []string
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ...
		s := string(b)
		open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || shut < open || len(s) < shut+3 {
			continue
		}
		comm, state := s[open+1:shut], s[shut+2]
		switch comm {
		case "slurmctld", "slurmd", "munged":
			if state != 'Z' {
				daemons = append(daemons, strings.TrimSpace(s[:open])+" "+comm)
			}
		}
	}
	sort.Strings(daemons)
	return conf + "; daemons: [" + strings.Join(daemons, ", ") + "]"
}
