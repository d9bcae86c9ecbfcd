package jobtest

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

// Python returns a python3 that imports every module, or skips the test
// naming what is missing; under CI=true it fails it instead (the test
// dependencies, scripts/test-deps.sh, install Debian's python3-* modules).
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run() == nil {
			return py
		}
	}
	msg := "no python3 with " + strings.Join(modules, ", ") + " (Debian's python3-* packages; scripts/test-deps.sh installs them)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// BuildWithLauncher compiles the launcher (cmd/tessera) and the program in
// the test's own directory, named name, into a temporary directory, and
// returns their paths.
func BuildWithLauncher(t testing.TB, name string) (tessera, prog string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/tessera-amt/tessera/cmd/tessera", ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "tessera"), filepath.Join(dir, name)
}

// Launch runs `tessera run -n n prog args...` and returns its output; a
// job still running after 2 minutes is killed.
func Launch(t testing.TB, tessera, prog string, n int, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tessera, append([]string{"run", "-n", fmt.Sprint(n), prog}, args...)...).CombinedOutput()
	return string(out), err
}
