package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRunTraceFlags(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	opts, err := parseRunArgs([]string{"-n", "2", "--trace", "tr", "--trace-format", "otf2,perfetto", "--profile", "csv", "prog"}, &stderr)
	if err != nil {
		t.Fatalf("parseRunArgs: %v\n%s", err, stderr.String())
	}
	env := optionsEnv(opts)
	if !filepath.IsAbs(env["TESSERA_TRACE"]) || filepath.Base(env["TESSERA_TRACE"]) != "tr" ||
		env["TESSERA_TRACE_FORMAT"] != "otf2,perfetto" || env["TESSERA_PROFILE"] != "csv" {
		t.Errorf("environment of the flags: %v", env)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "2", "--profile", "html", "prog"}, "--profile must be screen or csv"},
		{[]string{"-n", "2", "--trace", "d", "--trace-format", "otf2,chrome", "prog"}, `"chrome" is not otf2 or perfetto`},
		{[]string{"-n", "2", "--trace-format", "otf2", "prog"}, "--trace-format needs --trace DIR"},
	} {
		stderr.Reset()
		if _, err := parseRunArgs(c.args, &stderr); err == nil || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("tessera run %q: %v, stderr %q, want %q", c.args, err, stderr.String(), c.want)
		}
	}
}

// tessera run --trace --trace-format --profile: the localities trace, and
// locality 0 writes the merged archive, the Perfetto timeline and the
// profile as CSV into the trace directory.
func TestRunTraceFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tracejob")
	if out, err := exec.Command("go", "build", "-o", bin, "../../runtime/testdata/tracejob").CombinedOutput(); err != nil {
		t.Fatalf("building tracejob: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "trace")
	var stderr bytes.Buffer
	opts, err := parseRunArgs([]string{"-n", "3", "--trace", dir, "--trace-format", "otf2,perfetto", "--profile", "csv", bin, "run", "2", "3"}, &stderr)
	if err != nil {
		t.Fatalf("parseRunArgs: %v\n%s", err, stderr.String())
	}
	// Inherited values are replaced.
	opts.Env = append(os.Environ(), "TESSERA_TRACE=/nowhere", "TESSERA_PROFILE=screen")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	code, err := runJob(ctx, opts, &stdout, &stderr)
	if code != 0 || err != nil {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	for _, f := range []string{"tessera.otf2", "tessera.def", "profile.csv"} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "trace.json")); err != nil || !json.Valid(b) {
		t.Errorf("trace.json: %v", err)
	}
	if csv, _ := os.ReadFile(filepath.Join(dir, "profile.csv")); !strings.Contains(string(csv), "tracejob.node") {
		t.Errorf("profile.csv has no row of tracejob.node:\n%s", csv)
	}
}
