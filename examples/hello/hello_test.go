package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// starts. Where that is impossible it skips with the reason, except under
// CI=true, where it fails.
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
	defer exec.Command("bash", script, "stop", state).Run()

	secret := filepath.Join(state, "secret")
	cmd := exec.CommandContext(ctx, "srun", "-n", "4", "--overcommit", "--time=5", hello)
	cmd.Env = append(os.Environ(), "TESSERA_SECRET_FILE="+secret)
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
	cmd.Env = append(os.Environ(), "TESSERA_SECRET_FILE="+secret)
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
